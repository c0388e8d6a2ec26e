"""A small table game in words for a person (`TableWords`): what a game like poker or Liar's
Dice hands the framework's terminal session (play_table.py) and replay recorder
(replay/table.py), so those two are written once for every game whose rows show one seat's
whole view. The game says what a row means; the framework does the asking, drawing and counting."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


def always(row: np.ndarray, action: int) -> bool:
    return True


@dataclass(frozen=True)
class TableWords:
    noun: str
    """what one game is called ("hand" in poker)"""
    num_actions: int
    """the legal mask's width: a row's last `num_actions` entries"""
    situation: Callable[[np.ndarray], str]
    """a row -> what its seat knows, a line per fact (its private holding, the public state)"""
    action: Callable[[np.ndarray, int], str]
    """(a row, an action legal in it) -> the action's name where it is taken"""
    holdings: Callable[[np.ndarray, bool], list[str]]
    """(a deal as the table schedules it, exchanged for its second game?) -> each seat's holding"""
    held: Callable[[Any], list[str]]
    """a one-game env of the game -> each seat's holding in the game now being played"""
    shows_holdings: Callable[[np.ndarray, int], bool] = always
    """(the last decider's row, the action that ended the game) -> whether the holdings are shown
    (poker: not after a fold)"""
    points: str | None = None
    """what a game's reward counts ("chips"); None: a win or a loss"""

    def legal(self, row: np.ndarray) -> list[int]:
        """The actions legal in `row`, ascending."""
        return [int(a) for a in np.flatnonzero(row[-self.num_actions :])]
