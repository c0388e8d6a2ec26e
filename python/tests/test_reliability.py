"""Bad input at every entry point, NaN during training, and leftovers of killed writes.

- every user-input error (config, deck pool, files, device, resume path) at train.py, the
  benches and evaluate_checkpoint is one message naming the key or file, exit 2, no
  traceback, nothing created on disk;
- a non-finite loss rolls the update back and stops training naming the epoch (or, with
  [train] nan_policy = skip_batch, drops that batch), and no checkpoint holds a NaN;
- temp files of killed atomic writes are removed at the next start, never anyone else's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tcgleague import evaluate_checkpoint as eval_cli
from tcgleague import train as train_cli
from tcgleague.atomic import TEMP_MARK, _host, atomic_write, remove_leftover_temp_files
from tcgleague.bench.__main__ import main as bench_main
from tcgleague.build import build_trainer
from tcgleague.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, write_checkpoint
from tcgleague.config import load_config
from tcgleague.errors import NonFiniteError
from tcgleague.ppo import PPOLoss
from tcgleague.train import checkpoint_writer

SMOKE = "configs/smoke.ini"
SRC = Path(__file__).resolve().parents[1] / "src"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def refused(capsys, main, argv: list[str], label: str) -> str:
    """Runs an entry point that must refuse: exit 2, one `<prog>: <label>:` message, no traceback."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert f": {label}: " in err, err
    return err


# ---- config and deck pool ---------------------------------------------------------------------
DECK_POOLS = {
    "missing": None,
    "directory": None,
    "malformed": "{",
    "a list": "[1, 2]",
    "a number": "5",
    "unknown deck": '{"seat0": {"nonexistent": 1}}',
    "zero weights": '{"seat0": {"ember": 0}}',
    "negative weight": '{"seat0": {"ember": 2, "tide": -1}}',
    "NaN weight": '{"seat0": {"ember": NaN}}',
    "huge weight": '{"seat0": {"ember": 1e300}}',
    "string weight": '{"seat0": {"ember": "1"}}',
    "boolean weight": '{"seat0": {"ember": true}}',
    "seat spec a number": '{"seat0": 5}',
    "list of numbers": '{"seat0": [1, 2]}',
    "unknown seat key": '{"seat 0": ["ember"]}',
    "binary": b"\xff\xfe\x00\x81",
}


@pytest.mark.parametrize("case", DECK_POOLS)
def test_bad_deck_pool_is_refused_before_anything_is_created(tmp_path, capsys, case):
    path = tmp_path / "decks.json"
    content = DECK_POOLS[case]
    if case == "directory":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    exp = tmp_path / "exp"
    err = refused(
        capsys,
        train_cli.main,
        ["--config", SMOKE, "--env.deck-pool", str(path), "--base.experiments-dir", str(exp)],
        "config error",
    )
    assert "[env] deck_pool" in err and str(path) in err
    assert not exp.exists(), "a refused run creates nothing"


def test_valid_deck_pool_files_are_accepted(tmp_path):
    assert load_config(SMOKE, ["--env.deck-pool", "configs/decks.json"]).env.deck_pool == "configs/decks.json"
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"seat1": {"ember": 0, "tide": 0.5}}))
    load_config(SMOKE, ["--env.deck-pool", str(path)])


def bad_config_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (train.py arguments, a text the message must contain)."""
    binary, empty_dir, a_file = tmp / "binary.ini", tmp / "conf.d", tmp / "a_file"
    binary.write_bytes(b"\x00\xff\xfe[base]\x81\n")
    empty_dir.mkdir()
    a_file.write_text("not a directory")
    latin = tmp / "latin.ini"
    latin.write_bytes("[base]\nrun_name = caf\xe9\n".encode("latin-1"))
    return {
        "native with two env objects": (["--vec.num-envs", "2"], "[vec] num_envs"),
        "binary config file": (["--config", str(binary)], "not a UTF-8 text .ini file"),
        "latin-1 config file": (["--config", str(latin)], "not a UTF-8 text .ini file"),
        "config is a directory": (["--config", str(empty_dir)], "is a directory"),
        "missing config": (["--config", str(tmp / "nope.ini")], "not found"),
        "experiments dir is a file": (["--base.experiments-dir", str(a_file)], "[base] experiments_dir"),
        "experiments dir under a file": (["--base.experiments-dir", str(a_file / "x")], "is a file"),
        "unknown key": (["--train.learning-rat", "1e-3"], "did you mean 'learning_rate'"),
        "NaN learning rate": (["--train.learning-rate", "nan"], "[train] learning_rate"),
        "bad nan_policy": (["--train.nan-policy", "ignore"], "[train] nan_policy"),
        "a learning rate factor of 0": (["--train.lr-scale-final", "0"], "[train] lr_scale_final"),
        # values that crashed or hung before they were bounded
        "negative seed": (["--base.seed", "-1"], "[base] seed"),
        "seed past 2**32": (["--base.seed", str(2**40)], "[base] seed"),
        "a million torch threads": (["--base.torch-threads", "1000000"], "[base] torch_threads"),
        "a million engine threads": (["--env.num-threads", "1000000"], "[env] num_threads"),
        "turn cap past int16": (["--env.turn-cap", "40000"], "[env] turn_cap"),
        "huge hidden size": (["--policy.hidden-size", "100000000"], "[policy] hidden_size"),
        "absurd total_timesteps": (["--train.total-timesteps", "1e30"], "[train] total_timesteps"),
        "run_name climbing out": (["--base.run-name", "../../etc"], "[base] run_name"),
        "run_name with a slash": (["--base.run-name", "a/b"], "[base] run_name"),
        "hidden run_name": (["--base.run-name", ".x"], "[base] run_name"),
    }


def test_bad_configs_are_refused_by_train_and_bench_before_anything_is_created(tmp_path, capsys):
    cases = bad_config_cases(tmp_path)
    for name, (args, text) in cases.items():
        exp = tmp_path / f"exp_{len(name)}"
        argv = ["--config", SMOKE, "--base.experiments-dir", str(exp), *args]
        if "--base.experiments-dir" in args:
            argv = ["--config", SMOKE, *args]
        err = refused(capsys, train_cli.main, argv, "config error")
        assert text in err, f"{name}: {err}"
        assert not exp.exists(), f"{name}: a refused run creates nothing"
        err = refused(capsys, bench_main, ["train", *argv[:2], "--epochs", "1", *argv[2:]], "config error")
        assert text in err, f"bench, {name}: {err}"


def test_empty_config_file_says_every_key_is_a_default(tmp_path, capsys):
    empty = tmp_path / "empty.ini"
    empty.write_text("# nothing here\n")
    notes = []
    cfg = load_config(empty, log=notes.append)
    assert cfg == load_config(None) and notes == [
        f"note: config file {empty} sets no keys: every key takes its default"
    ]


def test_bad_resume_paths_are_refused_before_anything_is_created(tmp_path, capsys):
    exp = tmp_path / "exp"
    (tmp_path / "adir").mkdir()
    for spec, text in (
        ("", "--resume-checkpoint is empty"),
        ("   ", "is empty"),
        (str(tmp_path / "adir"), "is a directory"),
    ):
        err = refused(
            capsys,
            train_cli.main,
            ["--config", SMOKE, "--base.experiments-dir", str(exp), "--resume-checkpoint", spec],
            "checkpoint refused",
        )
        assert text in err
        assert not exp.exists()


def test_evaluate_checkpoint_refuses_bad_arguments_without_a_traceback(tmp_path, capsys):
    err = refused(capsys, eval_cli.main, [str(tmp_path / "nothing.pt")], "checkpoint refused")
    assert "nothing.pt not found" in err
    err = refused(capsys, eval_cli.main, [str(tmp_path), "--episodes", "2"], "checkpoint refused")
    assert "is a directory" in err
    err = refused(
        capsys, eval_cli.main, [str(tmp_path / "x.pt"), "--json", str(tmp_path / "no" / "r.json")], "bad argument"
    )
    assert "--json" in err and "folder does not exist" in err
    with pytest.raises(SystemExit) as exit_info:  # argparse's own refusals exit 2 as well
        eval_cli.main([str(tmp_path / "x.pt"), "--parallel", "0"])
    assert exit_info.value.code == 2


def test_a_bug_still_shows_its_traceback(monkeypatch, tmp_path):
    """The boundary catches user-input errors only: anything else is ours and propagates."""

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(train_cli, "build_trainer", broken)
    with pytest.raises(ZeroDivisionError):
        train_cli.main(["--config", SMOKE, "--base.experiments-dir", str(tmp_path)])


# ---- NaN ----------------------------------------------------------------------------------------
def poison_loss(monkeypatch, at_calls: set[int]) -> list[int]:
    """PPOLoss returns a NaN loss on the given (1-based) calls; returns the call counter."""
    calls = [0]
    forward = PPOLoss.forward

    def poisoned(self, *args, **kwargs):
        loss, stats = forward(self, *args, **kwargs)
        calls[0] += 1
        return (loss * float("nan"), stats) if calls[0] in at_calls else (loss, stats)

    monkeypatch.setattr(PPOLoss, "forward", poisoned)
    return calls


def smoke_trainer(tmp_path: Path, *overrides: str):
    cfg = load_config(
        SMOKE,
        [
            "--train.eval-interval",
            "0",
            "--train.checkpoint-interval",
            "1",
            "--base.experiments-dir",
            str(tmp_path),
            *overrides,
        ],
    )
    run_dir = tmp_path / "smoke_run"
    run_dir.mkdir()
    return build_trainer(cfg, run_dir), run_dir


def test_nan_loss_stops_training_naming_the_epoch_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    trainer, run_dir = smoke_trainer(tmp_path)
    # smoke: 2 minibatch steps per epoch; the 4th loss call is epoch 2's second minibatch
    poison_loss(monkeypatch, {4})
    with pytest.raises(NonFiniteError, match=r"epoch 2 \(global_step 1024\), minibatch step 2 of the update"):
        trainer.train(checkpoint_fn=checkpoint_writer(run_dir, trainer.cfg))
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == ["model_smoke_000001.pt"]
    good = load_checkpoint(run_dir / "model_smoke_000001.pt", run_state=True).state
    # the update was rolled back: weights and Adam moments are exactly epoch 1's
    for name, value in trainer.policy.state_dict().items():
        assert torch.equal(value, good["policy"][name]), name
    for i, moments in enumerate(trainer.learner.optimizer.state.values()):
        assert torch.equal(moments["exp_avg"], good["optimizer"]["state"][i]["exp_avg"])
        assert torch.equal(moments["step"], good["optimizer"]["state"][i]["step"])


def test_nan_loss_with_skip_batch_drops_that_update_and_trains_on(tmp_path, monkeypatch, capsys):
    trainer, run_dir = smoke_trainer(tmp_path, "--train.nan-policy", "skip_batch")
    rolled_back = []
    trainer.add_epoch_hook(lambda metrics: rolled_back.append(metrics["losses/update_rolled_back"]) or {})
    poison_loss(monkeypatch, {3})  # epoch 2's first minibatch
    trainer.train(checkpoint_fn=checkpoint_writer(run_dir, trainer.cfg))
    assert "epoch 2 (global_step 1024), minibatch step 1" in capsys.readouterr().err
    assert rolled_back == [0.0, 1.0, 0.0, 0.0]
    assert [p.name for p in list_checkpoints(run_dir, "smoke")][-1] == "model_smoke_000004.pt"
    last = load_checkpoint(run_dir / "model_smoke_000004.pt").state
    assert all(torch.isfinite(v).all() for v in last["policy"].values())


def test_nan_loss_through_the_cli_exits_2_and_the_newest_checkpoint_is_finite(tmp_path, monkeypatch, capsys):
    poison_loss(monkeypatch, {5})  # epoch 3
    argv = ["--config", SMOKE, "--train.eval-interval", "0", "--train.checkpoint-interval", "1"]
    err = refused(capsys, train_cli.main, [*argv, "--base.experiments-dir", str(tmp_path)], "training stopped")
    assert "epoch 3" in err and "last good one" in err
    newest = latest_checkpoint(tmp_path, "smoke")
    assert newest.name == "model_smoke_000002.pt"
    assert all(torch.isfinite(v).all() for v in load_checkpoint(newest).state["policy"].values())


def test_a_checkpoint_with_nan_weights_is_never_written(tmp_path):
    trainer, run_dir = smoke_trainer(tmp_path)
    state = trainer.state_dict()
    next(iter(state["policy"].values()))[0] = float("nan")
    with pytest.raises(ValueError, match="refusing to write checkpoint .*field policy"):
        write_checkpoint(run_dir / "model_smoke_000001.pt", state)
    assert list(run_dir.iterdir()) == []


# ---- temp files of killed writes ------------------------------------------------------------------
def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def temp_name(target: str, host: str, pid: int) -> str:
    return f".{target}.{TEMP_MARK}-{host}-{pid}.abc_123.tmp"


def test_a_write_killed_mid_way_leaves_a_temp_file_the_next_start_removes(tmp_path, capsys):
    """A real kill -9 during an atomic write, then a run started in that experiments dir."""
    old_run = tmp_path / "smoke_1"
    old_run.mkdir()
    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); from tcgleague.atomic import atomic_write\n"
        "def write(f):\n    f.write(b'x' * 1000); f.flush(); os.kill(os.getpid(), 9)\n"
        "atomic_write(sys.argv[2], write)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(SRC), str(old_run / "model_smoke_000003.pt")])
    assert proc.returncode == -9
    (left,) = old_run.iterdir()
    assert left.name.startswith(".model_smoke_000003.pt.") and left.name.endswith(".tmp")
    assert latest_checkpoint(tmp_path, "smoke") is None, "`latest` never takes a temp file"

    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        members = old_run / "league" / "members"
        members.mkdir(parents=True)
        keep = [
            old_run / temp_name("model_smoke_000004.pt", _host(), live.pid),  # a writer still running
            old_run / temp_name("model_smoke_000005.pt", "otherhost", dead_pid()),  # another machine's
            old_run / ".notes.txt.tmp",  # not one of ours
            tmp_path / "elsewhere_1" / temp_name("model_x_000001.pt", _host(), dead_pid()),  # another run_name
        ]
        gone = [left, members / temp_name("m1.pt", _host(), dead_pid())]
        for path in keep + gone[1:]:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"partial")
        argv = ["--config", SMOKE, "--train.total-timesteps", "512", "--train.eval-interval", "0"]
        assert train_cli.main([*argv, "--base.experiments-dir", str(tmp_path)]) == 0
    finally:
        live.kill()
        live.wait()
    assert "removed 2 temp file(s)" in capsys.readouterr().err
    assert all(p.exists() for p in keep), [p for p in keep if not p.exists()]
    assert not any(p.exists() for p in gone)


def test_remove_leftover_temp_files_never_touches_the_current_process(tmp_path):
    mine = tmp_path / temp_name("a.pt", _host(), os.getpid())
    mine.write_bytes(b"x")
    assert remove_leftover_temp_files([tmp_path]) == [] and mine.exists()
    atomic_write(tmp_path / "b.pt", lambda f: f.write(b"done"))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, "b.pt"])
