"""Our poker rows and actions in OpenSpiel's words, and back: the information-state string of a
row, and the action ids of `leduc_poker` / `kuhn_poker`. The information-state tensor needs no
translation: it is the row's first `rules.info_width` entries (rules.py).

Nothing here imports OpenSpiel: the exact tool (tcgleague.exact) and the rules test use these
to hand OpenSpiel our states, and OpenSpiel is an optional dependency."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .rules import BITS_PER_BET, CALL, FOLD, KUHN, LEDUC, NUM_ACTIONS, RAISE, SEATS, PokerRules

LEDUC_STARTING_MONEY = 100  # OpenSpiel's kStartingMoney: the "[Money: ...]" of Leduc's string


def row_bets(rules: PokerRules, row: np.ndarray) -> list[list[bool]]:
    """The bets recorded in a row's history, per round, each as its raise bit."""
    history = row[rules.history_offset : rules.info_width].reshape(rules.num_rounds, rules.bets_per_round, BITS_PER_BET)
    return [[bool(bits[1]) for bits in round_ if bits.any()] for round_ in history]


def row_cards(rules: PokerRules, row: np.ndarray) -> tuple[int, int, int | None]:
    """(observing seat, its private card, the public card or None) of a row."""
    seat = int(np.argmax(row[:SEATS]))
    private = int(np.argmax(row[rules.private_offset : rules.public_offset]))
    public = row[rules.public_offset : rules.history_offset]
    return seat, private, (int(np.argmax(public)) if public.any() else None)


def leduc_string(row: np.ndarray) -> str:
    """OpenSpiel's `information_state_string` of a Leduc row: the bets replayed for the pot,
    each seat's money and whose turn it is (seat 0 opens each round)."""
    seat, private, public = row_cards(LEDUC, row)
    rounds = 1 + (public is not None)
    bets_by_round = row_bets(LEDUC, row)
    stakes, contrib = LEDUC.ante, [LEDUC.ante] * SEATS
    for size, bets in zip(LEDUC.raise_sizes[:rounds], bets_by_round[:rounds]):
        player = 0
        for raise_bit in bets:
            stakes += size * raise_bit
            contrib[player] = stakes
            player = 1 - player
    sequences = [" ".join(str(RAISE if raise_bit else CALL) for raise_bit in bets) for bets in bets_by_round]
    money = " ".join(str(LEDUC_STARTING_MONEY - c) for c in contrib)
    return (
        f"[Observer: {seat}][Private: {private}][Round {1 + (public is not None)}][Player: {player}]"
        f"[Pot: {sum(contrib)}][Money: {money}]"
        + (f"[Public: {public}]" if public is not None else "")
        + f"[Round1: {sequences[0]}][Round2: {sequences[1]}]"
    )


def kuhn_string(row: np.ndarray) -> str:
    """OpenSpiel's Kuhn `information_state_string`: the private card, then "p" (pass) or "b" (bet) per bet."""
    _, private, _ = row_cards(KUHN, row)
    return str(private) + "".join("b" if raise_bit else "p" for raise_bit in row_bets(KUHN, row)[0])


INFO_STATE_STRINGS: dict[str, Callable[[np.ndarray], str]] = {"leduc": leduc_string, "kuhn": kuhn_string}


def info_state_string(rules: PokerRules, row: np.ndarray) -> str:
    """OpenSpiel's information-state string of the seat and state a row shows."""
    return INFO_STATE_STRINGS[rules.name](row)


def openspiel_action(rules: PokerRules, legal: np.ndarray, action: int) -> int:
    """OpenSpiel's id of our `action` in a row with legal mask `legal`. Leduc's ids are ours
    (kFold, kCall, kRaise); Kuhn's are pass (0) and bet (1), so a call is a bet exactly when
    there is a bet to call (when fold is legal)."""
    if not rules.call_records_bet:
        return int(action)
    return int(action == RAISE or (action == CALL and bool(legal[FOLD])))


def our_action(rules: PokerRules, legal: np.ndarray, action: int) -> int:
    """Our action for OpenSpiel's `action` in a row with legal mask `legal` (openspiel_action's inverse)."""
    mine = [a for a in range(NUM_ACTIONS) if legal[a] and openspiel_action(rules, legal, a) == action]
    if not mine:
        raise ValueError(f"OpenSpiel action {action} is not legal in {rules.openspiel_name} here (mask {list(legal)})")
    return mine[0]


def openspiel_legal(rules: PokerRules, legal: np.ndarray) -> list[int]:
    """OpenSpiel's legal action ids, ascending, of a row with legal mask `legal`."""
    return sorted(openspiel_action(rules, legal, a) for a in range(NUM_ACTIONS) if legal[a])
