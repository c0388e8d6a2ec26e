"""Leduc and Kuhn hands in words, for a person (`play`, replays: the framework's table_words.py):
a row's cards, its betting so far and the pot, and an action's name where it is taken (a call
with nothing to call is a check, a raise with nothing to raise a bet)."""

from __future__ import annotations

import numpy as np

from ...table_words import TableWords
from .openspiel import row_bets, row_cards
from .rules import CALL, FOLD, NUM_ACTIONS, RAISE, SEATS, PokerRules

RANKS = "JQK"  # rank r of the deck: card // num_suits (OpenSpiel's numbering)
SUITS = "sh"  # Leduc's two copies of each rank, as spades and hearts


def card_name(rules: PokerRules, card: int) -> str:
    rank = RANKS[card // rules.num_suits]
    return rank if rules.num_suits == 1 else rank + SUITS[card % rules.num_suits]


def action_word(rules: PokerRules, row: np.ndarray, action: int) -> str:
    """`action` as taken in `row` (its legal mask says whether a bet is open: fold is legal)."""
    facing_bet = bool(row[rules.legal_offset + FOLD])
    return {FOLD: "fold", CALL: "call" if facing_bet else "check", RAISE: "raise" if facing_bet else "bet"}[action]


def betting(rules: PokerRules, row: np.ndarray) -> tuple[list[list[str]], list[int]]:
    """The bets so far as words per round (seat 0 opens each round), and each seat's chips in
    the pot. A raise bit past the round's last raise is Kuhn's call of a bet (call_records_bet)."""
    contributed, stakes, words = [rules.ante] * SEATS, rules.ante, []
    for size, bets in zip(rules.raise_sizes, row_bets(rules, row)):
        said, raises, seat = [], 0, 0
        for raise_bit in bets:
            raises_now = raise_bit and raises < rules.max_raises
            word = ("raise" if stakes > contributed[seat] else "bet") if raises_now else "call"
            if not raises_now and stakes == contributed[seat]:
                word = "check"
            stakes += size * raises_now
            raises += raises_now
            contributed[seat] = stakes
            said.append(f"seat {seat} {word}")
            seat = 1 - seat
        words.append(said)
    return words, contributed


def hand_text(rules: PokerRules, row: np.ndarray) -> str:
    """What the seat of `row` knows: its card, the board card, the betting and the pot."""
    seat, private, public = row_cards(rules, row)
    rounds, contributed = betting(rules, row)
    lines = [f"you are seat {seat}; your card: {card_name(rules, private)}"]
    if rules.num_rounds > 1:
        lines.append(f"board card: {card_name(rules, public) if public is not None else 'not turned yet'}")
    for n, said in enumerate(rounds[: 1 + (public is not None)], 1):
        lines.append(f"round {n}: {', '.join(said) if said else 'no bets yet'}")
    lines.append(
        f"pot: {sum(contributed)} chips (you put in {contributed[seat]}, the other seat {contributed[1 - seat]})"
    )
    return "\n".join(lines)


def poker_words(rules: PokerRules) -> TableWords:
    """The poker game `rules` in words: a hand, its cards, its chips; a fold shows no cards."""

    def holdings(deal: np.ndarray, swapped: bool) -> list[str]:
        cards = deal[[1, 0]] if swapped else deal[:SEATS]
        return [card_name(rules, int(card)) for card in cards]

    return TableWords(
        noun="hand",
        num_actions=NUM_ACTIONS,
        situation=lambda row: hand_text(rules, row),
        action=lambda row, action: action_word(rules, row, action),
        holdings=holdings,
        held=lambda env: holdings(env.stepper.cards[0], False),
        shows_holdings=lambda row, action: action != FOLD,
        points="chips",
    )
