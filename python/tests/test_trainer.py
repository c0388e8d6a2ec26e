"""The trainer: only a row's own decisions are stored, rewards reach the right step, GAE,
row-index state resets, PPO's ratio is 1 before the first gradient step, compiled and eager
losses agree, and a --wandb smoke run leaves an offline W&B run with the logged keys."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tcgleague import train as train_cli
from tcgleague.config import load_config
from tcgleague.engine import LAYOUT
from tcgleague.ppo import PPOUpdater, UpdateSettings
from tcgleague.recurrent import zero_rows
from tcgleague.rollout import RolloutBuffer
from tcgleague.trainer import Trainer
from wandb_records import read_wandb_records

SMOKE = "configs/smoke.ini"
COUNT = LAYOUT["legal_count_offset"]
SEAT = LAYOUT["global_offset"] + LAYOUT["global_features"]["seat"]


def smoke_trainer(tmp_path, *overrides) -> Trainer:
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", *overrides])
    return Trainer(cfg, tmp_path)


# ---- rollout ------------------------------------------------------------------------------
def test_only_deciding_rows_are_stored(tmp_path):
    trainer = smoke_trainer(tmp_path)
    seen_masks = []
    step = trainer.env.step

    def spy(actions):
        seen_masks.append(trainer.env.masks.copy())
        return step(actions)

    trainer.env.step = spy
    trainer.collect()
    buf = trainer.buffer
    assert buf.size == trainer.cfg.train.batch_size
    # one decision per game per env step, each from the row that was deciding
    assert len(seen_masks) * trainer.env.num_games == buf.size
    stored = buf.rows.reshape(len(seen_masks), trainer.env.num_games)
    for masks, rows in zip(seen_masks, stored):
        assert set(rows.tolist()) == set(np.flatnonzero(masks).tolist())
    obs = buf.obs.numpy()
    assert (obs[:, COUNT] > 0).all(), "every stored step has a legal list: it was the row's own decision"
    assert (obs[:, SEAT] == buf.rows % 2).all(), "each step is observed from its own seat"


def test_rewards_are_credited_to_the_previous_decision():
    buf = RolloutBuffer(capacity=4, horizon=2, obs_size=3, hidden_size=2, num_rows=4)
    buf.start_epoch()
    z = torch.zeros
    add = lambda rows, v: buf.add(np.array(rows), z(len(rows), 3), z(len(rows), 4, dtype=torch.long),  # noqa: E731
                                  z(len(rows)), torch.tensor(v), z(len(rows), 2), z(len(rows), 2),
                                  np.zeros(len(rows), dtype=bool))
    add([0, 3], [0.5, 0.1])
    buf.credit(np.array([0, 1]), np.array([0.25, 9.0], dtype=np.float32),
               np.array([False, False]), np.array([False, False]))  # row 1 never decided: ignored
    add([0], [0.7])
    buf.credit(np.array([0, 3]), np.array([1.0, -1.0], dtype=np.float32), np.array([True, True]),
               np.array([False, False]))
    add([2], [0.3])
    assert buf.reward[:4].tolist() == [0.25, -1.0, 1.0, 0.0]
    assert buf.has_next[:4].tolist() == [True, False, False, False]
    assert buf.next_value[0] == pytest.approx(0.7)
    batch = buf.pack(gamma=0.9, lam=0.5)
    # packed by row: row 0 (two steps), row 2, row 3
    assert batch.rows.reshape(-1).tolist() == [0, 0, 2, 3]
    adv = batch.advantage.reshape(-1).tolist()
    d0 = 0.25 + 0.9 * 0.7 - 0.5
    d1 = 1.0 - 0.7                       # terminal: no bootstrap
    assert adv[1] == pytest.approx(d1)
    assert adv[0] == pytest.approx(d0 + 0.9 * 0.5 * d1)
    assert adv[2] == pytest.approx(0.9 * 0.3 - 0.3)  # pending at epoch end: bootstraps its own value
    assert adv[3] == pytest.approx(-1.0 - 0.1)
    assert batch.boundary.reshape(-1).tolist() == [1.0, 0.0, 1.0, 1.0]


# ---- recurrent state -------------------------------------------------------------------------
def test_zero_rows_uses_row_indices_and_ignores_invalid_and_duplicates():
    h, c = torch.ones(6, 3), torch.ones(6, 3)
    used = zero_rows((h, c), np.array([4, 1, 1, -1, 6, 99, 4]))
    assert used.tolist() == [1, 4] and used.dtype == torch.int64
    assert h[:, 0].tolist() == [1, 0, 1, 1, 0, 1] and torch.equal(h, c)
    # a boolean mask is the predecessor's bug (seed 001): it is refused, not misread as ids
    with pytest.raises(TypeError, match="row indices"):
        zero_rows((h, c), np.array([True, False]))
    assert zero_rows((h, c), np.array([], dtype=np.int64)).numel() == 0


def test_done_rows_get_fresh_state_in_rollout(tmp_path):
    trainer = smoke_trainer(tmp_path)
    trainer.collect()
    buf = trainer.buffer
    starts = buf.episode_start[: buf.size]
    assert starts.any()
    assert torch.count_nonzero(buf.state_h[torch.from_numpy(starts)]) == 0
    assert torch.count_nonzero(buf.state_h[torch.from_numpy(~starts)]) > 0


# ---- PPO ------------------------------------------------------------------------------------
def test_first_minibatch_ratio_is_one_and_training_changes_weights(tmp_path):
    trainer = smoke_trainer(tmp_path, "--policy.subaction-temperature-initial", "1.7",
                            "--policy.subaction-temperature-final", "1.7", "--policy.smoothing-eps-initial", "0.2",
                            "--policy.smoothing-eps-final", "0.2")
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.train_epoch()
    assert metrics["sampler/subaction_temperature"] == pytest.approx(1.7)
    assert metrics["losses/first_minibatch_ratio_dev"] < 1e-4
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters()))
    assert metrics["perf/sps"] > 0 and np.isfinite(metrics["losses/value_loss"])


@pytest.mark.slow
def test_compiled_loss_matches_eager_and_does_not_recompile(tmp_path):
    from torch._dynamo.utils import counters
    trainer = smoke_trainer(tmp_path, "--train.compile-mode", "reduce-overhead")
    t = trainer.cfg.train
    trainer.collect()
    batch = trainer.buffer.pack(t.gamma, t.gae_lambda)
    params, coefs = trainer.sampler.params_tensor(), torch.tensor([0.2, 0.5, 0.2, 0.01])
    settings = dict(minibatch_segments=t.minibatch_size // t.bptt_horizon, update_epochs=1, max_grad_norm=0.5,
                    norm_adv=False, compile_mode="reduce-overhead")
    make = lambda compiled: PPOUpdater(trainer.policy, trainer.sampler, trainer.optimizer,  # noqa: E731
                                       UpdateSettings(compile=compiled, **settings), t.bptt_horizon,
                                       batch.obs.shape[-1], t_hidden(trainer), trainer.device)
    eager, compiled = make(False), make(True)
    index = torch.arange(settings["minibatch_segments"])
    results = []
    for updater in (eager, compiled):
        updater._fill(batch, index)
        trainer.policy.zero_grad(set_to_none=False)
        loss, stats = updater.loss_fn(**updater.minibatch, params=params, coefs=coefs)
        loss.backward()
        results.append((loss.detach().clone(), stats.clone(), [p.grad.clone() for p in trainer.policy.parameters()]))
    (l0, s0, g0), (l1, s1, g1) = results
    torch.testing.assert_close(l1, l0, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(s1, s0, rtol=1e-4, atol=1e-6)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    graphs = counters["stats"]["unique_graphs"]
    for k in range(6):  # other minibatches, other anneal values: same shapes, no recompiles
        compiled._fill(batch, (index + k) % batch.obs.shape[0])
        torch.compiler.cudagraph_mark_step_begin()
        loss, _ = compiled.loss_fn(**compiled.minibatch, params=params * (1 + 0.01 * k), coefs=coefs * (1 + 0.1 * k))
        loss.backward()
    assert counters["stats"]["unique_graphs"] == graphs


def t_hidden(trainer) -> int:
    return trainer.cfg.policy.hidden_size


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
    for key in ("losses/policy_loss", "sampler/subaction_temperature", "sampler/smoothing_eps",
                "anneal/ent_coef", "perf/sps", "eval/winrate_vs_greedy"):
        assert key in keys


def test_bad_config_fails_at_start_naming_the_key(tmp_path, capsys):
    rc = train_cli.main(["--config", SMOKE, "--train.learning-rat", "1e-3", "--base.experiments-dir", str(tmp_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "learning_rat" in err and "learning_rate" in err
    assert not any(Path(tmp_path).iterdir()), "a refused run creates nothing"
    rc = train_cli.main(["--config", SMOKE, "--train.minibatch-size", "200", "--base.experiments-dir", str(tmp_path)])
    assert rc == 2 and "minibatch_size" in capsys.readouterr().err
