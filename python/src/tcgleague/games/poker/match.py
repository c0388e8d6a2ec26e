"""The poker games' part of a match and their bots: what the league's evaluation matches play on
Leduc or Kuhn (game.py hands them to the league as the game's `match.Runner`).

The duplicate format of the one runner (match.play_duplicate): a deal is the cards (each seat's
private card and the public card), played twice, as dealt and with the private cards exchanged,
the learner keeping its seat, so card luck cancels; the learner's seat alternates from deal to
deal. A game is a win, a loss or a split by the sign of the learner's chips, its reward the chips.

Bots: `random` (uniform over the legal actions, its own stream) and `call` (always checks or
calls: the baseline a league's candidate must beat, a passive player that never folds)."""

from __future__ import annotations

import numpy as np

from ...stepped_env import NO_NOOP, RandomLegalBot, ScriptedBots, scored_outcome
from .rows import PokerPufferEnv
from .rules import ACTION_WIDTH, CALL, NUM_ACTIONS, rules_named

RANDOM, ALWAYS_CALL = RandomLegalBot.name, "call"
POKER_BOTS = (RANDOM, ALWAYS_CALL)  # what training meets, and the league's baseline is the caller


class CallBot:
    """Actor: always checks or calls (legal in every decision)."""

    name = ALWAYS_CALL

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.full((len(rows), ACTION_WIDTH), CALL, dtype=np.int32)

    def reset_rows(self, rows: np.ndarray) -> None:
        """Stateless."""


POKER = ScriptedBots(
    "poker", {RANDOM: lambda seed: RandomLegalBot(NUM_ACTIONS, seed), ALWAYS_CALL: lambda seed: CallBot()}
)
poker_bot, poker_bot_side, poker_training_bots = POKER.make, POKER.side, POKER.training


def deals(n: int, seed: int, game: str) -> np.ndarray:
    """`n` deals of `game` from `seed`: [n, cards dealt] distinct cards each."""
    rules = rules_named(game)
    order = np.random.default_rng([seed, 0x9D]).random((n, rules.deck_size)).argsort(axis=1)
    return order[:, : rules.cards_dealt].astype(np.int16)


class PokerTable:
    """A poker game's part of a match (match.Table; the runner is match.play_duplicate): a deal
    is the cards, exchanged between the seats for its second game; a game's result is the sign of
    the learner's chips, its reward the chips."""

    noop_action_type = NO_NOOP

    def __init__(self, game: str):
        self.game = game

    def make_env(self, num_games: int, seed: int) -> PokerPufferEnv:
        return PokerPufferEnv(self.game, num_games=num_games, seed=seed)

    def deals(self, env: PokerPufferEnv, n: int, seed: int) -> np.ndarray:
        return deals(n, seed, self.game)

    def deal(self, env: PokerPufferEnv, slot: int, deal: np.ndarray, swapped: bool) -> None:
        cards = deal.copy()
        if swapped:
            cards[[0, 1]] = cards[[1, 0]]
        env.set_deal(np.array([slot]), cards[None])

    def outcome(self, env: PokerPufferEnv, seat: int, info: dict) -> dict:
        return scored_outcome(seat, info)

    def filler(self, seed: int) -> CallBot:
        return CallBot()
