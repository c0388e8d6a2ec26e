"""The league: [league] config keys, matchmaking only at episode boundaries, learner/opponent
rows, frozen-opponent batched inference and row-index state resets (seed 001), PFSP weights,
payoff decay, promotion decisions and their reasons, pool retention, and the league state
file (round trip, .bak recovery)."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tcgleague import train as train_cli
from tcgleague.bots import random_actions
from tcgleague.checkpoint import load_checkpoint, save_checkpoint
from tcgleague.config import ConfigError, LeagueConfig, load_config
from tcgleague.env import TCGEnv
from tcgleague.league import SELF, League, Matchmaker, pfsp_weights
from tcgleague.league_manager import (STATE_FILE, LeagueManager, MatchPlayer, Payoff, interleave,
                                      retain_ids)
from tcgleague.opponents import FrozenOpponents, bucket_size, load_member_policy
from tcgleague.policy.tcg_policy import PolicyConfig, TCGPolicy, legal_from_obs
from tcgleague.policy.tcg_sampler import TCGSampler
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.trainer import Trainer

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def league_cfg(**kw) -> LeagueConfig:
    """League keys with the promotion figures these tests were written around."""
    base = LeagueConfig(enable=True, checkpoint_add_interval=10, eval_games=64, promotion_min_games=64,
                        promotion_min_winrate=0.55, baseline_min_winrate=0.6)
    return dataclasses.replace(base, **kw)


_N_CARDS = None


def tiny_policy(seed: int = 0) -> tuple[TCGPolicy, dict]:
    global _N_CARDS
    if _N_CARDS is None:
        _N_CARDS = TCGEnv(num_games=1).pool.n_cards
    torch.manual_seed(seed)
    config = PolicyConfig(n_cards=_N_CARDS, card_embed_dim=4, entity_dim=8, hidden_size=8)
    return TCGPolicy(config), config.to_dict()


def ingest_tiny(mgr: LeagueManager, member_id: str, seed: int = 0, epoch: int = 0):
    policy, pc = tiny_policy(seed)
    return mgr.ingest(member_id, state_dict=policy.state_dict(), policy_config=pc, epoch=epoch, step=100 * epoch)


class Scripted:
    """A play_match returning pre-set results per (a, b) pair (default: a wins everything)."""

    def __init__(self, results=None):
        self.results = dict(results or {})
        self.calls = []

    def __call__(self, a, b, games):
        self.calls.append((a, b, games))
        return self.results.get((a, b), self.results.get(b, (games, 0, 0)))


# ---- config -----------------------------------------------------------------------------------
def test_league_config_keys_and_validation():
    cfg = load_config(None, [])
    lg = cfg.league
    assert (lg.enable, lg.activate_after_steps, lg.latest_ratio, lg.bot_ratio) == (False, 0, 0.8, 0.1)
    assert (lg.pfsp_weighting, lg.pool_size, lg.keep_recent, lg.keep_old, lg.rating) == ("squared", 8, 3, 2, "openskill")
    ok = load_config(None, ["--league", "--league.activate-after-steps", "5e6", "--league.pfsp-weighting", "variance"])
    assert ok.league.enable and ok.league.activate_after_steps == 5_000_000
    bad = [("latest_ratio", "1.5"), ("bot_ratio", "0.5"), ("pfsp_weighting", "cubic"), ("pool_size", "4"),
           ("promotion_z", "0"), ("payoff_decay", "0"), ("rating", "glicko"), ("opponent_batch", "0"),
           ("checkpoint_add_interval", "0"), ("baseline_min_winrate", "1.2"), ("activate_after_steps", "-1")]
    for key, value in bad:
        with pytest.raises(ConfigError, match=rf"\[league\] (?:{key}|pool_size|bot_ratio)"):
            load_config(None, [f"--league.{key}", value])


def test_league_ini_is_default_plus_league_enabled():
    league = load_config(CONFIGS / "league.ini", []).to_dict()
    default = load_config(CONFIGS / "default.ini", []).to_dict()
    diff = {(s, k) for s in league for k in league[s] if league[s][k] != default[s][k]}
    assert diff == {("league", "enable")} and league["league"]["enable"] is True
    text = (CONFIGS / "league.ini").read_text()
    for f in dataclasses.fields(LeagueConfig):
        assert f"\n{f.name} =" in text, f"league.ini does not document {f.name}"


# ---- PFSP and payoff --------------------------------------------------------------------------
def test_pfsp_weights_each_mode():
    p = np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(pfsp_weights(p, "squared"), np.array([0.64, 0.25, 0.01]) / 0.90)
    np.testing.assert_allclose(pfsp_weights(p, "variance"), np.array([0.16, 0.25, 0.09]) / 0.50)
    np.testing.assert_allclose(pfsp_weights(p, "linear"), np.array([0.8, 0.5, 0.1]) / 1.4)
    np.testing.assert_allclose(pfsp_weights(p, "uniform"), np.full(3, 1 / 3))
    np.testing.assert_allclose(pfsp_weights([1.0, 1.0], "squared"), [0.5, 0.5])   # all zero -> uniform
    with pytest.raises(ValueError, match="pfsp"):
        pfsp_weights(p, "cubic")


def test_payoff_decay_math():
    pay = Payoff(decay=0.5)
    assert pay.winrate("a", "b") == 0.5                       # never met: prior
    pay.update("a", "b", wins=1, losses=0, draws=0)
    pay.update("a", "b", wins=0, losses=1, draws=0)
    # a: wins 1*0.5 + 0 = 0.5, games 1*0.5 + 1 = 1.5
    assert pay.table[("a", "b")] == [0.5, 0.0, 1.5]
    assert pay.winrate("a", "b") == pytest.approx(1 / 3)
    assert pay.winrate("b", "a") == pytest.approx(2 / 3)
    pay.update("a", "b", wins=2, losses=0, draws=2)           # draws count half
    w, d, n = 0.25 + 2, 2.0, 0.75 + 4
    assert pay.table[("a", "b")] == [w, d, n]
    assert pay.winrate("a", "b") == pytest.approx((w + 0.5 * d) / n)
    assert sorted(interleave(2, 1, 1)) == [-1, 0, 1, 1] and interleave(2, 2, 0)[:2] != [1, 1]


# ---- matchmaking ------------------------------------------------------------------------------
def test_matchmaker_shares_pfsp_and_seats():
    cfg = league_cfg(latest_ratio=0.6, bot_ratio=0.2)
    mm = Matchmaker(20000, cfg, seed=3)
    mm.set_pool(["m0", "m1"], pfsp_weights([0.5, 0.0], "squared"))   # weights 0.25 : 1
    mm.reset(global_step=0)
    ids = np.array(mm.opponent_ids())
    frac = mm.fractions()
    assert frac["league/latest_opponent_fraction"] == pytest.approx(0.6, abs=0.015)
    assert frac["league/bot_fraction"] == pytest.approx(0.2, abs=0.015)
    assert frac["league/frozen_fraction"] == pytest.approx(0.2, abs=0.015)
    assert np.mean(ids == "random") == pytest.approx(np.mean(ids == "greedy"), abs=0.015)
    assert np.mean(ids == "m1") / max(1, np.sum(ids == "m0")) * len(ids) == pytest.approx(4.0, rel=0.15)
    assert np.mean(mm.learner_seat) == pytest.approx(0.5, abs=0.015)
    # learner rows: both rows of self-play games, exactly the learner seat otherwise
    mask = mm.learner_mask.reshape(-1, 2)
    selfplay = ids == SELF
    assert mask[selfplay].all()
    assert (mask[~selfplay].sum(1) == 1).all()
    assert (mask[~selfplay, 1] == (mm.learner_seat[~selfplay] == 1)).all()
    # an empty pool and no bots fall back to self-play
    lonely = Matchmaker(1000, league_cfg(latest_ratio=0.0, bot_ratio=0.5), seed=0, bots=())
    lonely.reset(0)
    assert set(lonely.opponent_ids()) == {SELF}


def test_not_yet_active_is_pure_selfplay():
    cfg = league_cfg(activate_after_steps=10**12, latest_ratio=0.0, bot_ratio=0.5)
    mgr = LeagueManager(cfg, play_match=Scripted(), log=lambda s: None)
    ingest_tiny(mgr, "m0")
    env = TCGEnv(num_games=6, seed=1)
    obs, _ = env.reset()
    league = League(cfg, env.num_games, manager=mgr, env=env, seed=0)
    league.reset(global_step=0)
    rng = np.random.default_rng(0)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    dones = 0
    for step in range(150):
        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)
        assert len(theirs) == 0 and np.array_equal(mine, rows)
        actions[rows] = random_actions(obs[rows], rng)
        obs, rewards, terminals, truncations, _ = env.step(actions)
        mask = league.after_step(rewards, terminals, truncations, global_step=step * 6)
        dones += int(terminals.sum())
        assert mask.all() and league.learner_mask.all()
        assert set(league.matchmaker.opponent_ids()) == {SELF}
    assert dones > 0
    assert league.metrics()["league/active"] == 0.0
    assert league.metrics()["league/latest_opponent_fraction"] == 1.0


def test_matchups_change_only_at_episode_boundaries():
    cfg = league_cfg(latest_ratio=0.25, bot_ratio=0.35, activate_after_steps=40, opponent_batch=4)
    mgr = LeagueManager(cfg, play_match=Scripted(), log=lambda s: None)
    ingest_tiny(mgr, "m0", seed=0)
    ingest_tiny(mgr, "m1", seed=1)
    env = TCGEnv(num_games=8, seed=5)
    obs, _ = env.reset()
    league = League(cfg, env.num_games, manager=mgr, env=env, seed=2)
    league.reset(global_step=0)
    rng = np.random.default_rng(1)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    history, done_history, kinds = [], [], set()
    global_step = 0
    for _ in range(300):
        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)
        # per-row opponent ids in force for this step (both rows of a game share the game's id)
        ids = [league.matchmaker.id_of(c) for c in league.matchmaker.row_opponent_codes()]
        history.append(ids)
        kinds.update(ids)
        for g, who in enumerate(league.matchmaker.opponent_ids()):
            learner = league.learner_mask[2 * g: 2 * g + 2]
            if who == SELF:
                assert learner.all()
            else:    # the opponent's row is never a learner row
                assert learner.sum() == 1 and learner[league.matchmaker.learner_seat[g]]
        assert not league.learner_mask[theirs].any() and league.learner_mask[mine].all()
        forwards = league.opponents.forwards
        actions[mine] = random_actions(obs[mine], rng)
        league.act_opponents(obs, theirs, actions)          # illegal actions would raise in step
        # one stacked forward per step for all frozen members (more rounds when a member has
        # more rows than opponent_batch = 4)
        theirs_ids = np.array(ids)[theirs]
        expected = max(-(-int(np.sum(theirs_ids == m)) // 4) for m in ("m0", "m1"))
        assert league.opponents.forwards - forwards == expected
        obs, rewards, terminals, truncations, _ = env.step(actions)
        done = terminals | truncations
        done_history.append(done.copy())
        global_step += len(mine)
        league.after_step(rewards, terminals, truncations, global_step)
        done_rows = np.flatnonzero(done)
        opp = league.opponents                          # opponent state reset by row index
        assert not opp.h[done_rows].any() and not opp.c[done_rows].any()
    history = np.array(history)
    changes = 0
    for t in range(1, len(history)):
        changed = history[t] != history[t - 1]
        assert not (changed & ~done_history[t - 1]).any(), f"matchup changed mid-game at step {t}"
        changes += int(changed.sum())
    assert changes > 0
    assert {"self", "random", "greedy"} <= kinds and kinds & {"m0", "m1"}
    assert (history[:5] == "self").all()                # before activate_after_steps
    assert mgr.payoff.games("learner", "random") > 0    # finished games reach the payoff
    metrics = league.metrics()
    assert metrics["league/active"] == 1.0 and 0 <= metrics["league/winrate_vs_random"] <= 1
    assert metrics["league/latest_opponent_fraction"] + metrics["league/bot_fraction"] + \
        metrics["league/frozen_fraction"] == pytest.approx(1.0)


# ---- frozen opponents -------------------------------------------------------------------------
def test_opponent_state_reset_uses_row_indices():
    policy, _ = tiny_policy()
    opp = FrozenOpponents(num_rows=8, max_batch=16)
    opp.add("m", policy)
    m = opp
    m.h.fill_(1.0)
    m.c.fill_(1.0)
    opp.reset_rows(np.array([3, 3, -1, 8, 999, 5], dtype=np.int64))   # duplicates, out of range
    zeroed = [r for r in range(8) if not m.h[r].any()]
    assert zeroed == [3, 5] and [r for r in range(8) if not m.c[r].any()] == [3, 5]
    mask = np.zeros(8, dtype=bool)
    mask[[1, 2]] = True
    with pytest.raises(TypeError, match="boolean mask"):
        opp.reset_rows(mask)                            # the seed-001 bug: a mask is not row ids
    with pytest.raises(TypeError, match="boolean mask"):
        Matchmaker(4, league_cfg()).on_episode_end(np.array([True, False, False, True]), 0)
    assert m.h[1].all() and m.h[2].all()


def test_frozen_inference_is_batched_padded_and_gradient_free(tmp_path):
    policy, pc = tiny_policy()
    path = tmp_path / "member.pt"
    torch.save({"policy": policy.state_dict(), "policy_config": pc, "optimizer": {}}, path)
    loaded, params = load_member_policy(path)
    assert params == {} and not any(p.requires_grad for p in loaded.parameters())
    assert [bucket_size(n, 16) for n in (1, 8, 9, 16, 40)] == [8, 8, 16, 16, 16]
    env = TCGEnv(num_games=20, seed=0)
    obs, _ = env.reset()
    opp = FrozenOpponents(env.num_agents, max_batch=16)
    opp.add("m", loaded)
    opp.add("n", tiny_policy(seed=1)[0])
    frozen = opp.members["m"].policy
    assert frozen is not loaded and not any(p.requires_grad for p in frozen.parameters())
    shapes = []
    forward = opp._forward

    def spy(obs, slots, positions, rows, size):
        shapes.append((len(opp.members), size))
        return forward(obs, slots, positions, rows, size)
    opp._forward = spy
    rows = np.flatnonzero(env.masks)
    acts = opp.act(obs, {"m": rows[:5], "n": rows[5:7]})
    assert shapes == [(2, 8)] and acts["m"].shape == (5, 4) and acts["n"].shape == (2, 4)
    assert opp.h[rows[:7]].abs().sum() > 0 and not opp.h[np.setdiff1d(np.arange(40), rows[:7])].any()
    shapes.clear()
    # 20 rows for "m", max_batch 16 -> a round of 16 (both members), then 4 padded to 8
    out = opp.act(obs, {"m": rows, "n": np.array([], dtype=np.int64)})
    assert shapes == [(2, 16), (2, 8)]
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    actions[rows] = out["m"]
    env.step(actions)                                     # frozen actions are legal
    with pytest.raises(ValueError, match="share one architecture"):
        opp.add("wide", TCGPolicy(PolicyConfig(n_cards=env.pool.n_cards, hidden_size=16)))


def test_stacked_forward_matches_each_member_alone():
    """The vmapped forward over stacked weights = each member's own policy.step + sampler with
    the same uniform draws (the written-out LSTM cell included)."""
    env = TCGEnv(num_games=12, seed=3)
    obs, _ = env.reset()
    rows = np.flatnonzero(env.masks)
    opp = FrozenOpponents(env.num_agents, max_batch=64, seed=5)
    members = {"a": tiny_policy(seed=1)[0], "b": tiny_policy(seed=2)[0], "c": tiny_policy(seed=3)[0]}
    for m, policy in members.items():
        opp.add(m, policy, {"subaction_temperature": 0.5} if m == "b" else None)
    groups = {"a": rows[0:5], "b": rows[5:6], "c": rows[6:12]}
    opp.h.normal_()
    opp.c.normal_()
    h0, c0 = opp.h.clone(), opp.c.clone()
    generator = torch.Generator().manual_seed(5)
    draws = torch.rand(12, 4, opp.uniform_width, generator=generator)   # ascending rows
    got = opp.act(obs, groups)
    for m, policy in members.items():
        r = groups[m]
        o = torch.from_numpy(obs[r])
        with torch.no_grad():
            x, ent = policy.encode(o)
            out, (h, c) = policy.step(x, (h0[r], c0[r]))
            legal, count = legal_from_obs(o)
            sampler = TCGSampler(subaction_temperature=0.5 if m == "b" else 1.0)
            want, _, _ = sampler.sample(policy, out, ent, legal, count,
                                        uniforms=draws[np.searchsorted(rows[:12], r)])
        assert np.array_equal(got[m], want.numpy()), m
        torch.testing.assert_close(opp.h[r], h, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(opp.c[r], c, rtol=1e-5, atol=1e-6)


# ---- the headline command ----------------------------------------------------------------------
def test_league_smoke_run_fills_pool_promotes_and_logs(tmp_path):
    """`python train.py --league-enable --config configs/smoke.ini`: the smoke config's [league]
    keys make the pool fill and promotion decisions happen; the state file and its .bak are
    written and the league/* keys are logged."""
    argv = ["--league-enable", "--config", str(CONFIGS / "smoke.ini"), "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(argv) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    state_file = run_dir / "league" / STATE_FILE
    assert state_file.is_file() and state_file.with_name(STATE_FILE + ".bak").is_file()
    state = json.loads(state_file.read_text())
    assert state["candidates"] == 4 and state["promotions"] >= 1 and len(state["members"]) == 3
    assert state["champion"] in {m["id"] for m in state["members"]}
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for key in ("league/active", "league/pool_size", "league/latest_opponent_fraction",
                "league/champion_rating", "league/promotions"):
        assert all(key in x for x in lines), key
    assert lines[-1]["league/active"] == 1.0 and lines[-1]["league/pool_size"] == 3
    assert lines[-1]["league/promotions"] == state["promotions"]
    assert math.isfinite(lines[-1]["league/champion_rating"])


def test_opponent_rows_never_enter_the_learner_batch(tmp_path):
    """Trainer.collect with every game against a bot: the buffer holds exactly the learner's
    deciding rows, step by step; the bots' rows are acted for and never stored."""
    over = ["--league.enable", "true", "--league.activate-after-steps", "0", "--league.latest-ratio", "0",
            "--league.bot-ratio", "1", "--train.eval-interval", "0"]
    trainer = Trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "run")
    learner_rows, opponent_rows = [], 0
    step = trainer.env.step

    def spy(actions):
        rows = np.flatnonzero(trainer.env.masks)
        mine = trainer.league.learner_mask[rows]
        learner_rows.append(rows[mine])
        nonlocal opponent_rows
        opponent_rows += int((~mine).sum())
        return step(actions)
    trainer.env.step = spy
    trainer.collect()
    buf = trainer.buffer
    assert buf.size == trainer.cfg.train.batch_size and opponent_rows > 0
    assert np.array_equal(buf.rows[:buf.size], np.concatenate(learner_rows)[:buf.size])


def test_league_run_resumes_exactly_through_a_checkpoint(tmp_path):
    """Trainer-level resume of a league run (fresh objects, optimizer loaded): after two more
    epochs the weights, the pool, ratings and payoff, and the matchups equal the straight run's."""
    over = ["--league.enable", "true", "--train.eval-interval", "0", "--league.pool-size", "8",
            "--env.num-games", "8"]
    a = Trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "smoke_a")
    a.train_epoch()
    a.train_epoch()
    path = save_checkpoint(a, 5)
    a.train_epoch()
    a.train_epoch()
    b = Trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "smoke_b")
    apply_resume(b, load_checkpoint(path, b.policy_config), ResumeOptions(str(path), load_optimizer=True),
                 log=lambda s: None)
    b.train_epoch()
    b.train_epoch()
    ma, mb = a.league.manager.state_dict(), b.league.manager.state_dict()
    assert ma["candidates"] == 4 and ma["promotions"] >= 1
    for key in ("champion", "ratings", "payoff", "promotions", "candidates", "decisions"):
        assert ma[key] == mb[key], key
    assert [m["id"] for m in ma["members"]] == [m["id"] for m in mb["members"]]
    assert a.league.matchmaker.opponent_ids() == b.league.matchmaker.opponent_ids()
    for name, t in a.policy.state_dict().items():
        assert torch.equal(t, b.policy.state_dict()[name]), name


# ---- promotion --------------------------------------------------------------------------------
def test_promotion_accepted_and_rejected_with_reasons():
    logs = []
    play = Scripted()
    mgr = LeagueManager(league_cfg(), play_match=play, log=logs.append)
    ingest_tiny(mgr, "c1")
    play.results = {"greedy": (26, 38, 0)}                 # 26/64 = 0.41 vs greedy
    d = mgr.evaluate("c1")
    assert not d.promoted and d.reason == "baseline gate: 0.41 vs greedy < 0.6"
    assert mgr.champion is None and "rejected - baseline gate: 0.41 vs greedy < 0.6" in logs[-1]
    ingest_tiny(mgr, "c2")
    play.results = {"greedy": (50, 14, 0)}
    d = mgr.evaluate("c2")                                  # no champion yet: the baseline gate only
    assert d.promoted and mgr.champion == "c2" and mgr.promotions == 1
    ingest_tiny(mgr, "c3")
    play.results = {("c3", "c2"): (38, 26, 0), "greedy": (60, 4, 0)}   # 0.59 point, lower ~0.47
    d = mgr.evaluate("c3")
    assert not d.promoted and d.reason.startswith("wilson lower bound 0.47 < 0.55 over 64 games")
    assert mgr.champion == "c2"
    mgr.cfg = dataclasses.replace(mgr.cfg, eval_games=32)
    ingest_tiny(mgr, "c4")
    play.results = {("c4", "c2"): (32, 0, 0), "greedy": (10, 22, 0)}
    d = mgr.evaluate("c4")
    assert not d.promoted and d.reason == "only 32 games < 64; baseline gate: 0.31 vs greedy < 0.6"
    mgr.cfg = dataclasses.replace(mgr.cfg, eval_games=64)
    ingest_tiny(mgr, "c5")
    play.results = {("c5", "c2"): (50, 10, 4), "greedy": (45, 19, 0)}
    d = mgr.evaluate("c5")
    assert d.promoted and mgr.champion == "c5" and mgr.promotions == 2
    assert d.reason.startswith("promoted: wilson lower bound 0.")
    assert ("c5", "c2", 64) in play.calls and ("c5", "greedy", 64) in play.calls
    # ratings moved the right way; metrics report them
    assert mgr.ratings.mu("c5") > mgr.ratings.mu("c2")
    m = mgr.metrics()
    assert m["league/champion_rating"] == pytest.approx(mgr.ratings.mu("c5") - 3 * mgr.ratings.sigma("c5"))
    assert m["league/promotions"] == 2 and m["league/candidates"] == 5 and m["league/pool_size"] == 5
    # a stricter z makes the same result fail
    strict = LeagueManager(league_cfg(promotion_z=4.5), play_match=play, log=lambda s: None)
    strict.champion = "c2"
    assert not strict.decide("x", (50, 10, 4), {"greedy": (45, 19, 0)}).promoted


# ---- retention --------------------------------------------------------------------------------
def test_pool_retention():
    ids = [f"m{i:02d}" for i in range(20)]
    kept = retain_ids(ids, "m07", pool_size=8, keep_recent=3, keep_old=2)
    assert len(kept) == 8 and kept == sorted(kept)
    assert {"m00", "m01", "m07", "m17", "m18", "m19"} <= set(kept)
    spread = [k for k in kept if k not in {"m00", "m01", "m07", "m17", "m18", "m19"}]
    assert spread == ["m02", "m16"]                       # 2 slots: spread over the whole middle
    assert retain_ids(ids[:5], None, 8, 3, 2) == ids[:5]
    kept = retain_ids(ids, None, pool_size=10, keep_recent=3, keep_old=2)
    mid = [int(k[1:]) for k in kept if k not in {"m00", "m01", "m17", "m18", "m19"}]
    assert len(mid) == 5 and max(np.diff(mid)) - min(np.diff(mid)) <= 1   # evenly spaced by age


def test_manager_retention_keeps_champion_and_deletes_files(tmp_path):
    cfg = league_cfg(pool_size=4, keep_recent=1, keep_old=1)
    play = Scripted({"greedy": (64, 0, 0)})
    mgr = LeagueManager(cfg, tmp_path, play_match=play, log=lambda s: None)
    for i in range(10):
        ingest_tiny(mgr, f"e{i:02d}", epoch=i)
        if i == 0:
            mgr.evaluate("e00")                            # champion
            play.results = {("e%02d" % j, "e00"): (0, 64, 0) for j in range(10)} | {"greedy": (64, 0, 0)}
        else:
            mgr.evaluate(f"e{i:02d}")
        assert len(mgr.pool_ids()) <= 4
    assert mgr.champion == "e00" and "e00" in mgr.pool_ids() and "e09" in mgr.pool_ids()
    # a retired member's file survives one round (games vs it may still run), then goes
    files = sorted(p.stem for p in (tmp_path / "members").glob("*.pt"))
    assert mgr.retired and files == sorted(mgr.pool_ids() + list(mgr.retired))
    mgr.load_policy(next(iter(mgr.retired)))
    assert set(mgr.ratings.ratings) <= set(mgr.pool_ids()) | {"random", "greedy", "learner"}


# ---- state file -------------------------------------------------------------------------------
def _snapshot(mgr):
    return json.loads(json.dumps(mgr.state_dict()))


def test_league_state_round_trip_and_bak_recovery(tmp_path):
    cfg = league_cfg()
    play = Scripted({"greedy": (50, 10, 4)})
    mgr = LeagueManager(cfg, tmp_path, play_match=play, log=lambda s: None)
    for i in range(3):
        ingest_tiny(mgr, f"e{i}", seed=i, epoch=i)
        mgr.evaluate(f"e{i}")                              # saves
        mgr.record_game("learner", f"e{i}", win=i % 2 == 0, loss=i % 2 == 1)
    mgr.save()
    previous = _snapshot(mgr)
    mgr.record_game("learner", "e0", win=False, loss=False)
    mgr.save()
    full = _snapshot(mgr)
    assert full != previous
    assert (tmp_path / STATE_FILE).is_file() and (tmp_path / (STATE_FILE + ".bak")).is_file()

    fresh = LeagueManager(cfg, tmp_path, play_match=play, log=lambda s: None)
    assert fresh.load()
    assert _snapshot(fresh) == full
    assert fresh.pool_ids() == mgr.pool_ids() and fresh.champion == mgr.champion
    for name in mgr.ratings.ratings:
        assert (fresh.ratings.mu(name), fresh.ratings.sigma(name)) == (mgr.ratings.mu(name), mgr.ratings.sigma(name))
    assert fresh.payoff.table == mgr.payoff.table
    policy, _ = fresh.load_policy("e1")
    ref, _ = mgr.load_policy("e1")
    assert all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), ref.state_dict().values()))

    # a torn / corrupt main file: load the .bak (the previous save) and say so
    (tmp_path / STATE_FILE).write_text('{"version": 1, "members": [')
    logs = []
    recovered = LeagueManager(cfg, tmp_path, play_match=play, log=logs.append)
    assert recovered.load()
    assert _snapshot(recovered) == previous
    assert any("backup" in line for line in logs)
    empty = LeagueManager(cfg, tmp_path / "none", play_match=play, log=lambda s: None)
    assert empty.load() is False
    # a state naming a retired member whose file is gone drops it (and says so)
    (tmp_path / "members" / "e0.pt").unlink()
    logs.clear()
    assert recovered.load() and "e0" not in recovered.pool_ids() and "e1" in recovered.pool_ids()
    assert any("dropping e0" in line for line in logs)


# ---- real matches and the epoch hook ------------------------------------------------------------
def test_real_match_player_and_end_epoch(tmp_path):
    cfg = league_cfg(eval_games=4, promotion_min_games=4, checkpoint_add_interval=2, baseline_min_winrate=0.0)
    logs = []
    mgr = LeagueManager(cfg, tmp_path, seed=0, log=logs.append, env_kwargs={"turn_cap": 4})
    assert isinstance(mgr.play_match, MatchPlayer)
    assert sum(mgr.play_match("random", "greedy", 5)) == 5
    env = TCGEnv(num_games=4, seed=0)
    env.reset()
    league = League(cfg, env.num_games, manager=mgr, env=env, seed=0)
    policy, pc = tiny_policy()
    assert league.end_epoch(1, 100, policy, pc) is None
    decision = league.end_epoch(2, 200, policy, pc, {"subaction_temperature": 1.0})
    assert decision.promoted and mgr.champion == "e000002"          # baseline gate 0: first champion
    assert "e000002" in league.opponents and league.matchmaker.pool == ["e000002"]
    assert sum(mgr.play_match("e000002", "random", 3)) == 3
    assert (tmp_path / STATE_FILE).is_file() and logs
    metrics = league.metrics()
    assert {"league/active", "league/pool_size", "league/latest_opponent_fraction", "league/bot_fraction",
            "league/frozen_fraction", "league/champion_rating", "league/promotions", "league/candidates"} <= set(metrics)
    state = league.state_dict()
    other = League(cfg, env.num_games, manager=mgr, env=env, seed=9)
    other.load_state_dict(state)
    assert other.matchmaker.opponent_ids() == league.matchmaker.opponent_ids()
    assert np.array_equal(other.learner_mask, league.learner_mask)


def test_resume_continues_running_frozen_games_exactly(tmp_path):
    cfg = league_cfg(latest_ratio=0.0, bot_ratio=0.0, opponent_batch=8)
    play = Scripted({"greedy": (64, 0, 0)})
    mgr = LeagueManager(cfg, tmp_path, play_match=play, log=lambda s: None)
    ingest_tiny(mgr, "m0", seed=3)
    mgr.evaluate("m0")
    env = TCGEnv(num_games=4, seed=2)
    obs, _ = env.reset()
    league = League(cfg, env.num_games, manager=mgr, env=env, seed=4)
    league.reset(global_step=0)
    assert set(league.matchmaker.opponent_ids()) == {"m0"}
    rng = np.random.default_rng(0)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    for step in range(12):
        mine, theirs = league.split(np.flatnonzero(env.masks))
        actions[mine] = random_actions(obs[mine], rng)
        league.act_opponents(obs, theirs, actions)
        obs, rewards, terminals, truncations, _ = env.step(actions)
        league.after_step(rewards, terminals, truncations, step)
    state = league.state_dict()
    resumed_mgr = LeagueManager(cfg, tmp_path, play_match=play, log=lambda s: None)
    assert resumed_mgr.load()
    resumed = League(cfg, env.num_games, manager=resumed_mgr, env=env, seed=99)
    resumed.load_state_dict(state)
    assert resumed.matchmaker.opponent_ids() == league.matchmaker.opponent_ids()
    assert np.array_equal(resumed.learner_mask, league.learner_mask)
    assert torch.equal(resumed.opponents.h, league.opponents.h)
    theirs = league.split(np.flatnonzero(env.masks))[1]
    a, b = actions.copy(), actions.copy()
    league.act_opponents(obs, theirs, a)
    resumed.act_opponents(obs, theirs, b)
    assert len(theirs) and np.array_equal(a, b)         # same state, same RNG: same actions
