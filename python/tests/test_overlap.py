"""The overlapped rollout ([env] overlap): two halves of the games take turns, the engine stepping
one on its thread while the learner decides for the other. The engine steps a range of games
without touching the others; the trainer collects exactly batch_size decisions; seeded runs
repeat, for any engine thread count; a resume continues exactly; off, nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.state_compare import assert_same
from helpers.trainers import SMOKE, collect, smoke_trainer
from tcgleague.checkpoint import load_checkpoint
from tcgleague.config import ConfigError, load_config
from tcgleague.devices import env_parts
from tcgleague.dist import weights_digest
from tcgleague.games.emberfront.bots import random_actions
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.rows import rows_of
from tcgleague.train import checkpoint_writer
from tcgleague.vecenv import GameParts, VecEnv

pytestmark = pytest.mark.usefixtures("one_torch_thread")
OVERLAP = ["--env.overlap", "true"]


def test_stepping_the_halves_in_turn_is_stepping_every_game_at_once():
    """Games are independent, so half A then half B with the same actions leaves every game, row
    and record as one step of all of them does; while a half steps on the thread, the other
    half's rows are not written (the trainer reads them meanwhile)."""
    kwargs = {"env_kwargs": {"num_games": 64, "seed": 3, "turn_cap": 8}}
    whole, halves = VecEnv(TCGEnv, "native", 1, 1, **kwargs), VecEnv(TCGEnv, "native", 1, 1, **kwargs)
    obs_whole, obs_halves = whole.reset(3), halves.reset(3)
    parts = GameParts(halves, 2)
    assert parts.games == [range(0, 32), range(32, 64)]
    rng = np.random.default_rng(0)
    records_whole, records_halves = [], []
    for _ in range(120):
        actions = random_actions(obs_whole, rng)
        stepped = whole.step(actions)
        records_whole += stepped[4]
        for part in (0, 1):
            other = slice(rows_of(parts.games[1 - part].start), rows_of(parts.games[1 - part].stop))
            before = obs_halves[other].copy(), halves.masks[other].copy()
            assert parts.step(part, actions) is None, "the previous part's step was already finished"
            _, rewards, terminals, truncations, infos = parts.finish()
            assert np.array_equal(obs_halves[other], before[0]) and np.array_equal(halves.masks[other], before[1])
            assert not rewards[other].any() and not (terminals | truncations)[other].any(), "only the part's rows"
            records_halves += infos
        assert np.array_equal(obs_whole, obs_halves) and np.array_equal(whole.masks, halves.masks)
    assert whole.state_dict()["engines"] == halves.state_dict()["engines"]
    assert records_whole == records_halves and len(records_whole) > 50
    assert parts.finish() is None, "nothing in flight"


def test_overlap_needs_the_native_backend_and_two_games():
    with pytest.raises(ConfigError, match="overlap"):
        load_config(SMOKE, [*OVERLAP, "--vec.backend", "serial", "--vec.num-envs", "2"])
    with pytest.raises(ConfigError, match="overlap"):
        load_config(SMOKE, [*OVERLAP, "--env.num-games", "1"])
    with pytest.raises(ConfigError, match="overlap"):
        load_config(SMOKE, ["--env.overlap", "sometimes"])
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert env_parts(load_config(SMOKE, []), cpu) == 1 and env_parts(load_config(SMOKE, []), cuda) == 2
    assert env_parts(load_config(SMOKE, OVERLAP), cpu) == 2
    assert env_parts(load_config(SMOKE, ["--env.overlap", "false"]), cuda) == 1
    with pytest.raises(ValueError, match="native backend"):
        GameParts(VecEnv(TCGEnv, "serial", 2, 1, {"num_games": 4}), 2)


def digest_after(epochs: int, *overrides: str) -> tuple[str, list[float]]:
    trainer = smoke_trainer(None, *overrides)
    steps = []
    for _ in range(epochs):
        trainer.train_epoch()
        steps.append(trainer.global_step)
    return weights_digest(trainer.policy.state_dict()), steps


def test_an_overlapped_epoch_collects_exactly_batch_size_and_repeats_for_any_thread_count():
    trainer = smoke_trainer(None, *OVERLAP)
    assert trainer.parts.count == 2 and len(trainer.transfers) == 2
    stats = collect(trainer)
    assert trainer.global_step == trainer.cfg.train.batch_size and trainer.learner.buffer.full
    assert stats["perf/env_steps"] * 2 == int(stats["perf/env_steps"] * 2), "whole env steps: halves in pairs"
    # every stored step is the deciding row's own decision, from both halves
    stored_rows = trainer.learner.buffer.rows[: trainer.learner.buffer.capacity]
    half = rows_of(trainer.env.num_games // 2)
    assert (stored_rows < half).any() and (stored_rows >= half).any()
    one, steps = digest_after(2, *OVERLAP)
    assert steps == [512, 1024]
    assert digest_after(2, *OVERLAP) == (one, steps), "a seeded overlapped run repeats"
    assert digest_after(2, *OVERLAP, "--env.num-threads", "2")[0] == one, "for any engine thread count"
    # Against the plain loop nothing is asserted: the halves draw in the same row order, so whether
    # the trajectories differ depends only on whether this CPU's kernels round a half-size batch
    # like a whole one (they differed on one machine and were equal bit for bit on another).


def test_an_overlapped_league_run_with_the_exploiter_collects_its_batches():
    league = ["--league.enable", "true", "--league.activate-after-steps", "0", "--league.exploiter-ratio", "0.25"]
    trainer = smoke_trainer(None, *OVERLAP, *league, "--league.latest-ratio", "0.4")
    seen = {"exploiter": 0.0, "frozen": 0.0, "bot": 0.0}
    for _ in range(3):
        metrics = trainer.train_epoch()
        seen = {k: max(v, metrics[f"league/{k}_fraction"]) for k, v in seen.items()}
        assert np.isfinite(metrics["losses/policy_loss"])
    assert trainer.global_step == 3 * trainer.cfg.train.batch_size
    assert min(seen.values()) > 0, f"every kind of opponent played in the overlapped halves: {seen}"


def test_an_overlapped_run_resumes_exactly(tmp_path):
    cfg = load_config(SMOKE, ["--train.eval-interval", "0", *OVERLAP])
    (tmp_path / "a").mkdir()
    a = smoke_trainer(tmp_path / "a", *OVERLAP)
    a.train_epoch()
    path = checkpoint_writer(tmp_path / "a", cfg)(a)
    a.train_epoch()
    b = smoke_trainer(tmp_path / "b", *OVERLAP)
    apply_resume(b, load_checkpoint(path, b.policy.config), ResumeOptions(str(path), load_optimizer=True))
    b.train_epoch()
    assert a.global_step == b.global_step == 2 * cfg.train.batch_size
    assert_same(a.policy.state_dict(), b.policy.state_dict(), "policy")
    assert_same(a.env.state_dict()["engines"], b.env.state_dict()["engines"], "engines")
    assert torch.equal(a.learner.actor.state.h, b.learner.actor.state.h)
