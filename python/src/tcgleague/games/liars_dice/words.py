"""Liar's Dice in words, for a person (`play`, replays: the framework's table_words.py): a row's
die and the bids so far, a bid's name ("bid 2-5: two fives"), the call ("call liar")."""

from __future__ import annotations

import numpy as np

from ...table_words import TableWords
from .rules import BIDS, DIE_OFFSET, FACES, HISTORY_OFFSET, LIAR, NUM_ACTIONS, SEATS, bid_text, face, quantity

COUNTS = ("one", "two")
FACE_NAMES = ("one", "two", "three", "four", "five", "six")
FACE_PLURALS = ("ones", "twos", "threes", "fours", "fives", "sixes")


def bid_words(bid: int) -> str:
    """ "2-5: two fives"."""
    names = FACE_NAMES if quantity(bid) == 1 else FACE_PLURALS
    return f"{bid_text(bid)}: {COUNTS[quantity(bid) - 1]} {names[face(bid) - 1]}"


def bids_made(row: np.ndarray) -> list[int]:
    """The bids so far, in the order made (they only go up; seat 0 made the first)."""
    return [int(b) for b in np.flatnonzero(row[HISTORY_OFFSET : HISTORY_OFFSET + BIDS])]


def game_text(row: np.ndarray) -> str:
    """What the seat of `row` knows: its die and the bids so far."""
    seat = int(np.argmax(row[:SEATS]))
    die = int(np.argmax(row[DIE_OFFSET : DIE_OFFSET + FACES])) + 1
    bids = bids_made(row)
    said = ", ".join(f"seat {i % SEATS} {bid_text(b)}" for i, b in enumerate(bids)) or "none yet"
    lines = [f"you are seat {seat}; your die: {die} (sixes are wild)", f"bids: {said}"]
    if bids:
        lines.append(f"the bid to beat: {bid_words(bids[-1])}")
    return "\n".join(lines)


def action_words(row: np.ndarray, action: int) -> str:
    return "call liar" if action == LIAR else f"bid {bid_words(action)}"


def holdings(dice: np.ndarray, swapped: bool) -> list[str]:
    """Each seat's die in a deal (the two dice, exchanged for its second game)."""
    return [f"die {int(d)}" for d in (dice[::-1] if swapped else dice)]


LIARS_DICE_WORDS = TableWords(
    noun="game",
    num_actions=NUM_ACTIONS,
    situation=game_text,
    action=action_words,
    holdings=holdings,
    held=lambda env: holdings(env.stepper.dice[0], False),
)
