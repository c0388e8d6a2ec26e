"""Candidate evaluation planned, played and applied in three steps ([league] evaluation): the
background mode reaches the inline mode's decisions one epoch later, an exception of its worker
surfaces at the join, results vs members that left the pool (or cannot be loaded) are skipped, the
pending evaluation's checkpoint field is validated, and a league run resumed while an evaluation
was pending ends where the uninterrupted run does."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague.build import build_trainer
from tcgleague.checkpoint import FieldError, load_checkpoint
from tcgleague.checkpoint.league_fields import pending_evaluation
from tcgleague.config import ConfigError, load_config
from tcgleague.devices import league_evaluation
from tcgleague.dist import SINGLE
from tcgleague.games.emberfront.bots import GREEDY, training_bots
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.game import EMBERFRONT_RUNNER
from tcgleague.games.emberfront.layout import NAME as EMBERFRONT
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.league import LeagueManager, LeagueOpponents
from tcgleague.league.epoch import LeagueEpoch
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.rows import RowFormat
from tcgleague.train import checkpoint_writer
from test_league import CONFIGS, CPU, Scripted, ingest_tiny, league_cfg, quiet, tiny_policy

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SAMPLER = TCGSampler(subaction_temperature=0.7)


def test_evaluation_key_auto_and_validation():
    assert load_config(None, []).league.evaluation == "auto"
    auto = league_cfg()
    assert league_evaluation(auto, CPU) == "inline"
    assert league_evaluation(auto, torch.device("cuda", 0)) == "background"
    for mode in ("background", "inline"):
        assert league_evaluation(dataclasses.replace(auto, evaluation=mode), CPU) == mode
    with pytest.raises(ConfigError, match=r"\[league\] evaluation.*auto, background, inline"):
        load_config(None, ["--league.evaluation", "later"])


def epochs_of(mode: str, epochs: int, tmp_path: Path) -> LeagueManager:
    """A league (real matches, a fresh tiny policy as the learner each epoch) after `epochs` epoch
    ends with no training games, evaluating its candidates `mode`."""
    cfg = league_cfg(
        eval_games=4,
        promotion_min_games=4,
        promotion_min_winrate=0.3,
        checkpoint_add_interval=1,
        baseline_min_winrate=0.0,
        latest_ratio=0.0,
        bot_ratio=0.5,
        pool_size=3,
        keep_recent=1,
        keep_old=1,
        verification_members=1,
        evaluation=mode,
    )
    mgr = LeagueManager(
        cfg, tmp_path / mode, seed=0, log=quiet, turn_cap=4, device=CPU, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    env = TCGEnv(num_games=4, seed=0)
    league = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 0), seed=0, device=CPU, dist=SINGLE
    )
    league.start(0)
    for epoch in range(1, epochs + 1):
        league.end_epoch(epoch, 100 * epoch, tiny_policy(seed=epoch)[0], SAMPLER)
    assert {"perf/league_matches_seconds", "perf/league_matches_wait_seconds"} <= set(league.metrics())
    return mgr


def test_background_decides_as_inline_one_epoch_later(tmp_path):
    """The worker plays the same seeded matches with the same sides, and the apply comes first in
    the next epoch's work: the manager changes as inline did, one epoch later."""
    inline, background = epochs_of("inline", 4, tmp_path), epochs_of("background", 5, tmp_path)
    assert len(inline.decisions) == 4 and inline.retain() == []  # every candidate decided, pool retained
    a, b = inline.state_dict(), background.state_dict()
    for key in ("decisions", "champion", "promotions", "ratings", "payoff", "last_played"):
        assert a[key] == b[key], key
    assert background.pool_ids() == [*inline.pool_ids(), "e000005"]  # its candidate joined, still pending
    assert any(d["vs_champion"] for d in a["decisions"]) and any(d["promoted"] for d in a["decisions"])


def background_epoch(mgr: LeagueManager) -> LeagueEpoch:
    return LeagueEpoch(dataclasses.replace(mgr.cfg, evaluation="background"), mgr, SINGLE, None, CPU)


def test_an_exception_of_the_worker_surfaces_at_the_join():
    def broken(a, b, games):
        raise RuntimeError(f"match {a} vs {b} failed")

    mgr = LeagueManager(
        league_cfg(checkpoint_add_interval=1), play=broken, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    epoch = background_epoch(mgr)
    policy = tiny_policy()[0]
    epoch.run(1, 100, policy, SAMPLER, [], active=True)  # planned and handed over: no error yet
    assert epoch.pending is not None and mgr.decisions == []
    with pytest.raises(RuntimeError, match="match e000001 vs greedy failed"):
        epoch.run(2, 200, policy, SAMPLER, [], active=True)


def test_results_vs_a_member_retired_before_the_apply_are_skipped():
    logs = []
    cfg = league_cfg(verification_members=1, baseline_min_winrate=0.0)
    mgr = LeagueManager(
        cfg, play=Scripted({"m1": (0, 64, 0)}), log=logs.append, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    for k in range(3):
        ingest_tiny(mgr, f"m{k}", seed=k)
    mgr.champion = "m0"
    plan = mgr.plan_evaluation("m2", epoch=7)
    assert [(m.role, m.opponent) for m in plan.matches] == [
        ("champion", "m0"),
        ("baseline", GREEDY),
        ("verification", "m1"),
    ]
    tallies = plan.play()
    mgr.store.retire(["m0", "m2"])  # the main thread retires m1 while the matches play
    decision = mgr.apply_evaluation(plan, tallies)
    assert decision is not None and decision.candidate == "m2" and decision.promoted
    assert "m1" not in mgr.ratings.state_dict() and "m1" not in mgr.last_played
    assert any("results vs m1 not recorded" in line for line in logs)
    # the candidate itself gone: no decision, nothing recorded
    plan = mgr.plan_evaluation("m2")
    mgr.store.retire(["m0"])
    assert mgr.apply_evaluation(plan, plan.play()) is None and any("left the pool" in line for line in logs)


def test_an_unloadable_member_of_a_resumed_plan_is_skipped_and_decides_nothing():
    logs = []
    cfg = league_cfg(eval_games=2, baseline_min_winrate=0.0)
    mgr = LeagueManager(
        cfg, log=logs.append, turn_cap=4, device=CPU, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )  # real matches: sides loaded from the store
    ingest_tiny(mgr, "m0")
    opponents = [["champion", "gone"], ["baseline", GREEDY]]
    state = {"candidate": "m0", "champion": "gone", "epoch": 3, "opponents": opponents}
    plan = mgr.replan(pending_evaluation(state))
    assert plan.state_dict() == state and any("match vs gone cannot be loaded" in line for line in logs)
    tallies = plan.play()
    assert tallies[0] is None and tallies[1].games == 2
    assert mgr.apply_evaluation(plan, tallies) is None and mgr.decisions == [] and mgr.champion is None
    assert any("no decision" in line for line in logs) and "m0" in mgr.ratings.state_dict()


def test_the_pending_evaluation_field_is_validated():
    good = {"candidate": "e000002", "champion": None, "epoch": 2, "opponents": [["baseline", GREEDY]]}
    assert pending_evaluation(good).opponents == (("baseline", GREEDY),) and pending_evaluation(None) is None
    for bad in (
        {**good, "candidate": 3},
        {**good, "epoch": -1},
        {**good, "opponents": [["referee", GREEDY]]},
        {key: value for key, value in good.items() if key != "champion"},
    ):
        with pytest.raises(FieldError, match="league.pending_evaluation"):
            pending_evaluation(bad)


@pytest.mark.slow  # 6 league training epochs: ~20 s on a loaded 2-core box
def test_a_league_run_resumed_while_an_evaluation_is_pending_ends_as_the_straight_run(tmp_path):
    """Background evaluation, a candidate every epoch: the checkpoint after epoch 2 holds
    e000002's evaluation still playing; the resumed run plays it again and applies it at epoch 3,
    as the straight run does, so weights and league state end equal."""
    over = (
        "--league.enable true --league.evaluation background --train.eval-interval 0 --league.pool-size 8 "
        "--league.verification-members 1 --env.num-games 8"
    ).split()
    cfg = load_config(CONFIGS / "smoke.ini", over)
    a = build_trainer(cfg, tmp_path / "a")
    a.train_epoch()
    a.train_epoch()
    path = checkpoint_writer(tmp_path / "a", cfg)(a)
    a.train_epoch()
    a.train_epoch()
    b = build_trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "b")
    loaded = load_checkpoint(path, b.policy.config, log=quiet)
    apply_resume(b, loaded, ResumeOptions(str(path), load_optimizer=True), log=quiet)
    assert b.opponents.epoch_work.state_dict()["candidate"] == "e000002"
    b.train_epoch()
    b.train_epoch()
    ma, mb = a.opponents.manager.state_dict(), b.opponents.manager.state_dict()
    assert [d["candidate"] for d in ma["decisions"]] == ["e000001", "e000002", "e000003"]
    assert_same(ma, mb, "manager")
    assert a.opponents.epoch_work.state_dict() == b.opponents.epoch_work.state_dict()
    for name, t in a.policy.state_dict().items():
        assert torch.equal(t, b.policy.state_dict()[name]), name
