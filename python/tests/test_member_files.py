"""League member files across moves and kills. A league checkpoint names its members relative
to its run directory, so a run directory moved to another path resumes from there exactly,
reading the members in their new place and adopting them into the resumed run (which never
touches the source). A member file goes only once a newer checkpoint no longer names it, so a
run killed at any moment resumes from its newest checkpoint with every member it names. A
member whose file is gone refuses the resume, naming it, unless --league-allow-missing-members
drops it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tcgleague import train as train_cli
from tcgleague.dist import weights_digest

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ROOT = Path(__file__).resolve().parents[2]

# A candidate every epoch and a pool of 3: members join and retire every epoch (smoke.ini [league]).
LEAGUE = ["--config", "configs/smoke.ini", "--base.torch-threads", "1", "--league-enable"]
LEAGUE += ["--train.eval-interval", "0", "--train.checkpoint-interval", "1", "--train.total-timesteps", str(512 * 5)]
RESUME = ["--resume-load-optimizer", "--resume-checkpoint"]


def files_of(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(run_dir)): (p.stat().st_size, p.stat().st_mtime_ns) for p in run_dir.rglob("*")}


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> tuple[Path, str]:
    """A straight 5-epoch league run, moved after it ended; the digest of its final weights."""
    base = tmp_path_factory.mktemp("straight")
    assert train_cli.main([*LEAGUE, "--base.experiments-dir", str(base)]) == 0
    (run_dir,) = base.iterdir()
    digest = weights_digest(torch.load(run_dir / "model_smoke_000005.pt", weights_only=True)["policy"])
    target = tmp_path_factory.mktemp("elsewhere") / "copied" / run_dir.name
    shutil.move(run_dir, target)
    return target, digest


def test_a_moved_run_directory_resumes_exactly_and_leaves_its_source_untouched(moved, tmp_path, capfd):
    run_dir, straight = moved
    checkpoint = torch.load(run_dir / "model_smoke_000002.pt", weights_only=True)
    paths = [m["path"] for m in checkpoint["league"]["manager"]["members"]]
    assert paths and all(p == f"league/members/{Path(p).name}" for p in paths), paths
    before = files_of(run_dir)
    rc = train_cli.main(
        [*LEAGUE, "--base.experiments-dir", str(tmp_path), *RESUME, str(run_dir / "model_smoke_000002.pt")]
    )
    assert rc == 0
    out = capfd.readouterr()
    assert "cannot be loaded" not in out.out + out.err and "WARNING" not in out.out + out.err
    (resumed,) = tmp_path.iterdir()
    final = torch.load(resumed / "model_smoke_000005.pt", weights_only=True)
    assert weights_digest(final["policy"]) == straight, "the continuation from the moved directory is exact"
    assert files_of(run_dir) == before, "the resume neither wrote nor deleted anything in the source run"
    for member in final["league"]["manager"]["members"]:
        assert (resumed / member["path"]).is_file(), f"{member['id']} lives in the resumed run"
    named = {m["id"] for m in final["league"]["manager"]["members"]} | set(final["league"]["manager"]["retired"])
    on_disk = {p.stem for p in (resumed / "league" / "members").glob("*.pt")}
    assert on_disk == named, "the files the final checkpoint does not name are gone"


@pytest.mark.slow  # fast set: a moved run directory and a missing member resume
def test_a_run_killed_after_a_retirement_without_a_checkpoint_resumes_exactly(moved, tmp_path):
    """A checkpoint every 2 epochs; SIGKILL at the start of epoch 4's update, after epoch 3 retired
    members the epoch-2 checkpoint names: their files are still there, and the resume is exact."""
    _, straight = moved
    every_two = [*LEAGUE, "--train.checkpoint-interval", "2", "--base.experiments-dir", str(tmp_path)]
    kill = {"RANK": "0", "FAIL_RANK": "0", "FAIL_EPOCH": "4", "FAIL_KILL": "1"}
    proc = subprocess.run(
        [sys.executable, "python/tests/helpers/dist_failing_rank.py", *every_two],
        cwd=ROOT,
        env={**os.environ, **kill},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    (killed,) = tmp_path.iterdir()
    assert [p.name for p in sorted(killed.glob("model_*.pt"))] == ["model_smoke_000002.pt"]
    assert train_cli.main([*every_two, "--resume-checkpoint", "latest", "--resume-load-optimizer"]) == 0
    (resumed,) = [p for p in tmp_path.iterdir() if p != killed]
    final = torch.load(resumed / "model_smoke_000005.pt", weights_only=True)
    assert weights_digest(final["policy"]) == straight


def test_a_missing_member_refuses_the_resume_unless_allowed(moved, tmp_path, capsys):
    run_dir, _ = moved
    damaged = tmp_path / "damaged" / run_dir.name
    shutil.copytree(run_dir, damaged)
    checkpoint = damaged / "model_smoke_000003.pt"
    gone = torch.load(checkpoint, weights_only=True)["league"]["manager"]["members"][0]
    (damaged / gone["path"]).unlink()
    argv = [*LEAGUE, "--base.experiments-dir", str(tmp_path / "exp"), *RESUME, str(checkpoint)]
    assert train_cli.main(argv) != 0
    err = capsys.readouterr().err
    assert f"league member file(s) missing: {gone['id']} ({damaged / gone['path']})" in err, err
    assert "--league-allow-missing-members" in err and "Traceback" not in err
    assert not list((tmp_path / "exp").glob("*/model_*.pt")), "a refused resume leaves no run behind"
    assert train_cli.main([*argv, "--league-allow-missing-members"]) == 0
    out = capsys.readouterr().out
    assert f"member files missing, dropping {gone['id']}" in out, out[:600]
