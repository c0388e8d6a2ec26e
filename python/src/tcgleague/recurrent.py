"""The LSTM recurrence and the per-row recurrent state, shared by training, rollout, evaluation
and the frozen league members.

`lstm_cell` is the one recurrence: nn.LSTMCell's documented math written out, because vmap (the
stacked frozen members' forward) has no batching rule for aten::lstm_cell. On the CPU it is
bit-identical to nn.LSTMCell, forward and backward (tested).

State is kept per env row and reset by row index when the row's game ends. A boolean mask where
ids are expected is a classic shape bug (a mask of 2048 rows silently indexes rows 0 and 1), so
the only reset entry point takes indices and refuses a mask."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def lstm_cell(
    cell: nn.LSTMCell, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step with `cell`'s weights: gates (i, f, g, o) -> (h', c')."""
    gates = F.linear(x, cell.weight_ih, cell.bias_ih) + F.linear(h, cell.weight_hh, cell.bias_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def zero_rows(states: Sequence[torch.Tensor], rows) -> torch.Tensor:
    """Zeroes rows `rows` (int indices) of every state tensor in place; returns the int64 ids
    used (out-of-range ids and duplicates dropped)."""
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


class RowState:
    """(h, c) per env row, [num_rows, hidden] each: what a recurrent actor carries between the
    decisions of a row.

    With `sink` the storage has one more row (`h_all`, `c_all`; `h` and `c` are views of the
    first num_rows): a fixed-shape batch writes its padding there, so a scatter needs no mask
    (whose shape would depend on the data, a host sync)."""

    def __init__(self, num_rows: int, hidden_size: int, device: torch.device, sink: bool = False):
        self.h_all = torch.zeros(num_rows + int(sink), hidden_size, device=device)
        self.c_all = torch.zeros_like(self.h_all)
        self.h, self.c = self.h_all[:num_rows], self.c_all[:num_rows]
        self.sink = num_rows if sink else None  # the padding's row in h_all / c_all

    def reset_rows(self, rows) -> None:
        zero_rows((self.h, self.c), rows)

    def reset_all(self) -> None:
        self.h.zero_()
        self.c.zero_()

    def state_dict(self) -> dict:
        return {"h": self.h.detach().cpu().clone(), "c": self.c.detach().cpu().clone()}

    def load_state_dict(self, state: dict) -> None:
        self.h.copy_(state["h"])
        self.c.copy_(state["c"])
