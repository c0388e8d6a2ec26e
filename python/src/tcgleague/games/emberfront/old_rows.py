"""Observation layouts Emberfront's checkpoints were written with before today's whose rows hold
the same features, stored differently: a policy trained on them computes the same function on
today's rows (layout.features), so `python -m tcgleague.checkpoint convert` restamps such a
checkpoint and re-encodes its env buffers' rows (`Game.convertible_layouts`)."""

from __future__ import annotations

import numpy as np
import torch

from .layout import ACTION_WIDTH, COUNT, MAX_LEGAL, OBS_SIZE, compact_np

FLOAT32_ROWS = "dd9646b79d19dc81cb782bb4ba5d749eb2ba0e26c38a8a0e7e56c4b2f39f3b54"


def compact_float32_rows(rows: torch.Tensor) -> torch.Tensor:
    """Observation rows of the float32 layout (the legal count after the tuples) as compact rows,
    exactly: a resumed run's env buffers then hold what today's engine would have written
    (ValueError: they are not such rows)."""
    if rows.dtype != torch.float32 or rows.ndim != 2 or rows.shape[1] != OBS_SIZE:
        return rows  # already compact (or not observations at all: the field checks say so)
    f, tuples = rows.numpy(), MAX_LEGAL * ACTION_WIDTH
    count = COUNT + tuples  # where the float32 layout kept the legal count: after the tuples
    features = np.concatenate([f[:, :COUNT], f[:, count : count + 1], f[:, COUNT:count], f[:, count + 1 :]], 1)
    return torch.from_numpy(compact_np(features))


CONVERTIBLE_LAYOUTS = {
    FLOAT32_ROWS: (
        "float32 observation rows, the legal count after the tuples (before compact int16/int8 rows)",
        compact_float32_rows,
    ),
}
