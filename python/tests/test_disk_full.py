"""Full disks and unwritable paths: a checkpoint, sidecar, league member file, league state or
metrics line that cannot be written (ENOSPC, EACCES, EROFS) stops the run with one line naming
the file, the errno and the last good checkpoint, exit STORAGE_EXIT; the previous files stay
intact and loadable, no temp file is left, metrics.jsonl holds whole lines only.

Failures are injected by patching the writes (os.fdopen's file for atomic writes, os.write for
metrics.jsonl) to raise at the Nth write; a read-only directory is a chmod where that binds (not
as root, which ignores it: there the same EROFS is patched in)."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest

from tcgleague import train as train_cli
from tcgleague.atomic import TEMP_MARK
from tcgleague.checkpoint import list_checkpoints, load_checkpoint
from tcgleague.errors import STORAGE_EXIT
from tcgleague.logger import append_line, open_for_append
from tcgleague.trainer import Trainer

SMOKE = ["--config", "configs/smoke.ini", "--base.torch-threads", "1", "--train.eval-interval", "0"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


class FailingFile:
    """A file whose `fail_at`-th write raises OSError(code) (earlier ones are written)."""

    def __init__(self, f, fail_at: int, code: int):
        self.f, self.writes, self.fail_at, self.code = f, 0, fail_at, code

    def write(self, data):
        self.writes += 1
        if self.writes == self.fail_at:
            raise OSError(self.code, os.strerror(self.code))
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def fail_atomic_writes(monkeypatch, target: str, nth_file: int, nth_write: int, code: int = errno.ENOSPC) -> None:
    """The `nth_file`-th atomic write whose target contains `target` fails at its `nth_write`-th write."""
    fdopen, opened = os.fdopen, []

    def patched(fd, *args, **kwargs):
        f = fdopen(fd, *args, **kwargs)
        if TEMP_MARK in path_of(fd) and target in path_of(fd):
            opened.append(fd)
            if len(opened) == nth_file:
                return FailingFile(f, nth_write, code)
        return f

    monkeypatch.setattr(os, "fdopen", patched)


def refused_write(capfd, argv: list[str], named: str, code_name: str) -> str:
    """The run stops with STORAGE_EXIT and one line naming the file, the errno and the last good checkpoint."""
    assert train_cli.main(argv) == STORAGE_EXIT
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if "write failed" in x]
    assert line.startswith("train: write failed: cannot write ") and named in line and f"({code_name})" in line, line
    return line


def assert_intact(base: Path, run_dir: Path, newest: int) -> None:
    """Every checkpoint left loads with its run state; the newest is epoch `newest`; no temp file;
    metrics.jsonl holds whole lines only."""
    assert [int(p.stem[-6:]) for p in list_checkpoints(run_dir, "smoke")][-1] == newest
    for path in list_checkpoints(run_dir, "smoke"):
        load_checkpoint(path, run_state=True, log=lambda m: None)
        assert path.with_suffix(".json").is_file()
    assert not list(base.rglob(f".*{TEMP_MARK}*"))
    text = (run_dir / "metrics.jsonl").read_text()
    assert text.endswith("\n") and all(json.loads(x) for x in text.splitlines())


@pytest.mark.parametrize("target, nth_write", [(".pt", 3), (".json", 1)], ids=["checkpoint mid-file", "its sidecar"])
def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one_and_names_it(
    tmp_path, monkeypatch, capfd, target, nth_write
):
    fail_atomic_writes(monkeypatch, f"model_smoke_000004{target}", nth_file=1, nth_write=nth_write)
    line = refused_write(capfd, [*SMOKE, "--base.experiments-dir", str(tmp_path)], "model_smoke_000004", "ENOSPC")
    (run_dir,) = tmp_path.iterdir()
    assert f"the last good checkpoint is {run_dir / 'model_smoke_000002.pt'}" in line
    assert not (run_dir / "model_smoke_000004.pt").exists() and not (run_dir / "model_smoke_000004.json").exists()
    assert_intact(tmp_path, run_dir, newest=2)


@pytest.mark.parametrize(
    "target, nth_file, nth_write",
    [("league_state.json", 2, 1), ("e000002.pt", 1, 3)],
    ids=["league state", "member file"],
)
def test_a_league_file_that_cannot_be_written_stops_the_run_with_the_previous_files_intact(
    tmp_path, monkeypatch, capfd, target, nth_file, nth_write
):
    """A later league state (or member file) fails: the run stops (a member is not skipped: the
    same storage holds the checkpoints), the newest checkpoint named."""
    fail_atomic_writes(monkeypatch, target, nth_file, nth_write)
    argv = [*SMOKE, "--league-enable", "--train.checkpoint-interval", "1", "--base.experiments-dir", str(tmp_path)]
    line = refused_write(capfd, argv, target, "ENOSPC")
    (run_dir,) = tmp_path.iterdir()
    assert "the last good checkpoint is" in line and "model_smoke_00000" in line
    newest = list_checkpoints(run_dir, "smoke")[-1]
    assert str(newest) in line
    assert_intact(tmp_path, run_dir, newest=int(newest.stem[-6:]))
    state = json.loads((run_dir / "league" / "league_state.json").read_text())
    for member in state["members"]:  # the saved league state names loadable member files only
        load_checkpoint(run_dir / member["path"], log=lambda m: None)


def test_a_metrics_line_is_never_half_written_on_a_full_disk(tmp_path, monkeypatch, capfd):
    """The third line's write gets half its bytes out, then ENOSPC: the half is taken back."""
    write, lines = os.write, []

    def patched(fd, data):
        if not path_of(fd).endswith("metrics.jsonl"):
            return write(fd, data)
        lines.append(len(data))
        if len(lines) == 3:
            return write(fd, bytes(data[: len(data) // 2]))
        if len(lines) == 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)

    monkeypatch.setattr(os, "write", patched)
    argv = [*SMOKE, "--train.checkpoint-interval", "1", "--base.experiments-dir", str(tmp_path)]
    line = refused_write(capfd, argv, "metrics.jsonl", "ENOSPC")
    (run_dir,) = tmp_path.iterdir()
    assert "metrics.jsonl keeps its previous version" in line and "model_smoke_000002.pt" in line
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2
    assert_intact(tmp_path, run_dir, newest=2)


def test_append_line_takes_back_a_partial_line(tmp_path, monkeypatch):
    path = tmp_path / "m.jsonl"
    fd = open_for_append(path)
    append_line(fd, path, '{"a": 1}\n')
    write = os.write
    calls = []

    def short_then_full(fd, data):
        calls.append(1)
        if len(calls) == 1:
            return write(fd, bytes(data[:3]))
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(Exception, match=r"cannot write .*m\.jsonl: .*\(EDQUOT\)"):
        append_line(fd, path, '{"b": 2}\n')
    monkeypatch.undo()
    os.close(fd)
    assert path.read_text() == '{"a": 1}\n'


def test_a_read_only_run_directory_mid_run_stops_with_the_last_good_checkpoint(tmp_path, monkeypatch, capfd):
    """After epoch 2's checkpoint the run directory turns read-only: chmod where it binds, else
    (as root) mkstemp raising EROFS there, as a read-only mount would."""
    update, as_root = Trainer.update, os.geteuid() == 0

    def update_then_lock(self, params):
        if self.epoch == 2:
            run_dir = next(tmp_path.iterdir())
            if as_root:
                mkstemp = tempfile.mkstemp

                def read_only(*args, dir=None, **kwargs):
                    if Path(dir) == run_dir:
                        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
                    return mkstemp(*args, dir=dir, **kwargs)

                monkeypatch.setattr(tempfile, "mkstemp", read_only)
            else:
                run_dir.chmod(0o555)
        return update(self, params)

    monkeypatch.setattr(Trainer, "update", update_then_lock)
    argv = [*SMOKE, "--train.checkpoint-interval", "1", "--base.experiments-dir", str(tmp_path)]
    line = refused_write(capfd, argv, "model_smoke_000003.pt", "EROFS" if as_root else "EACCES")
    (run_dir,) = tmp_path.iterdir()
    run_dir.chmod(0o755)
    assert "model_smoke_000002.pt" in line
    assert_intact(tmp_path, run_dir, newest=2)
