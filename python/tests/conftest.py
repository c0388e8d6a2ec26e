"""Shared fixtures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

# Not tests: modules the tests import (and a script test_dist.py launches).
collect_ignore = ["helpers"]

# The shared smoke run: one epoch (512 steps), no evaluation, a checkpoint every epoch.
SMOKE_RUN_ARGS = [
    "--config",
    "configs/smoke.ini",
    "--train.eval-interval",
    "0",
    "--train.checkpoint-interval",
    "1",
    "--train.total-timesteps",
    "512",
]


@pytest.fixture(scope="module")
def one_torch_thread():
    """The test models are tiny: one thread is as fast, and immune to a busy second core.
    Modules opt in with `pytestmark = pytest.mark.usefixtures("one_torch_thread")`."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _digests(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def smoke_checkpoint(tmp_path_factory) -> Path:
    """The epoch-1 checkpoint of a one-epoch smoke run (SMOKE_RUN_ARGS), trained once per session:
    weights, optimizer, scheduler, RNG and run state (every game's engine state).

    Shared by every module that uses it: tests only read it. A test that damages or converts a
    checkpoint works on a copy in its own tmp_path (checked when the session ends)."""
    from tcgleague import train as train_cli

    base = tmp_path_factory.mktemp("smoke")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert train_cli.main([*SMOKE_RUN_ARGS, "--base.experiments-dir", str(base)]) == 0
    finally:
        torch.set_num_threads(before)
    (run_dir,) = (p for p in base.iterdir() if p.is_dir())
    path = run_dir / "model_smoke_000001.pt"
    assert path.is_file(), sorted(p.name for p in run_dir.iterdir())
    digests = _digests(run_dir)
    yield path
    assert _digests(run_dir) == digests, f"a test changed the shared smoke run {run_dir}: work on a copy"
