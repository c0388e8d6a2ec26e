"""Comparing two saved states value by value (tests of exact resume)."""

from __future__ import annotations

from pathlib import Path

import torch


def assert_same(a, b, where: str = "checkpoint", volatile: tuple[str, ...] = ()) -> None:
    """`a` and `b` are bit-identical: tensors equal in dtype and value, containers key by key.
    Dict keys starting with one of `volatile` (timings) are skipped, and `*.path` /
    `*.state_file` strings compare by file name only (the run directory differs)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        keys = {k for k in set(a) | set(b) if not (volatile and str(k).startswith(volatile))}
        assert keys <= set(a) and keys <= set(b), f"{where}: keys {sorted(keys ^ (set(a) & set(b)))}"
        for k in keys:
            assert_same(a[k], b[k], f"{where}.{k}", volatile)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]", volatile)
    elif where.endswith((".path", ".state_file")) and isinstance(a, str) and isinstance(b, str):
        assert Path(a).name == Path(b).name, where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"
