"""Liar's Dice for the exact judge (openspiel_judge.py, OpenSpiel's best responses). A seat's row
is OpenSpiel's information-state tensor followed by the legal mask (rules.py; the env writes
exactly that, test_liars_dice.py checks it over 10,000 games), so the rows a seat saw along a
state's history are read off OpenSpiel's own states: no replay in our env is needed, and the
24,576 information states' rows take about a second. Our action ids are OpenSpiel's."""

from __future__ import annotations

import numpy as np
import pyspiel

from ...openspiel_judge import JudgedGame
from .rules import LEGAL_OFFSET, NAME, NUM_ACTIONS, OBS_WIDTH, OPENSPIEL_NAME


def decision_row(state: pyspiel.State, seat: int) -> np.ndarray:
    """The row of `seat` at `state`: its information-state tensor, then the legal mask (all zero
    when it is not to act)."""
    row = np.zeros(OBS_WIDTH, dtype=np.int8)
    row[:LEGAL_OFFSET] = state.information_state_tensor(seat)
    if state.current_player() == seat:
        row[LEGAL_OFFSET + np.array(state.legal_actions(), dtype=np.int64)] = 1
    return row


def decision_rows(state: pyspiel.State) -> np.ndarray:
    """The rows `state`'s player saw at each of its decisions along `state`'s history, this one last."""
    seat, replay, rows = state.current_player(), state.get_game().new_initial_state(), []
    for action in state.history() + [None]:
        if replay.current_player() == seat:
            rows.append(decision_row(replay, seat))
        if action is not None:
            replay.apply_action(action)
    return np.stack(rows)


JUDGED = JudgedGame(
    name=NAME,
    openspiel_name=OPENSPIEL_NAME,
    num_actions=NUM_ACTIONS,
    legal_offset=LEGAL_OFFSET,
    obs_width=OBS_WIDTH,
    decision_rows=decision_rows,
)
