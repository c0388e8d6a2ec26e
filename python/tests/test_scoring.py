"""Scoring (scoring.py): the Wilson score interval against known values and an independent
formula, and a Tally's games, win rate (a draw is half a win) and interval."""

from __future__ import annotations

import pytest

from helpers.wilson import wilson_by_hand
from tcgleague.scoring import Tally, wilson_interval


def test_wilson_interval_known_values():
    # 8 of 10: the textbook 95 % Wilson interval (Newcombe 1998) is [0.4902, 0.9433]
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # draws count half: 3 wins, 2 draws, 5 losses score 4 of 10
    t = Tally(wins=3, losses=5, draws=2)
    assert t.games == 10 and t.winrate == pytest.approx(0.4)
    assert t.wilson() == pytest.approx(wilson_by_hand(4, 10), abs=1e-12)
    assert Tally(draws=7).winrate == 0.5
