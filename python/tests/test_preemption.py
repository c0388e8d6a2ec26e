"""Preemption (preemption.py): SIGTERM / SIGUSR1 finish the epoch in progress, write its
checkpoint and exit PREEMPTED_EXIT; `--resume-checkpoint latest --resume-load-optimizer` then
ends with the very weights of an uninterrupted run. A second signal stops at once, leaving no
half-written file and no temp file; the handlers are the run's only; under torchrun a stop
requested on any rank stops every rank at the same epoch."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import train as train_cli
from tcgleague.atomic import TEMP_MARK
from tcgleague.checkpoint import files as checkpoint_files
from tcgleague.checkpoint import list_checkpoints, load_checkpoint
from tcgleague.dist import reduce_epoch, weights_digest
from tcgleague.errors import PREEMPTED_EXIT
from tcgleague.trainer import Trainer

# 4 epochs of 512 decisions; a checkpoint every 2 epochs and an evaluation every 2 (smoke.ini)
SMOKE = ["--config", "configs/smoke.ini", "--base.torch-threads", "1"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def signal_during_update(monkeypatch, epoch: int, signals: list[int]) -> None:
    """Sends `signals` to this process while the update of `epoch` runs (mid-epoch)."""
    update = Trainer.update

    def update_then_signal(self, params):
        if self.epoch + 1 == epoch:
            for sig in signals:
                os.kill(os.getpid(), sig)
        return update(self, params)

    monkeypatch.setattr(Trainer, "update", update_then_signal)


def final_state(base: Path) -> dict:
    (path,) = [p for p in base.rglob("model_smoke_000004.pt")]
    return torch.load(path, weights_only=True)


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("straight")
    assert train_cli.main([*SMOKE, "--base.experiments-dir", str(base)]) == 0
    return final_state(base)


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, pytest.param(signal.SIGUSR1, marks=pytest.mark.slow)], ids=["SIGTERM", "SIGUSR1"]
)  # SIGUSR1 (slow) takes SIGTERM's path
def test_a_signal_mid_run_checkpoints_that_epoch_and_the_resume_ends_as_the_uninterrupted_run(
    straight, tmp_path, monkeypatch, capfd, sig
):
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    signal_during_update(monkeypatch, epoch=3, signals=[sig])
    assert train_cli.main([*SMOKE, "--base.experiments-dir", str(tmp_path)]) == PREEMPTED_EXIT
    err = capfd.readouterr().err
    assert f"{signal.Signals(sig).name}: stopping after this epoch" in err
    assert "stopped at epoch 3" in err and "model_smoke_000003.pt" in err and "Traceback" not in err
    assert {s: signal.getsignal(s) for s in before} == before, "the run's handlers are gone after it"
    (run_dir,) = tmp_path.iterdir()
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == ["model_smoke_000002.pt", "model_smoke_000003.pt"]
    stopped = load_checkpoint(run_dir / "model_smoke_000003.pt", run_state=True, log=lambda m: None).state
    assert stopped["epoch"] == 3 and "eval/winrate_vs_random" not in stopped["metrics"], "no evaluation at the stop"
    monkeypatch.undo()
    resume = ["--resume-checkpoint", "latest", "--resume-load-optimizer"]
    assert train_cli.main([*SMOKE, "--base.experiments-dir", str(tmp_path), *resume]) == 0
    resumed = final_state(tmp_path)
    assert weights_digest(resumed["policy"]) == weights_digest(straight["policy"])
    for key in ("policy", "optimizer", "scheduler", "rng", "run_state"):
        assert_same(resumed[key], straight[key], key)
    assert not list(tmp_path.rglob(f".*{TEMP_MARK}*"))


def test_a_second_signal_stops_at_once_inside_a_write_and_leaves_nothing_half_written(tmp_path, monkeypatch, capfd):
    """The second SIGTERM lands while the epoch-3 checkpoint is being written: exit 143 at once,
    the temp file removed, the epoch-2 checkpoint the newest, the handlers restored."""
    before = signal.getsignal(signal.SIGTERM)
    signal_during_update(monkeypatch, epoch=3, signals=[signal.SIGTERM])
    save = torch.save

    def save_then_signal(state, f):
        if state.get("epoch") == 3:
            f.write(b"x" * 1000)
            os.kill(os.getpid(), signal.SIGTERM)
        save(state, f)

    monkeypatch.setattr(checkpoint_files.torch, "save", save_then_signal)
    with pytest.raises(SystemExit) as stopped:
        train_cli.main([*SMOKE, "--base.experiments-dir", str(tmp_path)])
    assert stopped.value.code == 128 + signal.SIGTERM
    assert "SIGTERM again: stopping now, without a checkpoint" in capfd.readouterr().err
    assert signal.getsignal(signal.SIGTERM) == before
    (run_dir,) = tmp_path.iterdir()
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == ["model_smoke_000002.pt"]
    assert not list(tmp_path.rglob(f".*{TEMP_MARK}*")), "the interrupted write removed its temp file"
    load_checkpoint(run_dir / "model_smoke_000002.pt", run_state=True, log=lambda m: None)


def test_a_stop_requested_on_one_rank_stops_every_rank_at_that_epoch():
    """reduce_epoch's flags are raised on every rank when any rank raised them (the all_gather
    every epoch already makes): rank 0 unsignalled, rank 1 signalled -> both stop."""
    metrics = {"perf/sps": 1.0, "perf/epoch_seconds": 1.0}
    ranks = [(metrics, "d", (False, False)), (metrics, "d", (False, True))]
    two_ranks = SimpleNamespace(enabled=True, world_size=2, all_gather=lambda mine: ranks)
    _, flags = reduce_epoch(two_ranks, metrics, "d", (False, False), 512, 3)
    assert flags == (False, True)
    single = SimpleNamespace(enabled=False, all_gather=lambda mine: [mine])
    assert reduce_epoch(single, metrics, None, (True, False), 512, 3)[1] == (True, False)


@pytest.mark.slow  # a 9-epoch league run straight and in four parts: ~60 s on a 2-core box
def test_a_league_run_stopped_three_times_ends_as_the_straight_run(tmp_path, monkeypatch, capfd):
    """A candidate every epoch and a pool of 3 retire a member every epoch, while games against
    retired members still run across epoch ends: each resume must load the members its
    checkpoint's running games play (retirement keeps their files while a game plays them)."""
    league = [*SMOKE, "--league-enable", "--train.eval-interval", "0", "--train.checkpoint-interval", "1"]
    league += ["--train.max-checkpoints", "3", "--train.total-timesteps", str(512 * 9)]
    assert train_cli.main([*league, "--base.experiments-dir", str(tmp_path / "straight")]) == 0
    resume = ["--resume-checkpoint", "latest", "--resume-load-optimizer"]
    for k, stop in enumerate((3, 5, 7, None)):
        monkeypatch.undo()
        if stop is not None:
            signal_during_update(monkeypatch, epoch=stop, signals=[signal.SIGTERM])
        rc = train_cli.main([*league, "--base.experiments-dir", str(tmp_path / "parts"), *(resume if k else [])])
        assert rc == (0 if stop is None else PREEMPTED_EXIT)
    assert "cannot be loaded" not in capfd.readouterr().out
    digests = []
    for part in ("straight", "parts"):
        (path,) = list((tmp_path / part).rglob("model_smoke_000009.pt"))
        digests.append(weights_digest(torch.load(path, weights_only=True)["policy"]))
    assert digests[0] == digests[1]
