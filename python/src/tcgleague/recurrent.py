"""Recurrent state kept per env row, reset by row index when a game ends.

The predecessor system passed row ids where a boolean mask was expected and crashed with a
shape mismatch (seed 001); here the only entry point takes indices, checks their type, drops
out-of-range ids and duplicates, and zeroes exactly those rows."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def zero_rows(states: Sequence[torch.Tensor], rows) -> torch.Tensor:
    """Zeroes rows `rows` (int indices) of every state tensor in place; returns the int64 ids used."""
    ids = torch.as_tensor(np.asarray(rows))
    if ids.dtype == torch.bool:
        raise TypeError("zero_rows takes row indices, not a boolean mask (use np.flatnonzero(mask))")
    if ids.is_floating_point():
        raise TypeError(f"zero_rows takes integer row indices, got {ids.dtype}")
    ids = ids.reshape(-1).to(torch.int64)
    num_rows = states[0].shape[0]
    ids = torch.unique(ids[(ids >= 0) & (ids < num_rows)])
    for state in states:
        state.index_fill_(0, ids.to(state.device), 0.0)
    return ids
