"""Checkpoint safety: damaged fields are refused naming the field, a damaged zip never leaks a
raw exception, a pickle that would run code is refused by every loader (and runs nothing),
older checkpoints convert into safe ones, nothing malformed is ever written, and the engine
refuses game states that would make it read or write outside its arrays.

Every damaged file is derived from the checkpoint of ONE short smoke run (the module fixture)."""

from __future__ import annotations

import builtins
import io
import os
import re
import shlex
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.float32_rows import float32_rows
from tcgleague import evaluate_checkpoint as eval_cli
from tcgleague import train as train_cli
from tcgleague.checkpoint import CheckpointError, load_checkpoint, save_checkpoint, save_policy, write_checkpoint
from tcgleague.checkpoint import convert as checkpoint_cli
from tcgleague.config import load_config
from tcgleague.fingerprint import obs_layout_hash
from tcgleague.games.emberfront import policy as tcg_policy
from tcgleague.games.emberfront.bots import random_actions
from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.game import EMBERFRONT_RUNNER
from tcgleague.games.emberfront.layout import NAME as EMBERFRONT
from tcgleague.games.emberfront.old_rows import CONVERTIBLE_LAYOUTS
from tcgleague.league import LeagueManager
from tcgleague.league.members import MemberStore

SMOKE = "configs/smoke.ini"
BASE_ARGS = ["--config", SMOKE, "--train.eval-interval", "0", "--train.checkpoint-interval", "1"]
# `trained` is conftest's smoke_checkpoint: BASE_ARGS for one epoch (512 steps). A resume that is
# (wrongly or rightly) accepted trains one more.
RESUME_ARGS = [*BASE_ARGS, "--train.total-timesteps", "1024"]
CONVERT = "python -m tcgleague.checkpoint convert"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def trained(smoke_checkpoint) -> Path:
    """The epoch-1 checkpoint of a one-epoch smoke run (conftest's smoke_checkpoint, shared: the
    tests below damage copies of it only): weights, optimizer, scheduler, RNG and run state
    (every game's engine state)."""
    path = smoke_checkpoint
    state = torch.load(path, weights_only=True)
    assert {"optimizer", "scheduler", "rng", "run_state"} <= set(state) and state["global_step"] == 512
    return path


# ---- helpers ------------------------------------------------------------------------------------
def run_dirs(base: Path) -> list[Path]:
    return [p for p in base.iterdir() if p.is_dir()] if base.exists() else []


def tampered(src: Path, dst: Path, edit) -> Path:
    state = torch.load(src, weights_only=True)
    edit(state)
    torch.save(state, dst)
    return dst


DELETE = object()


def put(keys: tuple, value):
    """An edit setting state[k0][k1]...[kn] to `value` (a callable gets the old value; DELETE deletes)."""

    def edit(state):
        d = state
        for k in keys[:-1]:
            d = d[k]
        if value is DELETE:
            del d[keys[-1]]
        else:
            d[keys[-1]] = value(d[keys[-1]]) if callable(value) else value

    return edit


def with_nan(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[[0, 5, 7]] = float("nan")
    return t


def with_inf(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[3] = float("inf")
    return t


def refused_message(err: str, prog: str) -> str:
    """The one `<prog>: checkpoint refused: ...` line of stderr (no traceback), without its prefix."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "refused" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: checkpoint refused: "), err
    return lines[0].split("checkpoint refused: ", 1)[1]


def refused_by_resume(capsys, base: Path, path: Path, *extra: str) -> str:
    capsys.readouterr()
    rc = train_cli.main([*RESUME_ARGS, "--base.experiments-dir", str(base), "--resume-checkpoint", str(path), *extra])
    err = capsys.readouterr().err
    assert rc == 2, err
    return refused_message(err, "train")


def refused_by_evaluate(capsys, *argv: str) -> str:
    capsys.readouterr()
    rc = eval_cli.main([*argv, "--episodes", "2", "--parallel", "2"])
    err = capsys.readouterr().err
    assert rc == 2, err
    return refused_message(err, "evaluate_checkpoint")


# ---- 1. damaged fields ------------------------------------------------------------------------------
W_NAN, W_INF, W_INT = "lstm.weight_ih", "ls_type.bias", "ls_type.weight"


def beside_the_learner(part: str, damage):
    """An edit giving the checkpoint a frozen magnet (`part` "magnet") or an average of one snapshot
    (`part` "average") holding a copy of the learner's weights, damaged by `damage(weights)`."""

    def edit(state):
        weights = {k: v.clone() for k, v in state["policy"].items()}
        damage(weights)
        snapshot = {"global_step": 512, "policy": weights, "sampling_params": dict(state["sampling_params"])}
        parts = {
            "magnet": {"kind": "frozen", "replaced_at": 512, "policy": weights},
            "average": {"taken_at": 512, "snapshots": [snapshot]},
        }
        state[part] = parts[part]

    return edit


WIDTH = "an integer in [1, 8192]"  # policy_config values are bounded by config.validate.MAX_WIDTH


def keys_as_uint64(*values: int):
    """An edit storing rng.numpy.keys as a uint64 tensor whose first words are `values`."""

    def edit(state):
        keys = state["rng"]["numpy"]["keys"].numpy().astype(np.uint64)
        keys[: len(values)] = values
        state["rng"]["numpy"]["keys"] = torch.from_numpy(keys)

    return edit


# (id, edit, field named in the message, what is said about it): refused by resume AND evaluation
BOTH = [
    ("fingerprint-str", put(("fingerprint",), "abc"), "fingerprint", "expected a dict"),
    ("source-hashes-list", put(("fingerprint", "source_hashes"), ["a", "b"]), "fingerprint.source_hashes", "dict"),
    ("layout-hash-int", put(("fingerprint", "obs_layout_hash"), 7), "fingerprint.obs_layout_hash", "hash string"),
    ("policy-config-list", put(("policy_config",), [32, 64]), "policy_config", "expected a dict"),
    ("hidden-size-str", put(("policy_config", "hidden_size"), "32"), "policy_config.hidden_size", f"{WIDTH}, got '32'"),
    ("hidden-size-zero", put(("policy_config", "hidden_size"), 0), "policy_config.hidden_size", f"{WIDTH}, got 0"),
    ("entity-dim-bool", put(("policy_config", "entity_dim"), True), "policy_config.entity_dim", f"{WIDTH}, got True"),
    (
        "attention-layers-huge",
        put(("policy_config", "entity_attention_layers"), 9),
        "policy_config.entity_attention_layers",
        "an integer in [0, 8], got 9",
    ),
    (
        "legal-scorer-negative",
        put(("policy_config", "legal_scorer_dim"), -1),
        "policy_config.legal_scorer_dim",
        "an integer in [0, 8192], got -1",
    ),
    (
        "legal-effect-huge",
        put(("policy_config", "legal_effect_dim"), 10**9),
        "policy_config.legal_effect_dim",
        "an integer in [0, 8192], got 1000000000",
    ),
    ("format-version-str", put(("format_version",), "1"), "format_version", "integer >= 1"),
    ("format-str-int", put(("format",), 1), "format", "expected a string"),
    ("global-step-negative", put(("global_step",), -1), "global_step", "integer >= 0"),
    ("global-step-bool", put(("global_step",), True), "global_step", "integer >= 0"),
    ("epoch-float", put(("epoch",), 1.5), "epoch", "integer >= 0"),
    ("anneal-offset-negative", put(("anneal_offset",), -5), "anneal_offset", "integer >= 0"),
    ("weight-nan", put(("policy", W_NAN), with_nan), f"policy.{W_NAN}", "3 of 4096 values are NaN or infinite"),
    ("weight-inf", put(("policy", W_INF), with_inf), f"policy.{W_INF}", "1 of 8 values are NaN or infinite"),
    ("weight-int", put(("policy", W_INT), lambda t: t.to(torch.int32)), f"policy.{W_INT}", "expected a float tensor"),
    ("weight-not-tensor", put(("policy", W_INF), [0.0] * 8), f"policy.{W_INF}", "expected a tensor"),
    ("policy-empty", put(("policy",), {}), "policy", "holds no weights"),
    (
        "sampling-nan",
        put(("sampling_params", "primary_temperature"), float("nan")),
        "sampling_params.primary_temperature",
        "finite number",
    ),
    (
        "sampling-temperature-zero",
        put(("sampling_params", "primary_temperature"), 0.0),
        "sampling_params",
        "primary_temperature must be a finite number > 0, got 0.0",
    ),
    (
        "sampling-eps-one",
        put(("sampling_params", "smoothing_eps"), 1.0),
        "sampling_params",
        "smoothing_eps must be in [0, 1), got 1.0",
    ),
    (
        "anneal-temperature-negative",
        put(("anneal", "sampler/subaction_temperature"), -1),
        "anneal",
        "subaction_temperature must be a finite number > 0, got -1",
    ),
    (
        "anneal-eps-one",
        put(("anneal", "sampler/smoothing_eps"), 1.0),
        "anneal",
        "smoothing_eps must be in [0, 1), got 1.0",
    ),
    ("anneal-inf", put(("anneal", "anneal/ent_coef"), float("inf")), "anneal.anneal/ent_coef", "finite number"),
    ("metrics-str", put(("metrics", "losses/value_loss"), "low"), "metrics.losses/value_loss", "finite number"),
    ("health-list", put(("health",), [1.0, 0.5]), "health", "expected a dict"),
    ("config-str", put(("config",), "[env]\nnum_games = 16"), "config", "expected a dict"),
    ("config-section-list", put(("config", "env"), []), "config.env", "section dict"),
    ("league-list", put(("league",), ["e000001"]), "league", "expected a dict"),
    (  # the main exploiter is a second learner: its weights are checked like the learner's
        "exploiter-weight-nan",
        put(("league",), {"exploiter": {"policy": {"w": torch.tensor([0.0, float("nan")])}}}),
        "league.exploiter.policy.w",
        "1 of 2 values are NaN or infinite",
    ),
    (
        "exploiter-optimizer-empty",
        put(("league",), {"exploiter": {"policy": {"w": torch.zeros(2)}, "optimizer": {}}}),
        "league.exploiter.optimizer.param_groups",
        "expected a non-empty list",
    ),
    # the copies of the learner a run keeps beside it: the magnet and the average policy's snapshots
    ("magnet-kind", put(("magnet",), {"kind": "warm", "replaced_at": 0}), "magnet.kind", "one of uniform, frozen, ema"),
    (
        "magnet-shape",
        beside_the_learner("magnet", lambda w: w.update({W_INF: w[W_INF][:4]})),
        f"magnet.policy.{W_INF}",
        "shape [4] does not fit the policy's [8]",
    ),
    ("average-list", put(("average",), {"taken_at": 0, "snapshots": {}}), "average.snapshots", "expected a list"),
    (
        "average-weight-nan",
        beside_the_learner("average", lambda w: w.update({W_NAN: with_nan(w[W_NAN])})),
        f"average.snapshots[0].policy.{W_NAN}",
        "3 of 4096 values are NaN or infinite",
    ),
    (
        "average-weight-missing",
        beside_the_learner("average", lambda w: w.pop(W_INF)),
        "average.snapshots[0].policy",
        "its weight names are not the policy's",
    ),
    ("normalizer-set", put(("normalizer",), {"mean": 0.0}), "normalizer", "expected none"),
    ("run-name-int", put(("run_name",), 3), "run_name", "expected a string"),
    # unsigned keys are compared as int64: in range they load (see below), past 2**32 (or past 2**63,
    # which a plain cast to int64 would wrap to a negative number) they are refused
    ("numpy-keys-uint64-range", keys_as_uint64(2**32 + 7), "rng.numpy.keys", "words must be in [0, 2**32)"),
    ("numpy-keys-uint64-top", keys_as_uint64(5, 2**64 - 1), "rng.numpy.keys", "words must be in [0, 2**32)"),
]


def param_cases(cases):
    return [pytest.param(*c, id=c[0]) if type(c) is tuple else c for c in cases]


@pytest.mark.parametrize("name, edit, field, detail", param_cases(BOTH))
def test_damaged_field_is_refused_by_resume_and_evaluation_naming_the_field(
    trained, tmp_path, capsys, name, edit, field, detail
):
    refused_everywhere(trained, tmp_path, capsys, edit, field, detail)


def refused_everywhere(trained: Path, tmp_path: Path, capsys, edit, field: str, detail: str) -> None:
    bad = tampered(trained, tmp_path / "model_smoke_000001.pt", edit)
    base = tmp_path / "exp"
    resume_msg = refused_by_resume(capsys, base, bad, "--resume-load-optimizer")
    eval_msg = refused_by_evaluate(capsys, str(bad))
    for msg in (resume_msg, eval_msg):
        assert str(bad) in msg and f"field {field}:" in msg and detail in msg, msg
    assert resume_msg == eval_msg, "resume and evaluation refuse with the same message"
    assert not base.exists(), "a refused resume creates no run directory"
    with pytest.raises(CheckpointError, match=re.escape(f"field {field}:")):
        load_checkpoint(bad)


@pytest.mark.parametrize(
    "key, width", [("hidden_size", 10**6), ("card_embed_dim", 8193)], ids=["hidden-size-1e6", "embed-dim-8193"]
)
def test_an_oversized_architecture_is_refused_before_any_policy_is_built(
    trained, tmp_path, capsys, monkeypatch, key, width
):
    """A crafted policy_config would make every loader allocate what it asks for (10**6 hidden
    units: terabytes of LSTM weights): it is refused by its bound, before a policy is built."""
    built: list[dict] = []
    init = tcg_policy.TCGPolicy.__init__

    def recording_init(self, config):
        built.append(config.to_dict())
        init(self, config)

    monkeypatch.setattr(tcg_policy.TCGPolicy, "__init__", recording_init)
    refused_everywhere(
        trained, tmp_path, capsys, put(("policy_config", key), width), f"policy_config.{key}", f"{WIDTH}, got {width}"
    )
    assert all(config[key] <= 8192 for config in built), f"a policy with {key} = {width} was built"
    load_checkpoint(trained)
    assert built[-1][key] < 8192, "the control: loading the good file builds its policy, and it is recorded"


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_numpy_keys_of_an_unsigned_dtype_in_range_are_accepted(trained, tmp_path, dtype):
    """np.random.get_state() gives uint32 keys: stored as an unsigned tensor they are read as they are."""
    keys = torch.load(trained, weights_only=True)["rng"]["numpy"]["keys"]
    small = keys % 2**16 if dtype == torch.uint16 else keys
    edit = put(("rng", "numpy", "keys"), torch.from_numpy(small.numpy().astype(str(dtype).split(".")[1])))
    path = tampered(trained, tmp_path / "model_smoke_000001.pt", edit)
    loaded = load_checkpoint(path, run_state=True)
    assert loaded.state["rng"]["numpy"]["keys"].dtype == dtype
    assert torch.equal(loaded.state["rng"]["numpy"]["keys"].to(torch.int64), small)


def state_width(width: int):
    def edit(s):
        run = s["run_state"]
        run["state_h"] = torch.zeros(run["state_h"].shape[0], width)
        run["state_c"] = torch.zeros(run["state_c"].shape[0], width)

    return edit


def py_rng_short(py):
    return (py[0], tuple(py[1][:-2]), py[2])


# refused by resume with --resume-load-optimizer (evaluation does not use these fields)
RESUME_ONLY = [
    ("optimizer-missing", put(("optimizer",), DELETE), "optimizer", "without --resume-load-optimizer"),
    ("rng-missing", put(("rng",), DELETE), "rng", "missing"),
    (
        "exp-avg-shape",
        put(("optimizer", "state", 0, "exp_avg"), lambda t: t[:1]),
        "optimizer.state[0].exp_avg",
        "does not fit parameter shape",
    ),
    ("exp-avg-nan", put(("optimizer", "state", 0, "exp_avg"), with_nan), "optimizer.state[0].exp_avg", "NaN"),
    ("param-groups-empty", put(("optimizer", "param_groups"), []), "optimizer.param_groups", "non-empty list"),
    (
        "param-groups-lr-nan",
        put(("optimizer", "param_groups", 0, "lr"), float("nan")),
        "optimizer.param_groups[0].lr",
        "invalid value nan",
    ),
    (
        "param-groups-lr-str",
        put(("optimizer", "param_groups", 0, "lr"), "x"),
        "optimizer.param_groups[0].lr",
        "invalid value 'x'",
    ),
    (
        "param-groups-lr-negative",
        put(("optimizer", "param_groups", 0, "lr"), -1e-3),
        "optimizer.param_groups[0].lr",
        "invalid value -0.001",
    ),
    (
        "param-groups-no-betas",
        put(("optimizer", "param_groups", 0, "betas"), DELETE),
        "optimizer.param_groups[0].betas",
        "invalid value None",
    ),
    (
        "param-groups-beta-one",
        put(("optimizer", "param_groups", 0, "betas"), (0.9, 1.0)),
        "optimizer.param_groups[0].betas",
        "invalid value (0.9, 1.0)",
    ),
    (
        "param-groups-eps-zero",
        put(("optimizer", "param_groups", 0, "eps"), 0.0),
        "optimizer.param_groups[0].eps",
        "invalid value 0.0",
    ),
    (
        "param-groups-flag-list",
        put(("optimizer", "param_groups", 0, "amsgrad"), [1]),
        "optimizer.param_groups[0].amsgrad",
        "expected a flag or a number, got [1]",
    ),
    (
        "param-groups-missing-param",
        put(("optimizer", "param_groups", 0, "params"), lambda p: p[:-1]),
        "optimizer.param_groups",
        "must name each of the policy's 44 parameters once (it names 43, 43 distinct)",
    ),
    (
        "param-groups-duplicated-param",
        put(("optimizer", "param_groups", 0, "params"), lambda p: [*p[:-1], p[0]]),
        "optimizer.param_groups",
        "must name each of the policy's 44 parameters once (it names 44, 43 distinct)",
    ),
    ("optimizer-step-str", put(("optimizer", "state", 0, "step"), "x"), "optimizer.state[0].step", "expected a tensor"),
    (
        "optimizer-step-1d",
        put(("optimizer", "state", 0, "step"), lambda t: t.reshape(1)),
        "optimizer.state[0].step",
        "expected shape [], got [1]",
    ),
    (
        "optimizer-step-int",
        put(("optimizer", "state", 0, "step"), lambda t: t.to(torch.int64)),
        "optimizer.state[0].step",
        "expected a float tensor",
    ),
    (
        "optimizer-step-nan",
        put(("optimizer", "state", 0, "step"), torch.tensor(float("nan"))),
        "optimizer.state[0].step",
        "1 of 1 values are NaN or infinite",
    ),
    (
        "optimizer-no-exp-avg-sq",
        put(("optimizer", "state", 0, "exp_avg_sq"), DELETE),
        "optimizer.state[0].exp_avg_sq",
        "expected a tensor",
    ),
    ("scheduler-empty", put(("scheduler",), {}), "scheduler.last_epoch", "expected an integer, got None"),
    (
        "scheduler-last-epoch-str",
        put(("scheduler", "last_epoch"), "x"),
        "scheduler.last_epoch",
        "expected an integer, got 'x'",
    ),
    (
        "scheduler-step-count-float",
        put(("scheduler", "_step_count"), 2.0),
        "scheduler._step_count",
        "expected an integer, got 2.0",
    ),
    ("scheduler-base-lrs-empty", put(("scheduler", "base_lrs"), []), "scheduler.base_lrs", "finite learning rates"),
    (
        "scheduler-last-lr-nan",
        put(("scheduler", "_last_lr"), [float("nan")]),
        "scheduler._last_lr",
        "finite learning rates",
    ),
    ("scheduler-no-lambdas", put(("scheduler", "lr_lambdas"), DELETE), "scheduler.lr_lambdas", "expected a list"),
    ("rng-python-length", put(("rng", "python"), py_rng_short), "rng.python", "625 words"),
    ("rng-numpy-keys-shape", put(("rng", "numpy", "keys"), lambda t: t[:600]), "rng.numpy.keys", "shape [624]"),
    ("rng-numpy-keys-range", put(("rng", "numpy", "keys"), lambda t: t - 2**40), "rng.numpy.keys", "[0, 2**32)"),
    ("rng-torch-float", put(("rng", "torch"), lambda t: t.float()), "rng.torch", "uint8 tensor"),
    ("state-h-width", state_width(16), "run_state.state_h", "hidden size 16, the policy's is 32"),
    ("state-h-nan", put(("run_state", "state_h"), with_nan), "run_state.state_h", "NaN"),
    (
        "episode-start-float",
        put(("run_state", "episode_start"), lambda t: t.float()),
        "run_state.episode_start",
        "bool",
    ),
    ("actions-shape", put(("run_state", "actions"), lambda t: t[:, :3]), "run_state.actions", "shape [32, 4]"),
    ("num-agents-odd", put(("run_state", "num_agents"), 31), "run_state.num_agents", "even integer"),
    ("engines-not-bytes", put(("run_state", "env", "engines"), ["EMBSTATE"]), "run_state.env.engines", "bytes"),
    (
        "env-buffers-empty",
        put(("run_state", "env", "buffers"), {}),
        "run_state.env.buffers",
        "missing observations, masks, rewards, terminals, truncations",
    ),
    (
        "env-buffers-no-masks",
        put(("run_state", "env", "buffers", "masks"), DELETE),
        "run_state.env.buffers",
        "missing masks",
    ),
    # values that pass a type check but would crash Adam or the LR scheduler mid-training
    ("step-negative", put(("optimizer", "state", 0, "step"), lambda t: t * 0 - 1), "optimizer.state[0].step", ">= 0"),
    (
        "exp-avg-0d",
        put(("optimizer", "state", 0, "exp_avg"), lambda t: t.sum()),
        "optimizer.state[0].exp_avg",
        "shape []",
    ),
    ("lr-huge", put(("optimizer", "param_groups", 0, "lr"), 1e300), "optimizer.param_groups[0].lr", "invalid value"),
    ("lr-lambdas-int", put(("scheduler", "lr_lambdas"), [5]), "scheduler.lr_lambdas", "none or dicts"),
    ("base-lrs-two", put(("scheduler", "base_lrs"), [0.1, 0.2]), "scheduler.base_lrs", "1 parameter groups"),
]


@pytest.mark.parametrize("name, edit, field, detail", param_cases(RESUME_ONLY))
def test_damaged_run_state_is_refused_by_an_exact_resume_naming_the_field(
    trained, tmp_path, capsys, name, edit, field, detail
):
    bad = tampered(trained, tmp_path / "model_smoke_000001.pt", edit)
    base = tmp_path / "exp"
    msg = refused_by_resume(capsys, base, bad, "--resume-load-optimizer")
    assert str(bad) in msg and f"field {field}:" in msg and detail in msg, msg
    assert not run_dirs(base), "a refused resume leaves no run directory"
    with pytest.raises(CheckpointError, match=re.escape(f"field {field}:")):
        load_checkpoint(bad, run_state=True)


def test_missing_run_state_says_to_resume_without_the_optimizer(trained, tmp_path, capsys):
    bad = tampered(trained, tmp_path / "policy_only.pt", put(("optimizer",), DELETE))
    msg = refused_by_resume(capsys, tmp_path / "exp", bad, "--resume-load-optimizer")
    assert "missing" in msg and "resume it without --resume-load-optimizer" in msg
    assert load_checkpoint(bad).global_step == 512, "without run_state=True the weights still load"


def league_state(**changes) -> dict:
    cfg = load_config(SMOKE, [])
    return dict(
        LeagueManager(
            cfg.league, None, device=torch.device("cpu"), runner=EMBERFRONT_RUNNER, game=EMBERFRONT
        ).state_dict(),
        **changes,
    )


@pytest.mark.parametrize("exact", [False, True], ids=["weights-only", "load-optimizer"])
@pytest.mark.parametrize(
    "league, field",
    [
        ({"manager": "junk"}, "league.manager"),
        ({}, "league.manager"),
        ({"manager": {"version": 99}}, "league.manager"),
    ],
    ids=["manager-str", "manager-missing", "version-unknown"],
)
def test_damaged_league_state_is_refused_by_a_league_resume(trained, tmp_path, capsys, exact, league, field):
    bad = tampered(trained, tmp_path / "model_smoke_000001.pt", put(("league",), league))
    base = tmp_path / "exp"
    extra = ["--league-enable", *(["--resume-load-optimizer"] if exact else [])]
    msg = refused_by_resume(capsys, base, bad, *extra)
    assert str(bad) in msg and f"field {field}" in msg, msg
    assert not run_dirs(base), "the run directory made while setting up is removed again"


# ---- 2. damaged zip member names -------------------------------------------------------------------
def name_offsets(data: bytes, member: str) -> dict[str, int]:
    """Where `member`'s name bytes start in its local file header and in its central-directory entry."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(member)
    local = info.header_offset + 30
    assert data[local : local + len(member)] == member.encode()
    pos = data.find(b"PK\x01\x02")
    while pos >= 0:
        (n,) = struct.unpack_from("<H", data, pos + 28)
        if data[pos + 46 : pos + 46 + n] == member.encode():
            return {"local": local, "central": pos + 46}
        pos = data.find(b"PK\x01\x02", pos + 4)
    raise AssertionError(f"{member} not in the central directory")


@pytest.mark.parametrize("byte", [0xFF, None], ids=["invalid-utf8", "other-ascii"])
@pytest.mark.parametrize("where", ["local", "central"])
@pytest.mark.parametrize("member", ["archive/data.pkl", "archive/byteorder", "archive/data/0"])
def test_flipped_byte_in_a_zip_member_name_is_refused_naming_the_file(trained, tmp_path, capsys, member, where, byte):
    data = bytearray(trained.read_bytes())
    at = name_offsets(bytes(data), member)[where] + len("archive/")  # inside the name proper
    data[at] = byte if byte is not None else data[at] ^ 0x01
    bad = tmp_path / "model_smoke_000001.pt"
    bad.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=re.escape(str(bad)) + ".*(corrupted|truncated)"):
        load_checkpoint(bad)
    base = tmp_path / "exp"
    resume_msg = refused_by_resume(capsys, base, bad, "--resume-load-optimizer")
    eval_msg = refused_by_evaluate(capsys, str(bad))
    assert str(bad) in resume_msg and resume_msg == eval_msg
    assert not base.exists()


# ---- 3. pickles that would run code -------------------------------------------------------------------
class Payload:
    """Unpickles as `fn(*args)`."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def payload(kind: str, marker: Path) -> Payload:
    return {
        "os.system": Payload(os.system, (f"touch {shlex.quote(str(marker))}",)),
        "builtins.exec": Payload(builtins.exec, (f"open({str(marker)!r}, 'w').close()",)),
        "subprocess.call": Payload(subprocess.call, (["touch", str(marker)],)),
    }[kind]


PAYLOADS = ["os.system", "builtins.exec", "subprocess.call"]


def evil_file(src: Path, dst: Path, kind: str, shape: str, marker: Path) -> Path:
    evil = payload(kind, marker)
    if shape == "whole":
        torch.save(evil, dst)
        return dst
    state = torch.load(src, weights_only=True)
    if shape == "in-metrics":
        state["metrics"]["losses/value_loss"] = evil
    elif shape == "in-league":
        state["league"] = {"manager": {"members": [evil]}}
    elif shape == "as-weight":
        state["policy"][W_INF] = evil
    elif shape == "as-dict-key":
        state["metrics"] = {evil: 1.0}
    torch.save(state, dst)
    return dst


@pytest.mark.parametrize("kind", PAYLOADS)
def test_the_payloads_do_run_code_when_unpickled_without_weights_only(tmp_path, kind):
    """The control: the files below are really dangerous to unpickle fully."""
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save(payload(kind, marker), path)
    torch.load(path, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("shape", ["whole", "in-metrics", "in-league", "as-weight", "as-dict-key"])
@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_pickle_that_would_run_code_is_refused_by_every_loader(trained, tmp_path, capsys, kind, shape):
    marker = tmp_path / "PWNED"
    evil = evil_file(trained, tmp_path / "model_smoke_000001.pt", kind, shape, marker)
    hint = f"{CONVERT} {evil}"

    with pytest.raises(CheckpointError, match=re.escape(hint)) as err:
        load_checkpoint(evil)
    assert str(err.value).startswith(f"checkpoint {evil} holds more than tensors and plain values")
    base = tmp_path / "exp"
    assert hint in refused_by_resume(capsys, base, evil)
    assert hint in refused_by_resume(capsys, base, evil, "--resume-load-optimizer")
    assert not base.exists()
    assert hint in refused_by_evaluate(capsys, str(evil))
    assert hint in refused_by_evaluate(capsys, "--checkpoint", str(evil))
    assert hint in refused_by_evaluate(capsys, str(trained), "--opponent", str(evil))

    store = MemberStore(tmp_path / "league")
    config = torch.load(trained, weights_only=True)["policy_config"]
    member = {"id": "e000001", "order": 0, "step": 512, "epoch": 1, "path": str(evil), "policy_config": config}
    with pytest.raises(CheckpointError, match=re.escape(hint)):  # refused before it is adopted
        store.load_state_dict({"members": [member], "next_order": 1, "retired": {}})
    assert not list((tmp_path / "league" / "members").iterdir())
    # the converter allows numpy's types and nothing else: it refuses the file too
    capsys.readouterr()
    assert checkpoint_cli.main(["convert", str(evil)]) == 2
    assert "no code runs from a checkpoint" in capsys.readouterr().err
    assert not evil.with_name(evil.stem + ".safe.pt").exists()
    assert not marker.exists(), "nothing in the file ran"


def test_a_league_resume_naming_an_evil_member_file_is_refused(trained, tmp_path, capsys):
    """The league state of a checkpoint names member files: the frozen pool loads them through
    the same safe path, so a planted member file runs nothing either."""
    marker = tmp_path / "PWNED"
    evil = evil_file(trained, tmp_path / "e000001.pt", "os.system", "whole", marker)
    config = torch.load(trained, weights_only=True)["policy_config"]
    member = {"id": "e000001", "order": 0, "step": 512, "epoch": 1, "path": str(evil), "policy_config": config}
    manager = league_state(members=[member], next_order=1)
    resumed = tampered(trained, tmp_path / "model_smoke_000001.pt", put(("league",), {"manager": manager}))
    base = tmp_path / "exp"
    msg = refused_by_resume(capsys, base, resumed, "--league-enable")
    assert f"checkpoint {evil} holds more than tensors" in msg and f"{CONVERT} {evil}" in msg
    assert not run_dirs(base) and not marker.exists()


# ---- 4. converting older checkpoints --------------------------------------------------------------------
def older_style(keys_dtype):
    def edit(s):
        s["rng"]["numpy"]["keys"] = s["rng"]["numpy"]["keys"].numpy().astype(keys_dtype)
        s["global_step"] = np.int64(s["global_step"])
        s["health"]["entropy"] = np.float32(s["health"]["entropy"])

    return edit


@pytest.mark.parametrize("keys_dtype", [np.int64, np.uint32], ids=["int64-keys", "uint32-keys"])
def test_older_checkpoint_is_refused_with_the_hint_and_converts_into_a_resumable_one(
    trained, tmp_path, capsys, keys_dtype
):
    old = tampered(trained, tmp_path / "model_smoke_000001.pt", older_style(keys_dtype))
    with pytest.raises(CheckpointError, match=re.escape(f"checkpoint {old} holds more than tensors")):
        load_checkpoint(old)
    assert f"{CONVERT} {old}" in refused_by_resume(capsys, tmp_path / "exp", old, "--resume-load-optimizer")

    capsys.readouterr()
    assert checkpoint_cli.main(["convert", str(old)]) == 0
    safe = tmp_path / "model_smoke_000001.safe.pt"
    assert f"wrote {safe}" in capsys.readouterr().out
    state = torch.load(safe, weights_only=True)
    assert type(state["global_step"]) is int and state["global_step"] == 512
    assert isinstance(state["rng"]["numpy"]["keys"], torch.Tensor) and type(state["health"]["entropy"]) is float
    assert state["rng"]["numpy"]["keys"].dtype == torch.from_numpy(np.zeros(1, keys_dtype)).dtype, "kept as it was"
    original = torch.load(trained, weights_only=True)
    assert torch.equal(state["rng"]["numpy"]["keys"].to(torch.int64), original["rng"]["numpy"]["keys"])
    for name, tensor in original["policy"].items():
        assert torch.equal(state["policy"][name], tensor), name
    assert load_checkpoint(safe, run_state=True).global_step == 512

    base = tmp_path / "exp"
    rc = train_cli.main(
        [*RESUME_ARGS, "--base.experiments-dir", str(base), "--resume-checkpoint", str(safe), "--resume-load-optimizer"]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "exact continuation" in out
    (run_dir,) = run_dirs(base)
    assert torch.load(run_dir / "model_smoke_000002.pt", weights_only=True)["global_step"] == 1024


def test_a_checkpoint_of_float32_observation_rows_is_refused_saying_why_and_converts(trained, tmp_path, capsys):
    """Compact observations changed the layout hash; the features are the same, so a checkpoint
    of the float32 rows is refused with the reason and the command, and convert restamps it and
    re-encodes its env buffers' rows, so it resumes exactly."""
    (float32_layout,) = CONVERTIBLE_LAYOUTS
    compact = torch.load(trained, weights_only=True)["run_state"]["env"]["buffers"]["observations"]
    assert compact.dtype == torch.uint8

    def written_before_compact_rows(state):
        state["fingerprint"]["obs_layout_hash"] = float32_layout
        state["run_state"]["env"]["buffers"]["observations"] = torch.from_numpy(float32_rows(compact.numpy()))

    old = tampered(trained, tmp_path / "model_smoke_000001.pt", written_before_compact_rows)
    with pytest.raises(CheckpointError, match="float32 observation rows") as err:
        load_checkpoint(old)
    assert f"{CONVERT} {old}" in str(err.value)
    assert f"{CONVERT} {old}" in refused_by_resume(capsys, tmp_path / "exp", old, "--resume-load-optimizer")
    capsys.readouterr()
    assert checkpoint_cli.main(["convert", str(old)]) == 0
    safe = tmp_path / "model_smoke_000001.safe.pt"
    loaded = load_checkpoint(safe, run_state=True)
    assert loaded.state["fingerprint"]["obs_layout_hash"] == obs_layout_hash() and loaded.global_step == 512
    original = torch.load(trained, weights_only=True)
    assert all(torch.equal(loaded.state["policy"][k], v) for k, v in original["policy"].items())
    restored = loaded.state["run_state"]["env"]["buffers"]["observations"]
    assert torch.equal(restored, compact), "the env buffers' rows re-encoded exactly: the resume stays exact"
    capsys.readouterr()
    base = tmp_path / "exp"
    args = [*RESUME_ARGS, "--base.experiments-dir", str(base), "--resume-checkpoint", str(safe)]
    assert train_cli.main([*args, "--resume-load-optimizer"]) == 0
    assert "exact continuation" in capsys.readouterr().out
    # any other layout is refused as before, with no convert hint
    other = tampered(trained, tmp_path / "other.pt", put(("fingerprint", "obs_layout_hash"), "0" * 64))
    with pytest.raises(CheckpointError, match="observation layout hash differs") as err:
        load_checkpoint(other)
    assert CONVERT not in str(err.value)


def test_convert_of_a_missing_file_or_to_a_missing_folder_returns_2(trained, tmp_path, capsys):
    capsys.readouterr()
    assert checkpoint_cli.main(["convert", str(tmp_path / "missing.pt")]) == 2
    err = capsys.readouterr().err
    assert "tcgleague.checkpoint: checkpoint refused:" in err and "missing.pt not found" in err
    assert "Traceback" not in err
    assert checkpoint_cli.main(["convert", str(trained), str(tmp_path / "no" / "such" / "dir.pt")]) == 2
    assert "DST" in capsys.readouterr().err and not (tmp_path / "no").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing written"


def test_convert_to_an_explicit_destination(trained, tmp_path):
    dst = tmp_path / "converted.pt"
    assert checkpoint_cli.main(["convert", str(trained), str(dst)]) == 0
    assert load_checkpoint(dst).global_step == 512


def test_convert_never_overwrites_a_file(trained, tmp_path, capsys):
    """Not even its source: a failed conversion must not cost the user the file they had."""
    copy = tmp_path / "model_smoke_000001.pt"
    copy.write_bytes(trained.read_bytes())
    other = tmp_path / "other.pt"
    other.write_bytes(b"keep me")
    for dst in (copy, other):
        capsys.readouterr()
        assert checkpoint_cli.main(["convert", str(copy), str(dst)]) == 2
        assert "exists" in capsys.readouterr().err
    assert copy.read_bytes() == trained.read_bytes() and other.read_bytes() == b"keep me"


# ---- 5. nothing malformed is ever written ------------------------------------------------------------------
@pytest.mark.parametrize(
    "damage, field",
    [
        (put(("policy", W_NAN), with_nan), f"policy.{W_NAN}"),
        (put(("policy", W_INF), with_inf), f"policy.{W_INF}"),
        (put(("health", "entropy"), float("nan")), "health.entropy"),
        (put(("run_state", "state_c"), with_nan), "run_state.state_c"),
    ],
    ids=["weight-nan", "weight-inf", "health-nan", "lstm-state-nan"],
)
@pytest.mark.parametrize("writer", ["write_checkpoint", "save_checkpoint"])
def test_writing_a_damaged_state_is_refused_and_leaves_the_folder_as_it_was(trained, tmp_path, writer, damage, field):
    state = torch.load(trained, weights_only=True)
    config = state.pop("config")
    for key in ("format", "format_version", "fingerprint", "created"):
        state.pop(key)
    damage(state)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    previous = run_dir / "model_smoke_000001.pt"  # a good file already at the target stays as it was
    previous.write_bytes(trained.read_bytes())
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    with pytest.raises(ValueError, match=rf"refusing to write checkpoint .*model_smoke_000001\.pt.*field {field}:"):
        if writer == "write_checkpoint":
            write_checkpoint(previous, state, config)
        else:
            save_checkpoint(run_dir, "smoke", state, config, max_checkpoints=1)
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before, "no file, temp file or sidecar written"


def test_a_league_member_with_a_nan_weight_is_never_written(trained, tmp_path):
    state = torch.load(trained, weights_only=True)
    put(("policy", W_NAN), with_nan)(state)
    weights = state["policy"]
    with pytest.raises(ValueError, match=f"field policy.{W_NAN}:"):
        save_policy(tmp_path / "e000001.pt", weights, state["policy_config"], {}, 512, 1, EMBERFRONT)
    assert list(tmp_path.iterdir()) == []


# ---- 6. engine state -----------------------------------------------------------------------------------------
HEADER = 24  # magic, version, num_games, sizeof(Game), reserved
# EpisodeStat ends the Game struct: winner, first_player, decisions, turns, truncated, deck[2],
# action_counts[2][n_action_types] (int32 each), so deck[0] is this many bytes before the end.
STAT_DECK_FROM_END = 4 * 2 * LAYOUT["n_action_types"] + 8


def played_env(num_games: int = 4, steps: int = 30, seed: int = 9):
    env = TCGEnv(num_games=num_games, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        obs, *_ = env.step(random_actions(obs, rng))
    return env, obs.copy(), env.masks.copy()


def game_size(state: bytes, num_games: int) -> int:
    size = (len(state) - HEADER) // num_games
    assert struct.unpack_from("<8s4I", state)[3] == size
    return size


@pytest.mark.parametrize("game", [0, 3])
@pytest.mark.parametrize("fill", [0x7F, 0x80, 0xFF])
def test_engine_state_with_a_garbage_game_is_rejected_and_changes_nothing(game, fill):
    env, _, _ = played_env()
    current = env.engine.get_state()
    rng = np.random.default_rng(1)
    obs = env.observations
    for _ in range(25):  # another, valid state whose other games differ from the current ones
        obs, *_ = env.step(random_actions(obs, rng))
    other = bytearray(env.engine.get_state())
    env.engine.set_state(current)
    size = game_size(current, 4)
    other[HEADER + game * size : HEADER + (game + 1) * size] = bytes([fill]) * size
    with pytest.raises(ValueError, match=rf"engine state rejected: game {game}: field \w+"):
        env.engine.set_state(bytes(other))
    assert env.engine.get_state() == current, "no game of a rejected state is applied"


LEGAL_MISMATCH = "its legal list is not the one its position gives"


def test_every_out_of_range_byte_of_a_game_is_rejected_naming_its_field():
    """Sweeps a game byte by byte with large positive and negative values: what is rejected names
    game 1 and either a field (the counts, card ids, seats and the episode record are all among
    those named) or a legal list its position does not give."""
    env, _, _ = played_env()
    state = env.engine.get_state()
    size = game_size(state, 4)
    named: dict[str, int] = {}
    for value in (0x7F, 0x80):
        for k in range(size):
            b = bytearray(state)
            b[HEADER + size + k] = value
            try:
                env.engine.set_state(bytes(b))
            except ValueError as err:
                m = re.fullmatch(r"engine state rejected: game (\d+): (?:field (.+) is out of range|(.+))", str(err))
                assert m and m[1] == "1" and m[3] in (None, LEGAL_MISMATCH), str(err)
                named[m[2] or "legal"] = named.get(m[2] or "legal", 0) + 1
                assert env.engine.get_state() == state
            else:
                env.engine.set_state(state)
    fields = {name.split(" ")[0] for name in named}
    assert {
        "phase",
        "result",
        "n_legal",
        "hand_count",
        "deck_count",
        "discard_count",
        "deck_id",
        "hand",
        "deck",
        "discard",
        "units",
        "pending",
        "stat.deck",
        "stat",
        "legal",
    } <= fields, named


FUZZ = textwrap.dedent(
    """
    import numpy as np
    from tcgleague.games.emberfront.bots import greedy_actions, random_actions
    from tcgleague.games.emberfront.env import IllegalActionError, TCGEnv

    env = TCGEnv(num_games=4, seed=9)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, *_ = env.step(random_actions(obs, rng))
    state, saved_obs, saved_masks = env.engine.get_state(), obs.copy(), env.masks.copy()
    fuzz = np.random.default_rng(2024)
    accepted = rejected = illegal = 0
    for trial in range(200):
        b = bytearray(state)
        at = 24 + int(fuzz.integers(len(state) - 24))
        b[at] = (b[at] + int(fuzz.integers(1, 256))) % 256
        try:
            env.engine.set_state(bytes(b))
        except ValueError as err:
            assert str(err).startswith("engine state rejected"), err
            assert env.engine.get_state() == state, f"trial {trial}: a rejected state changed the engine"
            rejected += 1
            continue
        accepted += 1
        env.observations[:] = saved_obs
        env.masks[:] = saved_masks
        o = env.observations
        try:
            for step in range(5):
                o, *_ = env.step(greedy_actions(env) if step % 2 else random_actions(o, rng))
                for g in range(4):
                    env.render(g)
        except IllegalActionError:
            illegal += 1
        env.engine.set_state(state)
    print("FUZZ-OK", accepted, rejected, illegal)
    """
)


def test_fuzzed_engine_states_are_rejected_or_play_on_without_crashing():
    """200 single-byte changes: set_state raises ValueError (the engine unchanged) or accepts, and
    an accepted state steps, searches (greedy) and renders. In a subprocess: a memory error must
    fail this test, not kill the test run."""
    proc = subprocess.run([sys.executable, "-c", FUZZ], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode} (negative: killed by a signal)\n{proc.stderr[-3000:]}"
    counts = re.search(r"FUZZ-OK (\d+) (\d+) (\d+)", proc.stdout)
    assert counts, proc.stdout
    accepted, rejected, _ = map(int, counts.groups())
    assert accepted >= 20 and rejected >= 20, "the fuzz reaches both outcomes"


# EpisodeStat, the episode record read back by name when a game ends (env.episode_info):
# int32 offsets from its winner field; deck[0..1] index the deck names.
STAT_FIELDS = {"winner": 0, "first_player": 1, "deck0": 5, "deck1": 6}


@pytest.mark.parametrize(
    "stat_field, value, named",
    [
        ("deck0", 1000, "stat.deck"),
        ("deck0", -1, "stat.deck"),
        ("deck1", None, "stat.deck"),  # one past the last deck
        ("winner", 3, "stat"),
        ("winner", -2, "stat"),
        ("first_player", 2, "stat"),
    ],
)
def test_engine_state_with_an_episode_record_out_of_range_is_rejected(stat_field, value, named):
    env = TCGEnv(num_games=1, seed=3)
    env.reset()
    env.set_deal(0, 11, 2, 1)
    state = env.engine.get_state()
    winner_at = len(state) - STAT_DECK_FROM_END - 4 * STAT_FIELDS["deck0"]
    winner, first_player, *_, deck0, deck1 = struct.unpack_from("<7i", state, winner_at)
    if (winner, deck0, deck1) != (-1, 2, 1) or first_player not in (0, 1):
        raise RuntimeError("the test's Game layout assumption (EpisodeStat at the end) no longer holds")
    value = len(env.pool.deck_names) if value is None else value
    bad = bytearray(state)
    struct.pack_into("<i", bad, winner_at + 4 * STAT_FIELDS[stat_field], value)
    with pytest.raises(ValueError, match=re.escape(f"engine state rejected: game 0: field {named} is out of range")):
        env.engine.set_state(bytes(bad))
    assert env.engine.get_state() == state, "a rejected state changes nothing"
    env.engine.set_state(state)  # the control: the untouched record is accepted


def test_resume_with_a_rejected_engine_state_is_refused_unless_fresh_deals_are_accepted(trained, tmp_path, capsys):
    """--resume-load-optimizer asks for an exact continuation: a damaged game (its engine state
    rejected) refuses the checkpoint with one line naming the game and field, and writes nothing;
    with --resume-accept-fresh-deals the games restart from fresh deals, with a warning."""

    def garble_game_0(s):
        blob = bytearray(s["run_state"]["env"]["engines"][0])
        size = game_size(bytes(blob), 16)
        blob[HEADER : HEADER + size] = b"\x7f" * size
        s["run_state"]["env"]["engines"][0] = bytes(blob)

    path = tampered(trained, tmp_path / "model_smoke_000001.pt", garble_game_0)
    base = tmp_path / "exp"
    resume = [*RESUME_ARGS, "--base.experiments-dir", str(base), "--resume-checkpoint", str(path)]
    capsys.readouterr()
    assert train_cli.main([*resume, "--resume-load-optimizer"]) == 2
    err = capsys.readouterr().err
    assert "engine state rejected: game 0: field" in err and "--resume-accept-fresh-deals" in err
    assert "Traceback" not in err and not run_dirs(base), "a refused resume leaves no run directory"
    rc = train_cli.main([*resume, "--resume-load-optimizer", "--resume-accept-fresh-deals"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "engine state not restored (engine state rejected: game 0: field" in out
    assert "exact continuation" not in out
    (run_dir,) = run_dirs(base)
    assert torch.load(run_dir / "model_smoke_000002.pt", weights_only=True)["global_step"] == 1024
