"""Liar's Dice's part of a match and its bots (what game.py will hand the league as the game's
`match.Runner`).

The duplicate format of the one runner (match.play_duplicate): a deal is the two dice, played
twice, as rolled and with the dice exchanged, the learner keeping its seat, so dice luck cancels.
A game is a win or a loss, its reward +1 or -1.

Bots: `random` (uniform over the legal actions, its own stream) and `honest` (the baseline):
it calls "liar" when the last bid is more likely false than true given its own die, and
otherwise makes the lowest legal bid its own die alone makes true; with none left, it calls."""

from __future__ import annotations

import numpy as np

from ...stepped_env import NO_NOOP, RandomLegalBot, ScriptedBots, scored_outcome
from .rows import LiarsDicePufferEnv
from .rules import BIDS, DIE_OFFSET, FACES, HISTORY_OFFSET, LIAR, NUM_ACTIONS, SEATS, face, quantity

RANDOM, HONEST = RandomLegalBot.name, "honest"
BOTS = (RANDOM, HONEST)


def stand_probability(die: np.ndarray, bid: np.ndarray) -> np.ndarray:
    """P(the bid stands | the decider's own die), the other die unseen: the decider's own match
    counts for sure; the other die matches a face with 2/6 (it or a wild six), a six with 1/6."""
    f = face(bid)
    own = (die == f) | (die == FACES)
    other = np.where(f == FACES, 1 / FACES, 2 / FACES)
    missing = quantity(bid) - own
    return np.where(missing <= 0, 1.0, np.where(missing == 1, other, 0.0))


class HonestBot:
    """Actor: calls an implausible bid (P(stands) < 1/2 by its own die), else makes the lowest
    legal bid its own die makes true, else calls."""

    name = HONEST

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        row = obs[rows]
        die = row[:, DIE_OFFSET : DIE_OFFSET + FACES].argmax(1) + 1
        legal = row[:, -NUM_ACTIONS:] > 0
        history = row[:, HISTORY_OFFSET : HISTORY_OFFSET + BIDS] > 0
        last = np.where(history.any(1), BIDS - 1 - history[:, ::-1].argmax(1), 0)
        doubt = legal[:, LIAR] & (stand_probability(die, last) < 0.5)
        bids = np.arange(BIDS)
        sure = legal[:, :BIDS] & (stand_probability(die[:, None], bids[None]) >= 1.0)
        action = np.where(sure.any(1), sure.argmax(1), np.where(legal[:, LIAR], LIAR, legal.argmax(1)))
        return np.where(doubt, LIAR, action).astype(np.int32)[:, None]

    def reset_rows(self, rows: np.ndarray) -> None:
        """Stateless."""


LIARS_DICE = ScriptedBots(
    "Liar's Dice", {RANDOM: lambda seed: RandomLegalBot(NUM_ACTIONS, seed), HONEST: lambda seed: HonestBot()}
)
bot, bot_side, training_bots = LIARS_DICE.make, LIARS_DICE.side, LIARS_DICE.training


class LiarsDiceTable:
    """Liar's Dice's part of a match (match.Table; the runner is match.play_duplicate): a deal is
    the two dice, exchanged between the seats for its second game."""

    noop_action_type = NO_NOOP

    def make_env(self, num_games: int, seed: int) -> LiarsDicePufferEnv:
        return LiarsDicePufferEnv(num_games=num_games, seed=seed)

    def deals(self, env: LiarsDicePufferEnv, n: int, seed: int) -> np.ndarray:
        return np.random.default_rng([seed, 0x1D]).integers(1, FACES + 1, size=(n, SEATS), dtype=np.int16)

    def deal(self, env: LiarsDicePufferEnv, slot: int, deal: np.ndarray, swapped: bool) -> None:
        env.set_deal(np.array([slot]), (deal[::-1] if swapped else deal)[None])

    def outcome(self, env: LiarsDicePufferEnv, seat: int, info: dict) -> dict:
        return scored_outcome(seat, info)

    def filler(self, seed: int) -> HonestBot:
        return HonestBot()
