"""Checkpoints, resume and evaluate_checkpoint: exact continuation, refusals that say
what differs, source-hash warnings, integrity errors, atomic saves, retention, compiled-model
keys, the post-resume health probe, and evaluate_checkpoint's JSON report. (The duplicate format
with a trained policy: test_match.py; the Wilson interval: test_scoring.py.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.state_compare import assert_same
from helpers.wilson import wilson_by_hand
from tcgleague import evaluate_checkpoint as eval_cli
from tcgleague import train as train_cli
from tcgleague.build import build_trainer
from tcgleague.checkpoint import CheckpointError, latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint
from tcgleague.config import load_config
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import PASS
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.train import checkpoint_writer
from tcgleague.trainer import Trainer

SMOKE = "configs/smoke.ini"
# Anneals that move every epoch, so "same anneal values" means something.
ANNEALS = [
    "--policy.subaction-temperature-initial",
    "1.5",
    "--policy.subaction-temperature-final",
    "1.0",
    "--policy.smoothing-eps-initial",
    "0.1",
    "--policy.smoothing-eps-final",
    "0.0",
    "--train.ent-coef-initial",
    "0.02",
    "--train.ent-coef-final",
    "0.0",
]
COMMON = ["--config", SMOKE, "--train.eval-interval", "0", "--train.checkpoint-interval", "1", *ANNEALS]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def run_dirs(base: Path) -> set[Path]:
    return {p for p in base.iterdir() if p.is_dir()}


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """A smoke run (4 epochs) straight through, checkpointing every epoch."""
    base = tmp_path_factory.mktemp("exp")
    assert train_cli.main([*COMMON, "--base.experiments-dir", str(base)]) == 0
    (run_dir,) = run_dirs(base)
    return base, run_dir


def ckpt(run_dir: Path, epoch: int) -> Path:
    return run_dir / f"model_smoke_{epoch:06d}.pt"


def save(trainer: Trainer, run_dir: Path, max_checkpoints: int) -> Path:
    """The trainer's state as run `smoke`'s checkpoint for its current epoch, with retention."""
    return save_checkpoint(run_dir, "smoke", trainer.state_dict(), trainer.cfg.to_dict(), max_checkpoints)


def tampered(src: Path, dst: Path, edit) -> Path:
    state = torch.load(src, weights_only=True)
    edit(state)
    torch.save(state, dst)
    return dst


# ---- exact resume ----------------------------------------------------------------------------
def test_resume_with_optimizer_is_bit_identical_to_straight_training(straight, capsys):
    base, run_a = straight
    capsys.readouterr()
    rc = train_cli.main(
        [
            *COMMON,
            "--base.experiments-dir",
            str(base),
            "--resume-checkpoint",
            str(ckpt(run_a, 2)),
            "--resume-load-optimizer",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0
    (run_b,) = run_dirs(base) - {run_a}
    assert sorted(p.name for p in run_b.glob("*.pt")) == ["model_smoke_000003.pt", "model_smoke_000004.pt"], (
        "a resumed run writes into its own new run directory, continuing the epoch numbering"
    )
    assert "exact continuation" in out.out and "health probe ok" in out.out
    assert "WARNING" not in out.out + out.err, "a healthy resume prints no warning"
    a = torch.load(ckpt(run_a, 4), weights_only=True)
    b = torch.load(ckpt(run_b, 4), weights_only=True)
    assert b["resumed_from"] == str(ckpt(run_a, 2)) and a["resumed_from"] is None
    assert a["global_step"] == b["global_step"] == 2048 and a["epoch"] == b["epoch"] == 4
    for key in (
        "policy",
        "optimizer",
        "scheduler",
        "anneal",
        "anneal_offset",
        "sampling_params",
        "rng",
        "run_state",
        "health",
        "policy_config",
        "config",
    ):
        assert_same(a[key], b[key], key)
    assert a["anneal"]["sampler/subaction_temperature"] == pytest.approx(1.0)  # annealed to the end
    assert_same(
        {k: v for k, v in a["metrics"].items() if not k.startswith("perf/")},
        {k: v for k, v in b["metrics"].items() if not k.startswith("perf/")},
        "metrics",
    )
    # the epoch-3 metrics (first after resume) carry the health probe; the anneals match too
    lines_a = [json.loads(x) for x in (run_a / "metrics.jsonl").read_text().splitlines()]
    lines_b = [json.loads(x) for x in (run_b / "metrics.jsonl").read_text().splitlines()]
    assert {"resume/entropy", "resume/noop_rate", "resume/stored_entropy", "resume/stored_noop_rate"} <= set(lines_b[0])
    assert lines_b[0]["resume/stored_entropy"] == pytest.approx(lines_a[1]["sampler/rollout_entropy"])
    for key in ("sampler/subaction_temperature", "sampler/smoothing_eps", "anneal/ent_coef", "losses/policy_loss"):
        assert [x[key] for x in lines_a[2:]] == [x[key] for x in lines_b], key


def test_serial_backend_resume_is_exact(tmp_path):
    """The same through the pufferlib Serial backend (two env objects), in fresh objects."""
    over = [
        "--train.eval-interval",
        "0",
        "--vec.backend",
        "serial",
        "--vec.num-envs",
        "2",
        "--env.num-games",
        "8",
        *ANNEALS,
    ]
    cfg = load_config(SMOKE, over)
    run_dir = tmp_path / "smoke_a"
    run_dir.mkdir()
    a = build_trainer(cfg, run_dir)
    a.train_epoch()
    path = checkpoint_writer(run_dir, cfg)(a)  # what train.py hands the trainer as checkpoint_fn
    assert path == ckpt(run_dir, 1)
    a.train_epoch()
    b = build_trainer(load_config(SMOKE, over), tmp_path / "smoke_b")
    apply_resume(b, load_checkpoint(path, b.policy.config), ResumeOptions(str(path), load_optimizer=True))
    b.train_epoch()
    assert len(b.env.state_dict()["engines"]) == 2
    assert_same(a.policy.state_dict(), b.policy.state_dict(), "policy")
    assert_same(a.learner.optimizer.state_dict(), b.learner.optimizer.state_dict(), "optimizer")
    assert_same(a.learner.generator.get_state(), b.learner.generator.get_state(), "generator")
    assert_same(a.env.state_dict()["engines"], b.env.state_dict()["engines"], "engines")
    assert a.global_step == b.global_step == 1024
    assert torch.equal(a.learner.actor.state.h, b.learner.actor.state.h) and torch.equal(
        a.learner.actor.state.c, b.learner.actor.state.c
    )


def test_weights_only_resume_continues_anneals_by_offset_and_resets_critic(straight, tmp_path, capsys):
    _, run_a = straight
    path = ckpt(run_a, 2)
    stored = torch.load(path, weights_only=True)
    for extra, reset in ((["--env.reward-shaping", "0.1"], True), ([], False)):
        cfg = load_config(SMOKE, ["--train.eval-interval", "0", *ANNEALS, *extra])
        trainer = build_trainer(cfg, tmp_path)
        capsys.readouterr()
        apply_resume(trainer, load_checkpoint(path, trainer.policy.config), ResumeOptions(str(path)))
        out = capsys.readouterr().out
        assert trainer.global_step == 0 and trainer.epoch == 0
        assert trainer.anneal_offset == 1024 and "anneal_offset = 1024" in out
        assert trainer.apply_anneals() == pytest.approx(stored["anneal"])
        sd = trainer.policy.state_dict()
        value_same = all(torch.equal(sd[k], v) for k, v in stored["policy"].items() if k.startswith("value_head"))
        assert value_same is not reset
        assert all(torch.equal(sd[k], v) for k, v in stored["policy"].items() if not k.startswith("value_head"))
        assert ("value head re-initialised" in out) is reset


# ---- refusals ---------------------------------------------------------------------------------
def refusal(capsys, argv_train, argv_eval) -> tuple[str, str]:
    capsys.readouterr()
    assert train_cli.main(argv_train) == 2
    resume_err = capsys.readouterr().err
    assert eval_cli.main(argv_eval) == 2
    eval_err = capsys.readouterr().err
    return resume_err, eval_err


def test_layout_mismatch_is_refused_by_resume_and_evaluation_with_the_same_message(straight, tmp_path, capsys):
    _, run_a = straight

    def edit(s):
        s["fingerprint"]["obs_layout_hash"] = "abc" + "0" * 61

    bad = tampered(ckpt(run_a, 1), tmp_path / "model_smoke_000001.pt", edit)
    resume_err, eval_err = refusal(
        capsys,
        [*COMMON, "--base.experiments-dir", str(tmp_path / "exp"), "--resume-checkpoint", str(bad)],
        [str(bad), "--episodes", "2"],
    )
    assert "observation layout hash differs: checkpoint abc" in resume_err and str(bad) in resume_err
    assert resume_err.split("checkpoint refused: ")[1] == eval_err.split("checkpoint refused: ")[1]
    assert not (tmp_path / "exp").exists(), "a refused resume creates no run directory"


def test_architecture_mismatch_names_the_field(straight, tmp_path, capsys):
    _, run_a = straight
    capsys.readouterr()
    rc = train_cli.main(
        [
            *COMMON,
            "--base.experiments-dir",
            str(tmp_path),
            "--policy.hidden-size",
            "64",
            "--resume-checkpoint",
            str(ckpt(run_a, 1)),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "architecture differs: hidden_size 32 vs 64" in err


def test_changed_source_warns_and_strict_refuses_naming_the_file(straight, tmp_path, capsys):
    _, run_a = straight

    def edit(s):
        s["fingerprint"]["source_hashes"]["games/emberfront/sampler.py"] = "0" * 64

    path = tampered(ckpt(run_a, 1), tmp_path / "model_smoke_000001.pt", edit)
    loaded = load_checkpoint(path)
    assert len(loaded.warnings) == 1 and "games/emberfront/sampler.py" in loaded.warnings[0]
    assert "WARNING" in capsys.readouterr().out
    with pytest.raises(CheckpointError, match=r"--resume-strict.*games/emberfront/sampler\.py"):
        load_checkpoint(path, strict=True)
    resume_err, eval_err = refusal(
        capsys,
        [*COMMON, "--base.experiments-dir", str(tmp_path), "--resume-checkpoint", str(path), "--resume-strict"],
        [str(path), "--strict", "--episodes", "2"],
    )
    assert "games/emberfront/sampler.py" in resume_err
    assert resume_err.split("checkpoint refused: ")[1] == eval_err.split("checkpoint refused: ")[1]


def test_legacy_checkpoint_without_fingerprint_warns_and_strict_refuses(straight, tmp_path):
    _, run_a = straight

    def strip(s):
        for key in ("format", "format_version", "fingerprint", "run_state", "rng"):
            del s[key]

    path = tampered(ckpt(run_a, 1), tmp_path / "legacy.pt", strip)
    loaded = load_checkpoint(path)
    assert "no fingerprint" in loaded.warnings[0] and loaded.global_step == 512
    with pytest.raises(CheckpointError, match="--resume-strict.*no fingerprint"):
        load_checkpoint(path, strict=True)


def test_truncated_and_corrupted_files_give_a_clear_error_naming_the_file(straight, tmp_path, capsys):
    _, run_a = straight
    data = ckpt(run_a, 1).read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    corrupted = tmp_path / "corrupted.pt"
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match=re.escape(str(truncated)) + ".*truncated or corrupted"):
        load_checkpoint(truncated)
    with pytest.raises(CheckpointError, match=re.escape(str(corrupted)) + ".*corrupted"):
        load_checkpoint(corrupted)
    with pytest.raises(CheckpointError, match="checkpoint .*missing.pt not found"):
        load_checkpoint(tmp_path / "missing.pt")
    resume_err, eval_err = refusal(
        capsys,
        [*COMMON, "--base.experiments-dir", str(tmp_path), "--resume-checkpoint", str(corrupted)],
        [str(corrupted), "--episodes", "2"],
    )
    assert str(corrupted) in resume_err and "CRC" in resume_err
    assert resume_err.split("checkpoint refused: ")[1] == eval_err.split("checkpoint refused: ")[1]


def test_latest_without_checkpoints_starts_fresh(tmp_path, capsys):
    """`--resume-checkpoint latest` is safe on a fresh run (torchrun's restarts pass it every time)."""
    args = [*COMMON, "--base.experiments-dir", str(tmp_path), "--train.total-timesteps", "512"]
    rc = train_cli.main([*args, "--resume-checkpoint", "latest", "--resume-load-optimizer"])
    assert rc == 0 and "no checkpoint model_smoke_NNNNNN.pt" in capsys.readouterr().err
    (first,) = list_checkpoints(next(tmp_path.glob("smoke_*")), "smoke")
    assert load_checkpoint(first).state["epoch"] == 1 and load_checkpoint(first).state["resumed_from"] is None


# ---- saving -----------------------------------------------------------------------------------
@pytest.fixture
def idle_trainer(tmp_path):
    """(a trainer that has not trained, its run directory <tmp_path>/smoke_run1, created)."""
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", "--base.experiments-dir", str(tmp_path)])
    run_dir = tmp_path / "smoke_run1"
    run_dir.mkdir()
    return build_trainer(cfg, run_dir), run_dir


def test_save_killed_before_rename_leaves_latest_at_the_previous_checkpoint(idle_trainer, tmp_path, monkeypatch):
    t, run_dir = idle_trainer
    t.epoch = 1
    first = save(t, run_dir, 5)
    t.epoch = 2

    def killed(src, dst):
        raise OSError("killed between write and rename")

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(OSError, match="killed"):
        save(t, run_dir, 5)
    monkeypatch.undo()
    assert latest_checkpoint(tmp_path, "smoke") == first
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([first.name, first.with_suffix(".json").name]), (
        "no temp file or partial checkpoint is left behind"
    )
    assert load_checkpoint(first).state["epoch"] == 1


def test_max_checkpoints_is_enforced_and_latest_is_the_newest(idle_trainer, tmp_path):
    t, run_dir = idle_trainer
    for epoch in range(1, 6):
        t.epoch = epoch
        save(t, run_dir, 2)
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == ["model_smoke_000004.pt", "model_smoke_000005.pt"]
    assert sorted(p.name for p in run_dir.glob("*.json")) == ["model_smoke_000004.json", "model_smoke_000005.json"]
    assert latest_checkpoint(tmp_path, "smoke").name == "model_smoke_000005.pt"
    sidecar = json.loads((run_dir / "model_smoke_000005.json").read_text())
    fp = sidecar["fingerprint"]
    assert {
        "games/emberfront/engine/rules.c",
        "games/emberfront/engine/tcg.h",
        "games/emberfront/engine/cards.json",
        "games/emberfront/policy.py",
        "games/emberfront/sampler.py",
        "trainer.py",
        "rollout.py",
        "ppo.py",
    } <= set(fp["source_hashes"])
    assert fp["obs_layout_hash"] and fp["action_space_hash"] and fp["config_hash"]
    assert set(fp["versions"]) == {"tcgleague", "torch", "python", "numpy"}


def test_compiled_model_saves_uncompiled_keys_and_loads_back(idle_trainer, tmp_path):
    t, run_dir = idle_trainer
    plain = t.policy
    t.policy = torch.compile(plain)  # lazy: nothing is compiled until it is called
    assert any(k.startswith("_orig_mod.") for k in t.policy.state_dict())
    t.epoch = 1
    path = save(t, run_dir, 5)
    keys = set(torch.load(path, weights_only=True)["policy"])
    assert keys == set(plain.state_dict()) and not any("_orig_mod" in k for k in keys)
    other = build_trainer(t.cfg, tmp_path / "other")
    with torch.no_grad():
        for p in other.policy.parameters():
            p.add_(1.0)  # so loading the weights has something to change
    other.policy = torch.compile(other.policy)
    apply_resume(other, load_checkpoint(path, other.policy._orig_mod.config), ResumeOptions(str(path)))
    assert all(torch.equal(plain.state_dict()[k], v) for k, v in other.policy._orig_mod.state_dict().items())
    # weights saved under compiled keys (torch.compile's prefix, anywhere in a key) load too

    def prefixed(s):
        s["policy"] = {"_orig_mod." + k: v for k, v in s["policy"].items()}

    loaded = load_checkpoint(tampered(path, tmp_path / "prefixed.pt", prefixed))
    assert all(torch.equal(plain.state_dict()[k], v) for k, v in loaded.policy.state_dict().items())


# ---- health probe --------------------------------------------------------------------------------
def test_collapsed_policy_triggers_the_health_warning(straight, tmp_path, capsys):
    _, run_a = straight

    def collapse(s):
        s["policy"]["ls_type.bias"][PASS] = 60.0  # PASS ~certain whenever it is legal

    path = tampered(ckpt(run_a, 2), tmp_path / "model_smoke_000002.pt", collapse)
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", *ANNEALS])
    trainer = build_trainer(cfg, tmp_path / "run")
    apply_resume(trainer, load_checkpoint(path, trainer.policy.config), ResumeOptions(str(path), True))
    capsys.readouterr()
    metrics = trainer.train_epoch()
    out = capsys.readouterr()
    assert "WARNING" in out.out and "COLLAPSED" in out.err
    assert metrics["resume/collapsed"] == 1.0 and metrics["resume/noop_rate"] > 0.9
    assert metrics["resume/stored_noop_rate"] < 0.9
    assert "resume/entropy" not in trainer.train_epoch(), "the probe runs on the first rollout only"


# ---- evaluation ------------------------------------------------------------------------------------
def test_evaluate_checkpoint_json_report(straight, tmp_path, capsys):
    _, run_a = straight
    out = tmp_path / "report.json"
    assert (
        eval_cli.main(
            [str(ckpt(run_a, 4)), "--opponent", "random", "--episodes", "60", "--seed", "3", "--json", str(out)]
        )
        == 0
    )
    r = json.loads(out.read_text())
    for key in (
        "wins",
        "losses",
        "draws",
        "winrate",
        "wilson_low",
        "wilson_high",
        "mean_length",
        "entropy",
        "noop_rate",
        "per_deck",
        "per_seat",
        "per_turn_order",
        "sampling_params",
        "global_step",
    ):
        assert key in r, key
    assert r["episodes"] == r["wins"] + r["losses"] + r["draws"] == 60
    # win rate and its 95 % Wilson interval, recomputed here from the counts (a draw is half a win)
    n, score = r["episodes"], r["wins"] + 0.5 * r["draws"]
    assert r["winrate"] == pytest.approx(score / n)
    low, high = wilson_by_hand(score, n)
    assert (r["wilson_low"], r["wilson_high"]) == pytest.approx((low, high), abs=1e-12)
    for table in ("per_deck", "per_seat", "per_turn_order"):
        for row in r[table].values():
            s = row["wins"] + 0.5 * row["draws"]
            assert row["games"] == row["wins"] + row["losses"] + row["draws"]
            assert row["winrate"] == pytest.approx(s / row["games"])
            assert (row["wilson_low"], row["wilson_high"]) == pytest.approx(wilson_by_hand(s, row["games"]), abs=1e-12)
    assert set(r["per_seat"]) == {"seat0", "seat1"} and r["per_seat"]["seat0"]["games"] == 30
    assert r["per_turn_order"]["first"]["games"] == r["per_turn_order"]["second"]["games"] == 30
    stored = torch.load(ckpt(run_a, 4), weights_only=True)["anneal"]
    assert r["sampling_params"]["subaction_temperature"] == pytest.approx(stored["sampler/subaction_temperature"])
    assert "win rate" in capsys.readouterr().out
    # another checkpoint as the opponent
    assert (
        eval_cli.main(
            [str(ckpt(run_a, 4)), "--opponent", str(ckpt(run_a, 1)), "--episodes", "8", "--argmax", "--json", str(out)]
        )
        == 0
    )
    assert json.loads(out.read_text())["opponent"] == str(ckpt(run_a, 1))
    # the flag form, --checkpoint PATH, is the same; giving it twice or not at all is an error
    assert eval_cli.main(["--checkpoint", str(ckpt(run_a, 4)), "--opponent", "random", "--episodes", "4"]) == 0
    for argv in ([], [str(ckpt(run_a, 4)), "--checkpoint", str(ckpt(run_a, 4))]):
        with pytest.raises(SystemExit):
            eval_cli.main(argv)
    assert "give the checkpoint once" in capsys.readouterr().err


# ---- engine state ------------------------------------------------------------------------------------
def test_engine_state_round_trips_and_rejects_bad_bytes():
    env = TCGEnv(num_games=4, seed=9)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    from tcgleague.games.emberfront.bots import random_actions

    for _ in range(30):
        obs, *_ = env.step(random_actions(obs, rng))
    state, saved_obs, saved_masks = env.engine.get_state(), obs.copy(), env.masks.copy()
    acts = []
    trace = []
    for _ in range(40):
        a = random_actions(obs, rng)
        acts.append(a)
        obs, rew, *_ = env.step(a)
        trace.append((obs.copy(), rew.copy()))
    env.engine.set_state(state)
    env.observations[:] = saved_obs
    env.masks[:] = saved_masks
    for a, (o, r) in zip(acts, trace):
        obs, rew, *_ = env.step(a)
        assert np.array_equal(obs, o) and np.array_equal(rew, r)
    with pytest.raises(ValueError, match="wrong length"):
        env.engine.set_state(state[:-1])
    with pytest.raises(ValueError, match="bad magic"):
        env.engine.set_state(b"X" * len(state))
    with pytest.raises(ValueError, match="num_games differs"):
        TCGEnv(num_games=3).engine.set_state(state)


def test_member_file_from_before_members_were_checkpoints_still_loads(tmp_path):
    """Old league member files ({policy, policy_config, sampling_params, step, epoch}) load through
    load_checkpoint as legacy files (weights_only, a warning), with their step as global_step."""
    from tcgleague.games.emberfront.engine.cards import load_card_pool
    from tcgleague.games.emberfront.policy import PolicyConfig, build_policy

    config = PolicyConfig(n_cards=load_card_pool().n_cards, hidden_size=32)
    policy = build_policy(config, seed=3)
    path = tmp_path / "e000020.pt"
    torch.save(
        {
            "policy": policy.state_dict(),
            "policy_config": config.to_dict(),
            "sampling_params": {},
            "step": 640,
            "epoch": 20,
        },
        path,
    )
    logged = []
    loaded = load_checkpoint(path, log=logged.append)
    assert loaded.global_step == 640 and loaded.state["fingerprint"] is None
    assert any("no fingerprint" in m for m in logged)
    for name, tensor in policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], tensor), name
    with pytest.raises(CheckpointError, match="no fingerprint"):
        load_checkpoint(path, strict=True, log=logged.append)
