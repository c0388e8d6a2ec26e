"""`PokerEnv`: many games of Leduc or Kuhn poker (rules.py) stepped at once in numpy.

Every game always has exactly one seat to act (the deal and the public card are drawn by the
env, never decided), so one `step` is one decision in every game: the step takes an action for
each row, reads those of the acting rows, and a game that ends is dealt again on the same step
(its rows' rewards and terminal flags say it ended; `Episodes` records how). Everything lives in
flat per-game arrays and the rows are updated in place, a few bits per step, which is what
keeps a large batch above a million decisions a second on one core.

Deals come from the env's own numpy Generator, drawn in game order, so a seed fixes every deal
of a run and `state_dict` / `load_state_dict` continue one exactly."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ...rows import rows_of, seat_row
from ...stepped_env import legal_checked
from .rules import CALL, FOLD, NUM_ACTIONS, RAISE, SEATS, PokerRules


@dataclass(frozen=True)
class Episodes:
    """The games that ended on one step: who won and what each seat got."""

    games: np.ndarray
    """the ended games' indices, ascending"""
    winners: np.ndarray
    """the winning seat of each, -1 for a split pot"""
    returns: np.ndarray
    """[games, seat] chips won (+) or lost (-), OpenSpiel's returns"""


@dataclass
class Betting:
    """Every game's betting state, one entry per game (the cards are `PokerEnv.cards`)."""

    round: np.ndarray  # 0-based betting round
    actor: np.ndarray  # the seat to act
    slot: np.ndarray  # bets made so far this round (the next history slot)
    raises: np.ndarray  # raises this round
    calls: np.ndarray  # calls (checks included) since the round's last raise
    stakes: np.ndarray  # what each seat must have put in to stay
    contrib: np.ndarray  # [game, seat] chips put in, ante included

    @classmethod
    def empty(cls, num_games: int) -> Betting:
        per_game = {
            name: np.zeros(num_games, np.int16) for name in ("round", "actor", "slot", "raises", "calls", "stakes")
        }
        return cls(**per_game, contrib=np.zeros((num_games, SEATS), np.int16))


class PokerEnv:
    """`num_games` games of one poker game, two rows per game (rows.py: row 2g + s is seat s of game g).

    `obs` ([rows, rules.obs_width] int8) is the env's own buffer, updated in place by `reset`,
    `step` and `set_deal`: copy it to keep one step's view. Nothing is dealt before `reset`."""

    def __init__(self, rules: PokerRules, num_games: int, seed: int = 0, obs: np.ndarray | None = None):
        """`obs`: the row buffer to write ([rows, obs_width] int8, e.g. a PufferLib buffer's view)."""
        if num_games < 1:
            raise ValueError(f"num_games {num_games}: a PokerEnv needs at least one game")
        self.rules = rules
        self.num_games = num_games
        self.num_rows = rows_of(num_games)
        self.obs = np.zeros((self.num_rows, rules.obs_width), dtype=np.int8) if obs is None else obs
        if self.obs.shape != (self.num_rows, rules.obs_width) or self.obs.dtype != np.int8:
            raise ValueError(
                f"obs must be int8 [{self.num_rows}, {rules.obs_width}], got {self.obs.dtype} {self.obs.shape}"
            )
        self.cards = np.zeros((num_games, rules.cards_dealt), dtype=np.int16)
        self.betting = Betting.empty(num_games)
        self.rng = np.random.default_rng(seed)
        self._games = np.arange(num_games)
        self._raise_sizes = np.asarray(rules.raise_sizes, dtype=np.int16)
        self._no_truncations = np.zeros(self.num_rows, dtype=bool)

    # -- the interface -------------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Deals every game afresh (reseeding the deals first when `seed` is given)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._deal(self._games)
        return self.obs

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Episodes]:
        """Applies each game's acting row's action (the other rows' entries are ignored) and
        returns (obs, rewards, terminals, truncations, episodes): rewards and terminal flags on
        both rows of every game that ended, whose rows already show its next deal."""
        b, rules, games = self.betting, self.rules, self._games
        actions = np.asarray(actions)
        if actions.shape != (self.num_rows,):
            raise ValueError(f"step takes one action per row: shape ({self.num_rows},), got {actions.shape}")
        acting = seat_row(games, b.actor)
        action = self.checked(actions[acting], acting)
        fold, call, raise_ = action == FOLD, action == CALL, action == RAISE
        facing = b.stakes > b.contrib[games, b.actor]
        b.stakes += raise_ * self._raise_sizes[b.round]
        b.contrib[games, b.actor] = np.where(fold, b.contrib[games, b.actor], b.stakes)
        b.calls = np.where(raise_, 0, b.calls + call).astype(np.int16)
        b.raises += raise_
        self._record_bets(games[~fold], (raise_ | (call & facing & rules.call_records_bet))[~fold])
        b.slot += 1
        # OpenSpiel's ReadyForNextRound: both seats checked, or the round's last raise was called
        round_over = call & (b.calls == np.where(b.raises > 0, 1, SEATS))
        last_round = b.round == rules.num_rounds - 1
        ended = fold | (round_over & last_round)
        self._next_round(np.flatnonzero(round_over & ~last_round))
        b.actor = np.where(round_over, 0, 1 - b.actor).astype(np.int16)
        episodes = self._settle(np.flatnonzero(ended), fold)
        rewards = np.zeros(self.num_rows, dtype=np.float32)
        terminals = np.zeros(self.num_rows, dtype=bool)
        for seat in range(SEATS):
            rewards[seat_row(episodes.games, seat)] = episodes.returns[:, seat]
            terminals[seat_row(episodes.games, seat)] = True
        self._deal(episodes.games)
        self._write_legal(games)
        return self.obs, rewards, terminals, self._no_truncations, episodes

    def set_deal(self, games: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """Restarts `games` with the given cards ([games, rules.cards_dealt]: seat 0's, seat
        1's, then the public card): the deal of a replayed or compared game."""
        games = np.atleast_1d(np.asarray(games))
        cards = np.asarray(cards, dtype=np.int16).reshape(len(games), self.rules.cards_dealt)
        if ((cards < 0) | (cards >= self.rules.deck_size)).any() or any(len(set(c)) < len(c) for c in cards.tolist()):
            raise ValueError(
                f"{self.rules.name} deals distinct cards in [0, {self.rules.deck_size}): got {cards.tolist()}"
            )
        self.cards[games] = cards
        self._start(games)
        return self.obs

    def acting_rows(self) -> np.ndarray:
        """The row to act in each game."""
        return seat_row(self._games, self.betting.actor)

    def checked(self, action: np.ndarray, acting: np.ndarray) -> np.ndarray:
        """The acting rows' actions, refused unless every one is legal in its row."""
        return legal_checked(self.obs, action, acting, NUM_ACTIONS)

    def state_dict(self) -> dict:
        """Everything a resume needs: cards, betting, rows and the deal stream's state."""
        return copy.deepcopy(
            {
                "game": self.rules.name,
                "obs": self.obs,
                "cards": self.cards,
                "betting": vars(self.betting),
                "rng": self.rng.bit_generator.state,
            }
        )

    def load_state_dict(self, state: dict) -> None:
        if state["game"] != self.rules.name or state["cards"].shape != self.cards.shape:
            raise ValueError(
                f"a {state['game']} state of {len(state['cards'])} games cannot be loaded into "
                f"{self.rules.name} of {self.num_games}"
            )
        state = copy.deepcopy(state)
        self.obs[:] = state["obs"]
        self.cards[:] = state["cards"]
        self.betting = Betting(**state["betting"])
        self.rng.bit_generator.state = state["rng"]

    # -- the rules, vectorized -------------------------------------------------------------------

    def _deal(self, games: np.ndarray) -> None:
        """Fresh cards for `games` (a uniform draw without replacement, in game order)."""
        order = self.rng.random((len(games), self.rules.deck_size)).argsort(axis=1)
        self.cards[games] = order[:, : self.rules.cards_dealt]
        self._start(games)

    def _start(self, games: np.ndarray) -> None:
        """`games` at their first decision: antes in, seat 0 to act, rows showing the private cards."""
        b = self.betting
        for field in (b.round, b.actor, b.slot, b.raises, b.calls):
            field[games] = 0
        b.stakes[games] = self.rules.ante
        b.contrib[games] = self.rules.ante
        for seat in range(SEATS):
            rows = seat_row(games, seat)
            self.obs[rows] = 0
            self.obs[rows, seat] = 1
            self.obs[rows, self.rules.private_offset + self.cards[games, seat]] = 1
        self._write_legal(games)

    def _record_bets(self, games: np.ndarray, raise_bit: np.ndarray) -> None:
        """The bet just made into both rows' history (a fold is never recorded: it ends the game)."""
        b = self.betting
        column = self.rules.history_column(b.round[games], b.slot[games], raise_bit.astype(np.int16))
        for seat in range(SEATS):
            self.obs[seat_row(games, seat), column] = 1

    def _next_round(self, games: np.ndarray) -> None:
        """`games` into their next betting round, with the public card turned in both rows."""
        if not len(games):
            return  # (Kuhn has no public card column to index)
        b = self.betting
        b.round[games] += 1
        b.slot[games] = b.raises[games] = b.calls[games] = 0
        for seat in range(SEATS):
            self.obs[seat_row(games, seat), self.rules.public_offset + self.cards[games, SEATS]] = 1

    def _settle(self, games: np.ndarray, fold: np.ndarray) -> Episodes:
        """Winners and returns of the `games` that ended: a fold gives the pot to the other
        seat; a showdown to the stronger hand, split on a tie. The winner gains what the loser
        put in, the loser loses it."""
        b, cards = self.betting, self.cards[games]
        public = cards[:, SEATS] if self.rules.num_rounds > 1 else None
        lead = np.sign(self.rules.strength(cards[:, 0], public) - self.rules.strength(cards[:, 1], public))
        stayed = b.actor[games]  # after a fold `step` has passed the turn to the seat that stayed in
        winners = np.where(fold[games], stayed, np.where(lead > 0, 0, np.where(lead < 0, 1, -1)))
        contrib = b.contrib[games].astype(np.float32)
        gain = np.stack([contrib[:, 1], contrib[:, 0]], axis=1)
        seats = np.arange(SEATS)
        returns = np.where(winners[:, None] == seats, gain, np.where(winners[:, None] == -1, 0.0, -contrib))
        return Episodes(games=games, winners=winners.astype(np.int8), returns=returns.astype(np.float32))

    def _write_legal(self, games: np.ndarray) -> None:
        """The legal mask of `games`' acting rows (fold only facing a bet, raise while raises
        remain), and none on the rows waiting."""
        b, legal = self.betting, self.rules.legal_offset
        acting = seat_row(games, b.actor[games])
        self.obs[rows_of(games), legal:] = 0
        self.obs[acting, legal + FOLD] = b.stakes[games] > b.contrib[games, b.actor[games]]
        self.obs[acting, legal + CALL] = 1
        self.obs[acting, legal + RAISE] = b.raises[games] < self.rules.max_raises
