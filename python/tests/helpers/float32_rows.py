"""Observation rows as the engine wrote them before compact rows: float32 features with the legal
count after the tuples (the golden digest's form, and what a converted checkpoint held)."""

from __future__ import annotations

import numpy as np

from tcgleague.games.emberfront.layout import COUNT, EFFECTS, LEGAL, features_np


def float32_rows(compact: np.ndarray) -> np.ndarray:
    """Compact rows -> the float32 rows of the layout before them."""
    f = features_np(compact)
    return np.concatenate([f[:, :COUNT], f[:, LEGAL], f[:, COUNT : COUNT + 1], f[:, EFFECTS]], -1)
