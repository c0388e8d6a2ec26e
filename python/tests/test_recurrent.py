"""The recurrence (recurrent.py): lstm_cell is nn.LSTMCell bit for bit, forward and backward, and
zero_rows resets rows by index."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from tcgleague.recurrent import lstm_cell, zero_rows

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_lstm_cell_is_bit_identical_to_nn_lstmcell_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    cell = nn.LSTMCell(12, 20)
    with torch.no_grad():
        for p in cell.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    x, h, c = (torch.randn(9, n, generator=g, requires_grad=True) for n in (12, 20, 20))
    wh, wc = torch.randn(9, 20, generator=g), torch.randn(9, 20, generator=g)
    inputs = [x, h, c, *cell.parameters()]
    results = []
    for fn in (lambda: cell(x, (h, c)), lambda: lstm_cell(cell, x, h, c)):
        h2, c2 = fn()
        grads = torch.autograd.grad((h2 * wh).sum() + (c2 * wc).sum(), inputs)
        results.append((h2.detach(), c2.detach(), grads))
    (h_ref, c_ref, g_ref), (h_got, c_got, g_got) = results
    assert torch.equal(h_got, h_ref) and torch.equal(c_got, c_ref)
    assert len(g_got) == len(g_ref) == 7
    for name, a, b in zip(("x", "h", "c", "weight_ih", "weight_hh", "bias_ih", "bias_hh"), g_got, g_ref):
        assert torch.equal(a, b), name
        assert a.abs().sum() > 0, name


def test_zero_rows_uses_row_indices_and_ignores_invalid_and_duplicates():
    h, c = torch.ones(6, 3), torch.ones(6, 3)
    used = zero_rows((h, c), np.array([4, 1, 1, -1, 6, 99, 4]))
    assert used.tolist() == [1, 4] and used.dtype == torch.int64
    assert h[:, 0].tolist() == [1, 0, 1, 1, 0, 1] and torch.equal(h, c)
    # a boolean mask where ids are expected is a classic shape bug: it is refused, not misread as ids
    with pytest.raises(TypeError, match="row indices"):
        zero_rows((h, c), np.array([True, False]))
    assert zero_rows((h, c), np.array([], dtype=np.int64)).numel() == 0
