"""The rules of two-player limit poker as Leduc and Kuhn share them, and the observation row
they are seen through: the one home of both games' constants.

Both games are OpenSpiel's (`leduc_poker`, `kuhn_poker`), to the chip: each seat antes 1 and is
dealt one private card; the betting rounds allow `max_raises` raises of a fixed size per round,
seat 0 opens every round, a check-check or a call of a raise ends the round; Leduc turns one
public card between its two rounds. A fold ends the game, the other seat taking the pot; at a
showdown a private card paired with the public card wins, then the higher rank, and equal ranks
split the pot. Returns are chips won or lost, OpenSpiel's `returns()`.

Kuhn is the one-round case (three cards, one suit, one raise of 1), with one twist in how its
history is written: OpenSpiel's Kuhn records "pass" and "bet", so a call of a bet is written as
a bet (`call_records_bet`), where Leduc writes it as a call.

The observation row of a seat is OpenSpiel's `information_state_tensor` for that seat, bit for
bit (observer one-hot, private card one-hot, public card one-hot, then the betting history as
[round, slot, (call, raise)] bits), followed by the legal-action mask over fold / call / raise,
all zero on the row that is not to act. The information state is therefore in the row itself,
and a policy over rows needs no other input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FOLD, CALL, RAISE = 0, 1, 2
ACTION_NAMES = ("fold", "call", "raise")  # a call with nothing to call is a check, a raise with nothing to raise a bet
NUM_ACTIONS = len(ACTION_NAMES)  # the legal mask's width in every row
ACTION_WIDTH = 1  # integers in one action: the index of fold, call or raise
SEATS = 2  # rows per game: row 2g + s is seat s of game g (the layout of Emberfront's env too)
BITS_PER_BET = 2  # a history slot: (call, raise), OpenSpiel's encoding


@dataclass(frozen=True)
class PokerRules:
    """One poker game's constants; `LEDUC` and `KUHN` are the two there are."""

    name: str
    """our name for the game (`--game`)"""
    openspiel_name: str
    """the same game in OpenSpiel (`pyspiel.load_game`)"""
    num_ranks: int
    """card ranks (J, Q, K); a card's rank is card // num_suits, OpenSpiel's numbering"""
    num_suits: int
    """copies of each rank in the deck"""
    raise_sizes: tuple[int, ...]
    """the chips a raise adds, per betting round (one entry per round)"""
    max_raises: int
    """raises allowed in one betting round"""
    call_records_bet: bool
    """the history writes a call of a bet in the raise bit (Kuhn's "b") rather than the call bit"""
    ante: int = 1
    """chips each seat puts in before the deal"""

    @property
    def num_rounds(self) -> int:
        return len(self.raise_sizes)

    @property
    def deck_size(self) -> int:
        return self.num_ranks * self.num_suits

    @property
    def cards_dealt(self) -> int:
        """Cards drawn per game: a private card per seat, and the public card when there is a second round."""
        return SEATS + (self.num_rounds > 1)

    @property
    def bets_per_round(self) -> int:
        """History slots per round: an opening check, every raise, and the closing call."""
        return self.max_raises + 2

    # The row's layout, in OpenSpiel's information_state_tensor order.
    @property
    def private_offset(self) -> int:
        return SEATS

    @property
    def public_offset(self) -> int:
        return self.private_offset + self.deck_size

    @property
    def history_offset(self) -> int:
        return self.public_offset + (self.deck_size if self.num_rounds > 1 else 0)

    @property
    def info_width(self) -> int:
        """Width of the information-state part of a row (OpenSpiel's tensor size)."""
        return self.history_offset + self.num_rounds * self.bets_per_round * BITS_PER_BET

    @property
    def legal_offset(self) -> int:
        return self.info_width

    @property
    def obs_width(self) -> int:
        return self.info_width + NUM_ACTIONS

    def history_column(self, round_: np.ndarray, slot: np.ndarray, raise_bit: np.ndarray) -> np.ndarray:
        """The row column of a bet's bit: its round, its slot within the round, call (0) or raise (1)."""
        return self.history_offset + (round_ * self.bets_per_round + slot) * BITS_PER_BET + raise_bit

    def strength(self, private: np.ndarray, public: np.ndarray | None) -> np.ndarray:
        """Showdown strength of private cards (with the public card, if the game has one): a
        pair beats every rank, then the higher rank wins. OpenSpiel ranks Leduc's unpaired
        hands by (high rank, low rank), which, with the public card shared, orders them as the
        private ranks do."""
        rank = private // self.num_suits
        if public is None:
            return rank
        return rank + self.num_ranks * (rank == public // self.num_suits)


LEDUC = PokerRules(
    name="leduc",
    openspiel_name="leduc_poker",
    num_ranks=3,
    num_suits=2,
    raise_sizes=(2, 4),
    max_raises=2,
    call_records_bet=False,
)
KUHN = PokerRules(
    name="kuhn",
    openspiel_name="kuhn_poker",
    num_ranks=3,
    num_suits=1,
    raise_sizes=(1,),
    max_raises=1,
    call_records_bet=True,
)
GAMES = {rules.name: rules for rules in (LEDUC, KUHN)}


def rules_named(name: str) -> PokerRules:
    """The rules of `name`; a ValueError naming the games there are otherwise."""
    if name not in GAMES:
        raise ValueError(f"unknown poker game {name!r}; valid: {', '.join(sorted(GAMES))}")
    return GAMES[name]
