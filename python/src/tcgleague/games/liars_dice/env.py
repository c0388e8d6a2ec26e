"""`LiarsDiceEnv`: many games of Liar's Dice (rules.py) stepped at once in numpy.

Every game always has exactly one seat to act (the dice are rolled by the env, never decided),
so one `step` is one decision in every game: the step takes an action for each row, reads those
of the acting rows, and a game that ends is rolled again on the same step (its rows' rewards
and terminal flags say it ended; `Episodes` records how). Rows are updated in place, a bit or
two per step.

Rolls come from the env's own numpy Generator, drawn in game order, so a seed fixes every roll
of a run and `state_dict` / `load_state_dict` continue one exactly."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ...rows import rows_of, seat_row
from ...stepped_env import legal_checked
from .rules import (
    BIDS,
    DIE_OFFSET,
    FACES,
    HISTORY_OFFSET,
    LEGAL_OFFSET,
    LIAR,
    NAME,
    NUM_ACTIONS,
    OBS_WIDTH,
    SEATS,
    face,
    matching,
    quantity,
)


@dataclass(frozen=True)
class Episodes:
    """The games that ended on one step: who won and what each seat got."""

    games: np.ndarray
    """the ended games' indices, ascending"""
    winners: np.ndarray
    """the winning seat of each"""
    returns: np.ndarray
    """[games, seat] +1 for the winner, -1 for the loser, OpenSpiel's returns"""


class LiarsDiceEnv:
    """`num_games` games, two rows per game (rows.py: row 2g + s is seat s of game g).

    `obs` ([rows, OBS_WIDTH] int8) is the env's own buffer, updated in place by `reset`, `step`
    and `set_deal`: copy it to keep one step's view. Nothing is rolled before `reset`."""

    def __init__(self, num_games: int, seed: int = 0, obs: np.ndarray | None = None):
        """`obs`: the row buffer to write ([rows, OBS_WIDTH] int8, e.g. a PufferLib buffer's view)."""
        if num_games < 1:
            raise ValueError(f"num_games {num_games}: a LiarsDiceEnv needs at least one game")
        self.num_games = num_games
        self.num_rows = rows_of(num_games)
        self.obs = np.zeros((self.num_rows, OBS_WIDTH), dtype=np.int8) if obs is None else obs
        if self.obs.shape != (self.num_rows, OBS_WIDTH) or self.obs.dtype != np.int8:
            raise ValueError(f"obs must be int8 [{self.num_rows}, {OBS_WIDTH}], got {self.obs.dtype} {self.obs.shape}")
        self.dice = np.zeros((num_games, SEATS), dtype=np.int16)  # faces 1..FACES
        self.bid = np.full(num_games, -1, dtype=np.int16)  # the last bid's rank, -1: none yet
        self.actor = np.zeros(num_games, dtype=np.int16)
        self.rng = np.random.default_rng(seed)
        self._games = np.arange(num_games)
        self._no_truncations = np.zeros(self.num_rows, dtype=bool)

    # -- the interface -------------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Rolls every game afresh (reseeding the rolls first when `seed` is given)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._roll(self._games)
        return self.obs

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Episodes]:
        """Applies each game's acting row's action (the other rows' entries are ignored) and
        returns (obs, rewards, terminals, truncations, episodes): rewards and terminal flags on
        both rows of every game that ended, whose rows already show its next roll."""
        games = self._games
        actions = np.asarray(actions)
        if actions.shape != (self.num_rows,):
            raise ValueError(f"step takes one action per row: shape ({self.num_rows},), got {actions.shape}")
        acting = seat_row(games, self.actor)
        action = self.checked(actions[acting], acting)
        called = action == LIAR
        bidding = np.flatnonzero(~called)
        for seat in range(SEATS):
            self.obs[seat_row(bidding, seat), HISTORY_OFFSET + action[bidding]] = 1
        self.bid[bidding] = action[bidding]
        episodes = self._settle(np.flatnonzero(called))
        self.actor[bidding] = 1 - self.actor[bidding]
        rewards = np.zeros(self.num_rows, dtype=np.float32)
        terminals = np.zeros(self.num_rows, dtype=bool)
        for seat in range(SEATS):
            rewards[seat_row(episodes.games, seat)] = episodes.returns[:, seat]
            terminals[seat_row(episodes.games, seat)] = True
        self._roll(episodes.games)
        self._write_legal(bidding)
        return self.obs, rewards, terminals, self._no_truncations, episodes

    def set_deal(self, games: np.ndarray, dice: np.ndarray) -> np.ndarray:
        """Restarts `games` with the given dice ([games, SEATS], faces 1-6): the roll of a
        replayed or compared game."""
        games = np.atleast_1d(np.asarray(games))
        dice = np.asarray(dice, dtype=np.int16).reshape(len(games), SEATS)
        if ((dice < 1) | (dice > FACES)).any():
            raise ValueError(f"{NAME} dice show faces 1-{FACES}: got {dice.tolist()}")
        self.dice[games] = dice
        self._start(games)
        return self.obs

    def acting_rows(self) -> np.ndarray:
        """The row to act in each game."""
        return seat_row(self._games, self.actor)

    def checked(self, action: np.ndarray, acting: np.ndarray) -> np.ndarray:
        """The acting rows' actions, refused unless every one is legal in its row."""
        return legal_checked(self.obs, action, acting, NUM_ACTIONS)

    def state_dict(self) -> dict:
        """Everything a resume needs: dice, bids, rows and the roll stream's state."""
        state = {"game": NAME, "obs": self.obs, "dice": self.dice, "bid": self.bid, "actor": self.actor}
        return copy.deepcopy({**state, "rng": self.rng.bit_generator.state})

    def load_state_dict(self, state: dict) -> None:
        if state["game"] != NAME or state["dice"].shape != self.dice.shape:
            raise ValueError(
                f"a {state['game']} state of {len(state['dice'])} games cannot be loaded into {NAME} of {self.num_games}"
            )
        state = copy.deepcopy(state)
        self.obs[:], self.dice[:], self.bid[:], self.actor[:] = (
            state["obs"],
            state["dice"],
            state["bid"],
            state["actor"],
        )
        self.rng.bit_generator.state = state["rng"]

    # -- the rules, vectorized -------------------------------------------------------------------

    def _roll(self, games: np.ndarray) -> None:
        """Fresh dice for `games` (seat 0's, then seat 1's, in game order)."""
        self.dice[games] = self.rng.integers(1, FACES + 1, size=(len(games), SEATS), dtype=np.int16)
        self._start(games)

    def _start(self, games: np.ndarray) -> None:
        """`games` at their first decision: no bid yet, seat 0 to act, rows showing each die."""
        self.bid[games] = -1
        self.actor[games] = 0
        for seat in range(SEATS):
            rows = seat_row(games, seat)
            self.obs[rows] = 0
            self.obs[rows, seat] = 1
            self.obs[rows, DIE_OFFSET + self.dice[games, seat] - 1] = 1
        self._write_legal(games)

    def _settle(self, games: np.ndarray) -> Episodes:
        """The called `games`: the bid stands (its bidder, the seat that did not call, wins) when
        enough dice match its face, sixes wild; otherwise the caller wins."""
        bid, caller = self.bid[games], self.actor[games]
        stands = matching(self.dice[games], face(bid)) >= quantity(bid)
        winners = np.where(stands, 1 - caller, caller).astype(np.int8)
        returns = np.where(winners[:, None] == np.arange(SEATS), 1.0, -1.0).astype(np.float32)
        return Episodes(games=games, winners=winners, returns=returns)

    def _write_legal(self, games: np.ndarray) -> None:
        """The legal mask of `games`' acting rows (every bid above the last; the call once a bid
        is made), and none on the rows waiting."""
        acting = seat_row(games, self.actor[games])
        self.obs[rows_of(games), LEGAL_OFFSET:] = 0
        above = np.arange(BIDS) > self.bid[games, None]
        self.obs[acting, LEGAL_OFFSET : LEGAL_OFFSET + BIDS] = above
        self.obs[acting, LEGAL_OFFSET + LIAR] = self.bid[games] >= 0
