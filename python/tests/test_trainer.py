"""The trainer: only a row's own decisions are stored, done rows get a fresh state, pending steps
bootstrap from the next decision's value, the logged learning rate follows the schedule, checkpoint
timing (epochs, steps, max_seconds), and a --wandb smoke run leaves an offline W&B run with the
logged keys. (The rollout buffer and GAE: test_rollout.py; PPO's update, update_epochs and the LR
schedule: test_ppo.py; recurrent.zero_rows: test_recurrent.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from helpers.trainers import SMOKE, collect, smoke_trainer
from helpers.wandb_records import read_wandb_records
from tcgleague import train as train_cli
from tcgleague import trainer as trainer_module
from tcgleague.checkpoint import list_checkpoints
from tcgleague.games.emberfront.engine import LAYOUT
from tcgleague.games.emberfront.layout import ACTION_WIDTH, OBS_BYTES, OBS_SIZE, features_np
from tcgleague.ppo import lr_lambda

COUNT = LAYOUT["legal_count_offset"]
SEAT = LAYOUT["global_offset"] + LAYOUT["global_features"]["seat"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


class RecordingLogger:
    def __init__(self):
        self.records: list[tuple[int, dict]] = []

    def log(self, metrics: dict, step: int) -> None:
        self.records.append((step, dict(metrics)))


# ---- rollout ------------------------------------------------------------------------------
def test_the_rollout_reports_its_env_steps_time_and_traffic():
    """perf/*: the env steps of the epoch (batch_size over one decision per game in self-play),
    the host seconds in the env, and the learner's upload (every game's observation and its
    row, slot and start flag as int32) and download (the actions, int32) per step: a third of
    what float32 rows of the same features took."""
    trainer = smoke_trainer()
    stats = collect(trainer)
    games, t = trainer.env.num_games, trainer.cfg.train
    assert stats["perf/env_steps"] == t.batch_size / games and stats["perf/env_seconds"] > 0
    assert stats["perf/opponents_act_seconds"] >= 0
    assert stats["perf/bytes_up_per_step"] == games * (OBS_BYTES + 3 * 4) + (-games * OBS_BYTES) % 4
    assert stats["perf/bytes_up_per_step"] * 3 <= games * (OBS_SIZE + 3) * 4, "a third of the float32 rows' bytes"
    assert stats["perf/bytes_down_per_step"] == games * ACTION_WIDTH * 4


def test_only_deciding_rows_are_stored():
    trainer = smoke_trainer()
    seen_masks = []
    step = trainer.env.step

    def spy(actions):
        seen_masks.append(trainer.env.masks.copy())
        return step(actions)

    trainer.env.step = spy
    collect(trainer)
    buf = trainer.learner.buffer
    assert buf.size == trainer.cfg.train.batch_size
    # one decision per game per env step, each from the row that was deciding
    assert len(seen_masks) * trainer.env.num_games == buf.size
    stored = buf.rows.reshape(len(seen_masks), trainer.env.num_games)
    for masks, rows in zip(seen_masks, stored):
        assert set(rows.tolist()) == set(np.flatnonzero(masks).tolist())
    obs = features_np(buf.obs[: buf.capacity].numpy())
    assert (obs[:, COUNT] > 0).all(), "every stored step has a legal list: it was the row's own decision"
    assert (obs[:, SEAT] == buf.rows % 2).all(), "each step is observed from its own seat"


# ---- recurrent state -------------------------------------------------------------------------
def test_done_rows_get_fresh_state_in_rollout():
    trainer = smoke_trainer()
    collect(trainer)
    buf = trainer.learner.buffer
    starts = buf.episode_start[: buf.size]
    assert starts.any()
    state_h = buf.state_h[: buf.size]
    assert torch.count_nonzero(state_h[torch.from_numpy(starts)]) == 0
    assert torch.count_nonzero(state_h[torch.from_numpy(~starts)]) > 0


def pending_steps(buf) -> np.ndarray:
    return ~buf.has_next & ~buf.terminal & ~buf.truncated


@pytest.mark.parametrize("league", [False, True])
def test_pending_steps_bootstrap_from_the_value_of_the_next_decision(league):
    """Each row's last stored step of an epoch gets the value of the row's next decision: the
    one dropped at the epoch's last step (league), or the one it is taking now (its value as the
    next epoch's first decision computes it). Rows waiting for the opponent are masked."""
    overrides = ["--league.enable", "true", "--league.activate-after-steps", "0"] if league else []
    trainer = smoke_trainer(None, *overrides)
    decisions = []
    decide = trainer.learner.actor.decide

    def spy(obs, rows, *args, **kwargs):
        d = decide(obs, rows, *args, **kwargs)
        decisions.append(dict(zip(rows.tolist(), d.value.tolist())))
        return d

    trainer.learner.actor.decide = spy
    collect(trainer)
    buf = trainer.learner.buffer
    pending, boot = pending_steps(buf), buf.bootstrapped
    masked = pending & ~boot
    assert boot.any() and masked.any() and not (boot & ~pending).any()
    deciding = set(np.flatnonzero(trainer.env.masks).tolist())
    given = {int(buf.rows[s]): buf.next_value[s].item() for s in np.flatnonzero(boot)}
    dropped = {r: v for r, v in given.items() if r not in deciding}
    assert all(v == pytest.approx(decisions[-1][r], abs=1e-6) for r, v in dropped.items())
    assert bool(dropped) == league, "only the league's last step has more learner rows than room"
    assert not set(buf.rows[masked].tolist()) & deciding, "a deciding row's pending step is never masked"
    if league:
        return
    assert masked.sum() <= trainer.env.num_games, "self-play: at most the waiting seat of each game"
    batch = buf.pack(0.99, 0.95)
    assert batch.mask.sum().item() == buf.capacity - masked.sum()
    epoch_one = len(decisions)
    collect(trainer)  # no update in between: the same weights take the next epoch's first decisions
    first = decisions[epoch_one]
    assert set(first) == deciding
    assert all(v == pytest.approx(first[r], abs=1e-6) for r, v in given.items())


# ---- LR schedule ------------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant"])
def test_logged_learning_rate_follows_the_schedule(schedule):
    trainer = smoke_trainer(None, "--train.lr-schedule", schedule, "--train.learning-rate", "1e-3")
    trainer.logger = RecordingLogger()
    assert trainer.total_epochs == 4
    assert trainer.learner.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3), "epoch 0 trains at the full rate"
    trainer.train()
    logged = [m["train/learning_rate"] for _, m in trainer.logger.records]
    want = [1e-3 * lr_lambda(schedule, 4)(k) for k in (0, 1, 2, 3)]  # the rate each epoch's update used
    assert logged == pytest.approx(want, abs=1e-12)
    assert [m["train/epoch"] for _, m in trainer.logger.records] == [1.0, 2.0, 3.0, 4.0]
    assert [step for step, _ in trainer.logger.records] == [512, 1024, 1536, 2048]


@pytest.mark.parametrize("schedule", ["linear", "constant"])
def test_lr_scale_anneals_on_the_schedules_rate(schedule):
    """[train] lr_scale: a factor on the scheduled rate, annealed on global_step (epochs of 512
    steps: 1 up to step 512, 0.25 from 1536), applied to the optimizer each epoch and logged."""
    scale = ["--train.lr-scale-final", "0.25", "--train.lr-scale-anneal-start-step", "512"]
    scale += ["--train.lr-scale-anneal-end-step", "1536"]
    trainer = smoke_trainer(None, "--train.lr-schedule", schedule, "--train.learning-rate", "1e-3", *scale)
    trainer.logger = RecordingLogger()
    used = []
    update = trainer.update
    trainer.update = lambda params: used.append(trainer.learner.optimizer.param_groups[0]["lr"]) or update(params)
    trainer.train()
    factors = [1.0, 1.0, 0.625, 0.25]
    want = [1e-3 * lr_lambda(schedule, 4)(k) * f for k, f in enumerate(factors)]
    assert used == pytest.approx(want, abs=1e-12), "Adam steps at the schedule's rate times the factor"
    assert [m["train/learning_rate"] for _, m in trainer.logger.records] == pytest.approx(want, abs=1e-12)
    assert [m["anneal/lr_scale"] for _, m in trainer.logger.records] == pytest.approx(factors)


# ---- checkpoints ------------------------------------------------------------------------------
def test_checkpoint_due_by_epochs_and_by_steps():
    trainer = smoke_trainer(None, "--train.checkpoint-interval", "3")
    due = []
    for epoch in range(1, 8):
        trainer.epoch, trainer.global_step = epoch, 512 * epoch
        due.append(trainer.checkpoint_due())
    assert due == [False, False, True, False, False, True, False]
    trainer = smoke_trainer(None, "--train.checkpoint-interval-unit", "steps", "--train.checkpoint-interval", "700")
    due = []
    for epoch in range(1, 8):  # global steps 512 ... 3584: the epoch that crosses a multiple of 700
        trainer.epoch, trainer.global_step = epoch, 512 * epoch
        due.append(trainer.checkpoint_due())
    assert due == [False, True, True, False, True, True, True]


def test_checkpoints_every_n_steps_are_written_by_train(tmp_path):
    run_dir = tmp_path / "smoke_run"
    run_dir.mkdir()
    overrides = [
        "--train.checkpoint-interval-unit",
        "steps",
        "--train.checkpoint-interval",
        "700",
        "--train.max-checkpoints",
        "10",
    ]
    trainer = smoke_trainer(run_dir, *overrides)
    trainer.train(checkpoint_fn=train_cli.checkpoint_writer(run_dir, trainer.cfg))
    # steps after each epoch: 512, 1024 (crosses 700), 1536 (crosses 1400), 2048 (the last epoch)
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == [
        "model_smoke_000002.pt",
        "model_smoke_000003.pt",
        "model_smoke_000004.pt",
    ]
    saved = torch.load(run_dir / "model_smoke_000003.pt", weights_only=True)
    assert saved["epoch"] == 3 and saved["global_step"] == 1536


def test_max_seconds_stops_after_the_epoch_that_crosses_it_and_writes_a_final_checkpoint(tmp_path, monkeypatch):
    """A fake clock that advances 10 s per epoch: max_seconds 25 ends the run after epoch 3 of 8."""
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(trainer_module, "time", SimpleNamespace(perf_counter=lambda: clock.now))
    run_dir = tmp_path / "smoke_run"
    run_dir.mkdir()
    trainer = smoke_trainer(run_dir, "--train.total-timesteps", "4096", "--train.checkpoint-interval", "100")
    assert trainer.total_epochs == 8

    def tick(metrics):
        clock.now += 10.0
        return {}

    trainer.add_epoch_hook(tick)
    trainer.logger = RecordingLogger()
    write = train_cli.checkpoint_writer(run_dir, trainer.cfg)
    calls = []
    trainer.train(checkpoint_fn=lambda t: calls.append(write(t)), max_seconds=25.0)
    assert trainer.epoch == 3 and trainer.global_step == 3 * 512
    assert [m["perf/wall_minutes"] for _, m in trainer.logger.records] == pytest.approx([10 / 60, 20 / 60, 30 / 60])
    assert calls == [run_dir / "model_smoke_000003.pt"], "one final checkpoint, at the epoch that ran out of time"
    assert [p.name for p in list_checkpoints(run_dir, "smoke")] == ["model_smoke_000003.pt"]
    # the same run with time to spare trains to the end
    clock.now = 0.0
    trainer.train(checkpoint_fn=lambda t: calls.append(write(t)), max_seconds=1000.0)
    assert trainer.epoch == 8 and calls[-1] == run_dir / "model_smoke_000008.pt" and len(calls) == 2


# ---- the command line -----------------------------------------------------------------------
def test_wandb_smoke_run_writes_offline_run_with_logged_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    rc = train_cli.main(["--config", SMOKE, "--wandb", "--base.experiments-dir", str(tmp_path)])
    assert rc == 0
    run_dir = next(p for p in Path(tmp_path).iterdir() if p.is_dir())
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["global_step"] == 2048
    assert any("eval/winrate_vs_random" in x and "eval/winrate_vs_greedy" in x for x in lines)
    assert list(run_dir.glob("model_smoke_*.pt")) and list(run_dir.glob("model_smoke_*.json"))
    logs = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(logs) == 1
    keys = set()
    for r in read_wandb_records(logs[0]):
        if r.WhichOneof("record_type") == "history":
            keys |= {i.key or "/".join(i.nested_key) for i in r.history.item}
    for key in (
        "losses/policy_loss",
        "sampler/subaction_temperature",
        "sampler/smoothing_eps",
        "anneal/ent_coef",
        "perf/sps",
        "eval/winrate_vs_greedy",
    ):
        assert key in keys


def test_bad_config_fails_at_start_naming_the_key(tmp_path, capsys):
    rc = train_cli.main(["--config", SMOKE, "--train.learning-rat", "1e-3", "--base.experiments-dir", str(tmp_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "learning_rat" in err and "learning_rate" in err
    assert not any(Path(tmp_path).iterdir()), "a refused run creates nothing"
    rc = train_cli.main(["--config", SMOKE, "--train.minibatch-size", "200", "--base.experiments-dir", str(tmp_path)])
    assert rc == 2 and "minibatch_size" in capsys.readouterr().err


def test_a_sampling_stream_saved_on_another_device_restarts_from_the_seed_with_a_warning():
    """A CPU run resumed on a GPU (or back): the generator state formats differ, so the stream
    cannot continue; it restarts from the seed and the resume says so."""
    trainer = smoke_trainer()
    state = trainer.state_dict()
    state["rng"]["generator_device"] = "cuda"
    state["rng"]["generator"] = torch.zeros(16, dtype=torch.uint8)  # a CUDA (philox) state's size
    trainer.learner.generator.manual_seed(123)
    logs: list[str] = []
    trainer.load_state_dict(state, log=logs.append)
    assert any("sampling stream was saved on cuda" in line for line in logs)
    fresh = torch.Generator().manual_seed(trainer.cfg.base.seed)
    assert torch.equal(trainer.learner.generator.get_state(), fresh.get_state())
