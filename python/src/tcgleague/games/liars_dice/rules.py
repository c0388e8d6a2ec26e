"""The rules of two-player Liar's Dice as OpenSpiel's `liars_dice` plays them by default, and the
observation row a seat sees them through: the one home of the game's constants.

Each seat rolls one die with six faces, seen only by itself. Seat 0 bids first; a bid names a
quantity (1 or 2) and a face (1-6), ranked quantity-major (`bid = 6 * (quantity - 1) + face -
1`: "1-1" is 0, "2-6" is 11), and every bid must rank above the last. Instead of bidding a seat
may call "liar" on the last bid (not before one is made). Then the dice are shown: the bid
stands when at least `quantity` dice show its face, sixes counting as any face (wild), and its
bidder wins; otherwise the caller wins. The winner gets +1, the loser -1 (OpenSpiel's returns).

The observation row of a seat is OpenSpiel's `information_state_tensor` for that seat, bit for
bit (observer one-hot, its die's face one-hot, one bit per bid or call made so far), followed
by the legal-action mask over the 12 bids and the call, all zero on the row that is not to act.
The information state is therefore in the row itself."""

from __future__ import annotations

import numpy as np

NAME = "liars_dice"
OPENSPIEL_NAME = "liars_dice"
SEATS = 2  # rows per game: row 2g + s is seat s of game g
FACES = 6  # faces of a die; the highest is wild
DICE = SEATS  # one die each
BIDS = DICE * FACES  # quantity 1..2 x face 1..6
LIAR = BIDS  # the action that calls the last bid: OpenSpiel's id too
NUM_ACTIONS = BIDS + 1  # the legal mask's width in every row
ACTION_WIDTH = 1  # integers in one action: the bid's rank, or LIAR
INFO_WIDTH = SEATS + FACES + NUM_ACTIONS  # OpenSpiel's information-state tensor
DIE_OFFSET = SEATS  # the seat's die face one-hot
HISTORY_OFFSET = SEATS + FACES  # one bit per action taken so far (bids and the call)
LEGAL_OFFSET = INFO_WIDTH  # the legal mask
OBS_WIDTH = INFO_WIDTH + NUM_ACTIONS


def quantity(bid: np.ndarray | int):
    """How many dice a bid says show its face (1 or 2)."""
    return bid // FACES + 1


def face(bid: np.ndarray | int):
    """The face a bid names (1-6)."""
    return bid % FACES + 1


def bid_text(action: int) -> str:
    """OpenSpiel's words for an action: "2-5" (two fives) or "Liar"."""
    return "Liar" if action == LIAR else f"{quantity(action)}-{face(action)}"


def matching(dice: np.ndarray, bid_face: np.ndarray) -> np.ndarray:
    """How many of each game's dice ([games, DICE], faces 1-6) show `bid_face`, sixes wild."""
    return ((dice == bid_face[:, None]) | (dice == FACES)).sum(axis=1)
