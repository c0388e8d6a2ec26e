"""The Wilson score interval, written out independently of scoring.py (the reference the tests
check scoring.wilson_interval and the evaluation reports against)."""

from __future__ import annotations

import math


def wilson_by_hand(score: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval, written out independently of scoring.py."""
    p = score / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
