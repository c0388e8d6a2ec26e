"""The league: [league] config keys, matchmaking only at episode boundaries, learner/opponent
rows, who a finished game is credited to, frozen-pool batched inference and row-index state
resets (row ids, never a boolean mask), PFSP weights, payoff decay, promotion decisions and their reasons, pool
retention, member files, and the league state file (round trip, .bak recovery)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tcgleague import train as train_cli
from tcgleague.bench.__main__ import main as bench_main
from tcgleague.build import build_trainer
from tcgleague.checkpoint import CheckpointError, load_checkpoint
from tcgleague.config import ConfigError, LeagueSection, load_config
from tcgleague.dist import SINGLE
from tcgleague.games.emberfront.bots import BOTS, GREEDY, RANDOM, random_actions, training_bots
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.game import EMBERFRONT_RUNNER
from tcgleague.games.emberfront.layout import ACTION_WIDTH, DRAW, OBS_BYTES
from tcgleague.games.emberfront.layout import NAME as EMBERFRONT
from tcgleague.games.emberfront.match import bot_side, play_match
from tcgleague.games.emberfront.policy import PolicyConfig, TCGPolicy
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.league import LeagueManager, LeagueOpponents
from tcgleague.league.frozen_pool import FrozenPool
from tcgleague.league.manager import STATE_FILE
from tcgleague.league.matchmaking import LEARNER, SELF, Matchmaker, pfsp_weights
from tcgleague.league.member_matches import MemberMatches
from tcgleague.league.members import MemberStore
from tcgleague.league.promotion import decide, retain_ids
from tcgleague.league.ratings import Payoff, interleave
from tcgleague.opponent_side import Origin
from tcgleague.resume import ResumeOptions, apply_resume
from tcgleague.rows import RowFormat, rows_of
from tcgleague.scoring import Tally
from tcgleague.train import checkpoint_writer

CPU = torch.device("cpu")

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tcg_rows(games: int) -> RowFormat:
    """Emberfront's rows for `games` games, without an env."""
    return RowFormat(rows_of(games), OBS_BYTES, ACTION_WIDTH)


def league_cfg(**kw) -> LeagueSection:
    """League keys with the promotion figures these tests were written around."""
    base = LeagueSection(
        enable=True,
        checkpoint_add_interval=10,
        eval_games=64,
        promotion_min_games=64,
        promotion_min_winrate=0.55,
        baseline_min_winrate=0.6,
    )
    return dataclasses.replace(base, **kw)


_N_CARDS = None


def tiny_policy(seed: int = 0) -> tuple[TCGPolicy, dict]:
    global _N_CARDS
    if _N_CARDS is None:
        _N_CARDS = TCGEnv(num_games=1).pool.n_cards
    torch.manual_seed(seed)
    config = PolicyConfig(n_cards=_N_CARDS, card_embed_dim=4, entity_dim=8, hidden_size=8)
    return TCGPolicy(config), config.to_dict()


def ingest_tiny(mgr: LeagueManager, member_id: str, seed: int = 0, epoch: int = 0, sampling_params=None):
    policy, pc = tiny_policy(seed)
    return mgr.ingest(member_id, policy.state_dict(), pc, sampling_params, step=100 * epoch, epoch=epoch)


def quiet(_line: str) -> None:
    pass


class Scripted:
    """A `play` returning pre-set (wins, losses, draws) per (a, b) pair or per b (default: a wins
    everything), as a scoring.Tally."""

    def __init__(self, results=None):
        self.results = dict(results or {})
        self.calls = []

    def __call__(self, a, b, games):
        self.calls.append((a, b, games))
        return Tally(*self.results.get((a, b), self.results.get(b, (games, 0, 0))))


def decayed(outcomes, decay: float) -> list[float]:
    """[wins, draws, games] of a Payoff entry after these outcomes (+1 win, 0 draw, -1 loss),
    recomputed here from the rule: every update multiplies the counts by decay, then adds."""
    w = d = n = 0.0
    for o in outcomes:
        w, d, n = w * decay + (o > 0), d * decay + (o == 0), n * decay + 1.0
    return [w, d, n]


# ---- config -----------------------------------------------------------------------------------
def test_league_config_keys_and_validation():
    cfg = load_config(None, [])
    lg = cfg.league
    assert (lg.enable, lg.activate_after_steps, lg.latest_ratio, lg.bot_ratio) == (False, 0, 0.8, 0.1)
    retention = (lg.pool_size, lg.keep_recent, lg.keep_old)
    assert (lg.pfsp_weighting, *retention, lg.rating) == ("squared", 8, 3, 2, "openskill")
    ok = load_config(None, ["--league", "--league.activate-after-steps", "5e6", "--league.pfsp-weighting", "variance"])
    assert ok.league.enable and ok.league.activate_after_steps == 5_000_000
    bad = [
        ("latest_ratio", "1.5"),
        ("bot_ratio", "0.5"),
        ("pfsp_weighting", "cubic"),
        ("pool_size", "4"),
        ("promotion_z", "0"),
        ("payoff_decay", "0"),
        ("rating", "glicko"),
        ("opponent_batch", "0"),
        ("checkpoint_add_interval", "0"),
        ("baseline_min_winrate", "1.2"),
        ("activate_after_steps", "-1"),
    ]
    for key, value in bad:
        with pytest.raises(ConfigError, match=rf"\[league\] (?:{key}|pool_size|bot_ratio)"):
            load_config(None, [f"--league.{key}", value])


def test_league_ini_is_default_plus_league_enabled():
    league = load_config(CONFIGS / "league.ini", []).to_dict()
    default = load_config(CONFIGS / "default.ini", []).to_dict()
    diff = {(s, k) for s in league for k in league[s] if league[s][k] != default[s][k]}
    assert diff == {("league", "enable")} and league["league"]["enable"] is True
    text = (CONFIGS / "league.ini").read_text()
    for f in dataclasses.fields(LeagueSection):
        assert f"\n{f.name} =" in text, f"league.ini does not document {f.name}"


# ---- PFSP and payoff --------------------------------------------------------------------------
def test_pfsp_weights_each_mode():
    p = np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(pfsp_weights(p, "squared"), np.array([0.64, 0.25, 0.01]) / 0.90)
    np.testing.assert_allclose(pfsp_weights(p, "variance"), np.array([0.16, 0.25, 0.09]) / 0.50)
    np.testing.assert_allclose(pfsp_weights(p, "linear"), np.array([0.8, 0.5, 0.1]) / 1.4)
    np.testing.assert_allclose(pfsp_weights(p, "uniform"), np.full(3, 1 / 3))
    np.testing.assert_allclose(pfsp_weights([1.0, 1.0], "squared"), [0.5, 0.5])  # all zero -> uniform
    assert len(pfsp_weights([], "squared")) == 0
    with pytest.raises(ValueError, match="pfsp"):
        pfsp_weights(p, "cubic")


def test_payoff_decay_math():
    pay = Payoff(decay=0.5)
    assert pay.winrate("a", "b") == 0.5  # never met: prior
    pay.update("a", "b", wins=1, losses=0, draws=0)
    pay.update("a", "b", wins=0, losses=1, draws=0)
    # a: wins 1*0.5 + 0 = 0.5, games 1*0.5 + 1 = 1.5
    assert pay.table[("a", "b")] == [0.5, 0.0, 1.5]
    assert pay.table[("b", "a")] == [1.0, 0.0, 1.5]
    assert pay.winrate("a", "b") == pytest.approx(1 / 3)
    assert pay.winrate("b", "a") == pytest.approx(2 / 3)
    pay.update("a", "b", wins=2, losses=0, draws=2)  # draws count half
    w, d, n = 0.25 + 2, 2.0, 0.75 + 4
    assert pay.table[("a", "b")] == [w, d, n]
    assert pay.winrate("a", "b") == pytest.approx((w + 0.5 * d) / n)
    pay.update("a", "b", wins=0, losses=1, draws=1)  # the draws decay too
    assert pay.table[("a", "b")] == [w * 0.5, d * 0.5 + 1, n * 0.5 + 2]
    assert pay.table[("b", "a")] == [0.5 * 0.5 + 1, d * 0.5 + 1, n * 0.5 + 2]  # b's wins: 1, 0.5, 1.25
    assert pay.games("a", "b") == n * 0.5 + 2 and pay.games("a", "zz") == 0.0
    pay.forget({"a"})
    assert pay.table == {}
    assert sorted(interleave(2, 1, 1)) == [-1, 0, 1, 1] and interleave(2, 2, 0)[:2] != [1, 1]


# ---- matchmaking ------------------------------------------------------------------------------
def test_matchmaker_shares_pfsp_and_seats():
    cfg = league_cfg(latest_ratio=0.6, bot_ratio=0.2)
    mm = Matchmaker(20000, cfg, BOTS, seed=3)
    mm.set_pool(["m0", "m1"], pfsp_weights([0.5, 0.0], "squared"))  # weights 0.25 : 1
    mm.reset(global_step=0)
    ids = np.array(mm.opponent_ids())
    frac = mm.fractions()
    assert frac["league/latest_opponent_fraction"] == pytest.approx(0.6, abs=0.015)
    assert frac["league/bot_fraction"] == pytest.approx(0.2, abs=0.015)
    assert frac["league/frozen_fraction"] == pytest.approx(0.2, abs=0.015)
    assert np.mean(ids == RANDOM) == pytest.approx(np.mean(ids == GREEDY), abs=0.015)
    assert np.mean(ids == "m1") / max(1, np.sum(ids == "m0")) * len(ids) == pytest.approx(4.0, rel=0.15)
    assert np.mean(mm.learner_seat) == pytest.approx(0.5, abs=0.015)
    # learner rows: both rows of self-play games, exactly the learner seat otherwise
    mask = mm.learner_mask.reshape(-1, 2)
    selfplay = ids == SELF
    assert mask[selfplay].all()
    assert (mask[~selfplay].sum(1) == 1).all()
    assert (mask[~selfplay, 1] == (mm.learner_seat[~selfplay] == 1)).all()
    assert list(mm.opponent_of_games(np.array([5, 0]))) == [ids[5], ids[0]]
    # an empty pool and no bots fall back to self-play
    lonely = Matchmaker(1000, league_cfg(latest_ratio=0.0, bot_ratio=0.5), (), seed=0)
    lonely.reset(0)
    assert set(lonely.opponent_ids()) == {SELF}
    with pytest.raises(ValueError, match="reserved"):
        mm.set_pool([LEARNER], [1.0])
    # a dropped member's running games go on as self-play: both rows become learner rows
    games = mm.drop_member("m1")
    assert len(games) == np.sum(ids == "m1") and set(mm.opponent_of_games(games)) == {SELF}
    assert mm.learner_mask.reshape(-1, 2)[games].all()


def test_not_yet_active_is_pure_selfplay():
    cfg = league_cfg(activate_after_steps=10**12, latest_ratio=0.0, bot_ratio=0.5)
    mgr = LeagueManager(cfg, play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "m0")
    env = TCGEnv(num_games=6, seed=1)
    obs, _ = env.reset()
    league = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 0), seed=0, device=CPU, dist=SINGLE
    )
    league.start(global_step=0)
    rng = np.random.default_rng(0)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    dones = 0
    for step in range(150):
        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)
        assert len(theirs) == 0 and np.array_equal(mine, rows)
        actions[rows] = random_actions(obs[rows], rng)
        obs, rewards, terminals, truncations, infos = env.step(actions)
        mask = league.after_step(rewards, terminals, truncations, infos, global_step=step * 6)
        dones += int(terminals.sum())
        assert mask.all() and league.matchmaker.learner_mask.all()
        assert set(league.matchmaker.opponent_ids()) == {SELF}
    assert dones > 0
    assert mgr.payoff.table == {}  # self-play games are not recorded
    assert league.metrics()["league/active"] == 0.0
    assert league.metrics()["league/latest_opponent_fraction"] == 1.0


def test_matchups_change_only_at_episode_boundaries():
    cfg = league_cfg(latest_ratio=0.25, bot_ratio=0.35, activate_after_steps=40, opponent_batch=4)
    mgr = LeagueManager(cfg, play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "m0", seed=0)
    ingest_tiny(mgr, "m1", seed=1)
    env = TCGEnv(num_games=8, seed=5)
    obs, _ = env.reset()
    league = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 2), seed=2, device=CPU, dist=SINGLE
    )
    league.start(global_step=0)
    mm = league.matchmaker
    rng = np.random.default_rng(1)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    history, done_history, kinds = [], [], set()
    outcomes: dict[str, list[int]] = {}  # learner's results per opponent, from the env's records
    global_step = 0
    for _ in range(300):
        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)
        # per-row opponent ids in force for this step (both rows of a game share the game's id)
        ids = [mm.id_of(c) for c in mm.row_opponent_codes()]
        history.append(ids)
        kinds.update(ids)
        game_ids, seats = mm.opponent_ids(), mm.learner_seat.copy()
        for g, who in enumerate(game_ids):
            learner = mm.learner_mask[2 * g : 2 * g + 2]
            if who == SELF:
                assert learner.all()
            else:  # the opponent's row is never a learner row
                assert learner.sum() == 1 and learner[seats[g]]
        assert not mm.learner_mask[theirs].any() and mm.learner_mask[mine].all()
        forwards = league.pool.forwards
        actions[mine] = random_actions(obs[mine], rng)
        actions[theirs] = league.act(obs, theirs)  # illegal actions would raise in step
        # one stacked forward per step for all frozen members (more rounds when a member has
        # more rows than opponent_batch = 4)
        theirs_ids = np.array(ids)[theirs]
        expected = max(-(-int(np.sum(theirs_ids == m)) // 4) for m in ("m0", "m1"))
        assert league.pool.forwards - forwards == expected
        obs, rewards, terminals, truncations, infos = env.step(actions)
        done = terminals | truncations
        done_history.append(done.copy())
        done_games = np.flatnonzero(done[0::2])
        assert len(infos) == len(done_games)
        for g, info in zip(done_games, infos):  # the env's own record of who won
            if game_ids[g] != SELF:
                result = 0 if info["winner"] == 2 else (1 if info["winner"] == seats[g] else -1)
                outcomes.setdefault(game_ids[g], []).append(result)
        global_step += len(mine)
        mask = league.after_step(rewards, terminals, truncations, infos, global_step)
        assert np.array_equal(mask[rows], np.isin(rows, mine))  # the mask that was in force
        done_rows = np.flatnonzero(done)
        state = league.pool.state  # opponent state reset by row index
        assert not state.h[done_rows].any() and not state.c[done_rows].any()
    history = np.array(history)
    changes = 0
    for t in range(1, len(history)):
        changed = history[t] != history[t - 1]
        assert not (changed & ~done_history[t - 1]).any(), f"matchup changed mid-game at step {t}"
        changes += int(changed.sum())
    assert changes > 0
    assert {SELF, RANDOM, GREEDY} <= kinds and kinds & {"m0", "m1"}
    assert (history[:5] == SELF).all()  # before activate_after_steps
    # every finished non-self game reached the payoff, credited to the right side: the decayed
    # counts recomputed from the env's records equal the manager's, and the metric is their score
    assert outcomes.get(RANDOM) and outcomes.get(GREEDY)
    league.epoch_work.record_results(league.take_results())  # what end_epoch does first
    assert {who for (a, who) in mgr.payoff.table if a == LEARNER} == set(outcomes)
    metrics = league.metrics()
    for who, results in outcomes.items():
        w, d, n = decayed(results, cfg.payoff_decay)
        assert mgr.payoff.table[(LEARNER, who)] == pytest.approx([w, d, n], abs=1e-9), who
        assert mgr.payoff.table[(who, LEARNER)] == pytest.approx(
            [decayed([-r for r in results], cfg.payoff_decay)[0], d, n], abs=1e-9
        ), who
        if who in (RANDOM, GREEDY, "m1"):  # the bots and the newest member are reported
            assert metrics[f"league/payoff_vs_{who}"] == pytest.approx((w + 0.5 * d) / n, abs=1e-9), who
    assert metrics["league/active"] == 1.0
    shares = [metrics[f"league/{kind}_fraction"] for kind in ("latest_opponent", "bot", "frozen")]
    assert sum(shares) == pytest.approx(1.0)


def _bot_league(cfg, games: int) -> tuple[LeagueOpponents, LeagueManager]:
    """A LeagueOpponents without an engine env (the random bot only) and "m0" in its pool."""
    mgr = LeagueManager(cfg, play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "m0")
    league = LeagueOpponents(
        cfg, tcg_rows(games), manager=mgr, seed=0, bots=training_bots(None, 0), device=CPU, dist=SINGLE
    )
    league.start(global_step=0)
    return league, mgr


def _force(league: LeagueOpponents, opponents: list[str], seats: list[int]) -> None:
    """Sets the running games by hand: game g plays opponents[g], the learner in seat seats[g]."""
    mm = league.matchmaker
    codes = [mm.code_of(o) for o in opponents]  # (registers a new id before the state is taken)
    state = mm.state_dict()
    state.update(game_code=codes, learner_seat=list(seats))
    mm.load_state_dict(state)
    assert mm.opponent_ids() == opponents


def test_after_step_credits_the_learner_seat():
    """A finished game is a learner win exactly when its record names the learner's seat as
    the winner, whichever seat that is, and is booked against that game's opponent (nothing
    for self-play or for a game that has not ended)."""
    cfg = league_cfg(latest_ratio=0.0, bot_ratio=1.0, payoff_decay=1.0)
    league, mgr = _bot_league(cfg, 4)
    assert mgr.payoff.table == {}
    _force(league, [RANDOM, "m0", SELF, "m0"], seats=[1, 0, 1, 1])
    mm = league.matchmaker
    in_force = [False, True, True, False, True, True, False, True]
    assert list(mm.learner_mask) == in_force
    terminals = np.zeros(8, dtype=bool)
    truncations = np.zeros(8, dtype=bool)
    terminals[:6] = True  # games 0-2 end; game 3 has not ended: not booked
    records = [
        {"winner": 1},  # game 0: seat 1 wins -> the learner won vs random
        {"winner": 1},  # game 1: seat 1 wins -> the learner (seat 0) lost vs m0
        {"winner": 0},  # game 2: self-play, not booked
    ]
    mask = league.after_step(np.zeros(8, dtype=np.float32), terminals, truncations, records, global_step=10)
    assert list(mask) == in_force  # the mask of the step taken
    assert mgr.payoff.table == {}, "results reach the payoff once per epoch"
    league.epoch_work.record_results(league.take_results())
    assert mgr.payoff.table == {
        (LEARNER, RANDOM): [1.0, 0.0, 1.0],
        (RANDOM, LEARNER): [0.0, 0.0, 1.0],
        (LEARNER, "m0"): [0.0, 0.0, 1.0],
        ("m0", LEARNER): [1.0, 0.0, 1.0],
    }
    assert mm.opponent_ids()[3] == "m0" and mm.learner_seat[3] == 1  # a running game keeps its matchup
    assert set(mm.opponent_ids()[:3]) <= {RANDOM, "m0"}  # finished games were redrawn
    # the mirror image (the learner in seat 1 loses when seat 0 wins), and a truncated game: a draw
    league, mgr = _bot_league(cfg, 2)
    _force(league, [RANDOM, RANDOM], seats=[1, 0])
    ended = (np.array([True, True, False, False]), np.array([False, False, True, True]))
    league.after_step(np.zeros(4, dtype=np.float32), *ended, [{"winner": 0}, {"winner": DRAW}], 10)
    league.epoch_work.record_results(league.take_results())
    assert mgr.payoff.table[(LEARNER, RANDOM)] == [0.0, 1.0, 2.0]  # a loss and a draw
    assert mgr.payoff.table[(RANDOM, LEARNER)] == [1.0, 1.0, 2.0]
    assert league.metrics()["league/payoff_vs_random"] == 0.25
    with pytest.raises(RuntimeError, match="lost episode records"):
        league.after_step(np.zeros(4, dtype=np.float32), *ended, [{"winner": 0}], 11)


def test_league_results_follow_the_winner_whatever_the_shaping():
    """With a large shaping coefficient a loss can end on a positive reward (and a win below
    0.5): the payoff books who won, from the env's record."""
    cfg = league_cfg(latest_ratio=0.0, bot_ratio=1.0, payoff_decay=1.0)
    env = TCGEnv(num_games=8, seed=4, reward_shaping=5.0)
    obs, _ = env.reset()
    league = LeagueOpponents(
        cfg,
        RowFormat.of(env),
        manager=LeagueManager(cfg, play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT),
        bots=training_bots(env, 1),
        seed=1,
        device=CPU,
        dist=SINGLE,
    )
    league.start(global_step=0)
    rng = np.random.default_rng(2)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    expected: dict[str, list[float]] = {}  # opponent -> [wins, draws, games] from the records
    misread = 0
    for step in range(400):
        rows = np.flatnonzero(env.masks)
        mine, theirs = league.split(rows)
        actions[mine] = random_actions(obs[mine], rng)
        actions[theirs] = league.act(obs, theirs)
        seats, opponents = league.matchmaker.learner_seat.copy(), league.matchmaker.opponent_ids()
        obs, rewards, terminals, truncations, infos = env.step(actions)
        for g, info in zip(np.flatnonzero((terminals | truncations)[0::2]), infos):
            won, drawn = info["winner"] == seats[g], info["winner"] == DRAW
            tally = expected.setdefault(opponents[g], [0.0, 0.0, 0.0])
            tally[0], tally[1], tally[2] = tally[0] + won, tally[1] + drawn, tally[2] + 1
            misread += (rewards[2 * g + seats[g]] > 0.5) != won
        league.after_step(rewards, terminals, truncations, infos, step)
    assert misread > 0, "the shaping never moved a final reward across 0.5: the check proves nothing"
    league.epoch_work.record_results(league.take_results())
    assert expected and all(league.manager.payoff.table[(LEARNER, o)] == t for o, t in expected.items())


def test_match_results_are_credited_to_the_right_player():
    """The real runner, greedy vs random from both sides: the report is the first side's."""
    greedy = play_match(bot_side(GREEDY), bot_side(RANDOM, seed=1), episodes=64, seed=3, parallel=32)
    rand = play_match(bot_side(RANDOM, seed=1), bot_side(GREEDY), episodes=64, seed=3, parallel=32)
    assert greedy.games == rand.games == 64
    assert greedy.winrate > 0.7 and rand.winrate < 0.3
    assert abs(greedy.wins - rand.losses) <= 6 and abs(greedy.losses - rand.wins) <= 6  # mirrored
    for report, high in ((greedy, True), (rand, False)):  # in both seats, not just on average
        for seat, row in report.summary()["per_seat"].items():
            assert row["games"] == 32 and (row["winrate"] > 0.6 if high else row["winrate"] < 0.4), seat
    # the manager's default player is the same runner, seen from its first argument
    store = MemberStore()
    player = MemberMatches(store, EMBERFRONT_RUNNER, CPU, seed=0)
    a, b = player.prepare(GREEDY, RANDOM, 32)(), player.prepare(RANDOM, GREEDY, 32)()
    assert a.games == b.games == 32 and a.winrate > 0.7 and b.winrate < 0.3


# ---- the frozen pool --------------------------------------------------------------------------
def test_opponent_state_reset_uses_row_indices():
    empty = FrozenPool(tcg_rows(4), max_batch=16, device=CPU)
    with pytest.raises(TypeError, match="boolean mask"):  # refused before any member too
        empty.reset_rows(np.ones(8, dtype=bool))
    policy, _ = tiny_policy()
    pool = FrozenPool(tcg_rows(4), max_batch=16, device=CPU)
    pool.add("m", policy, TCGSampler())
    state = pool.state
    state.h.fill_(1.0)
    state.c.fill_(1.0)
    pool.reset_rows(np.array([3, 3, -1, 8, 999, 5], dtype=np.int64))  # duplicates, out of range
    zeroed = [r for r in range(8) if not state.h[r].any()]
    assert zeroed == [3, 5] and [r for r in range(8) if not state.c[r].any()] == [3, 5]
    mask = np.zeros(8, dtype=bool)
    mask[[1, 2]] = True
    with pytest.raises(TypeError, match="boolean mask"):
        pool.reset_rows(mask)  # the seed-001 bug: a mask is not row ids
    with pytest.raises(TypeError, match="boolean mask"):
        Matchmaker(4, league_cfg(), BOTS).on_episode_end(np.array([True, False, False, True]), 0)
    assert state.h[1].all() and state.h[2].all()


def test_member_files_are_checkpoints_loaded_frozen(tmp_path):
    policy, pc = tiny_policy()
    store = MemberStore(tmp_path)
    member = store.ingest("m", policy.state_dict(), pc, {"subaction_temperature": 0.5}, step=7, epoch=3)
    # a member file is a checkpoint, read back through load_checkpoint (weights only), its path
    # relative to the run directory (the league directory's parent)
    assert member.path == f"{tmp_path.name}/members/m.pt" and store.file(member.path) == tmp_path / "members" / "m.pt"
    assert torch.load(store.file(member.path), weights_only=True)["policy_config"] == pc
    ckpt = load_checkpoint(store.file(member.path), log=quiet)
    assert (ckpt.global_step, ckpt.state["epoch"]) == (7, 3)
    assert ckpt.state["sampling_params"] == {"subaction_temperature": 0.5}
    loaded, sampler = store.load("m")
    assert sampler.get_sampling_params()["subaction_temperature"] == 0.5 and not any(
        p.requires_grad for p in loaded.parameters()
    )
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), policy.state_dict().values()))


def test_a_state_with_absolute_member_paths_resumes_from_a_moved_run(tmp_path):
    """States written before member paths were relative hold absolute ones: a resume from the run
    directory's new place finds the files there and adopts them with relative paths."""
    policy, pc = tiny_policy()
    old = MemberStore(tmp_path / "old" / "league")
    old.ingest("m", policy.state_dict(), pc)
    state = old.state_dict()
    state["members"][0]["path"] = str(tmp_path / "old" / "league" / "members" / "m.pt")
    (tmp_path / "old").rename(tmp_path / "moved")
    store = MemberStore(tmp_path / "new" / "league")
    store.load_state_dict(state, origin=Origin(tmp_path / "moved" / "model_x_000001.pt"))
    assert store.members["m"].path == "league/members/m.pt" and (tmp_path / "new/league/members/m.pt").is_file()
    loaded, _ = store.load("m")
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), policy.state_dict().values()))


# ---- the headline command ----------------------------------------------------------------------
@pytest.mark.slow  # a 4-epoch league training run: ~10 s on a loaded 2-core box
def test_league_smoke_run_fills_pool_promotes_and_logs(tmp_path):
    """`python train.py --league-enable --config configs/smoke.ini`: the smoke config's [league]
    keys make the pool fill and promotion decisions happen; the state file and its .bak are
    written, the members are checkpoint files, and the league/* keys are logged."""
    argv = ["--league-enable", "--config", str(CONFIGS / "smoke.ini"), "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(argv) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    state_file = run_dir / "league" / STATE_FILE
    assert state_file.is_file() and state_file.with_name(STATE_FILE + ".bak").is_file()
    state = json.loads(state_file.read_text())
    assert state["candidates"] == 4 and state["promotions"] >= 1 and len(state["members"]) == 3
    assert state["champion"] in {m["id"] for m in state["members"]}
    decisions = state["decisions"]
    assert [d["candidate"] for d in decisions] == ["e000001", "e000002", "e000003", "e000004"]
    assert sum(d["promoted"] for d in decisions) == state["promotions"]
    assert decisions[0]["promoted"] and decisions[0]["vs_champion"] is None  # the first champion
    for d in decisions:
        assert sum(d["vs_baselines"][GREEDY]) == 16  # eval_games, one duplicate match
        assert d["vs_champion"] is None or sum(d["vs_champion"]) == 16
    for m in state["members"]:  # each member file is a checkpoint
        assert load_checkpoint(run_dir / m["path"], log=quiet).state["epoch"] == m["epoch"]
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for key in (
        "league/active",
        "league/pool_size",
        "league/latest_opponent_fraction",
        "league/champion_rating",
        "league/promotions",
    ):
        assert all(key in x for x in lines), key
    assert lines[-1]["league/active"] == 1.0 and lines[-1]["league/pool_size"] == 3
    assert lines[-1]["league/promotions"] == state["promotions"]
    assert math.isfinite(lines[-1]["league/champion_rating"])
    assert not any(k.startswith("league/winrate_vs_") for x in lines for k in x)  # renamed payoff_vs_*


def test_opponent_rows_never_enter_the_learner_batch(tmp_path):
    """Trainer.collect with every game against a bot: the buffer holds exactly the learner's
    deciding rows, step by step; the bots' rows are acted for and never stored."""
    over = (
        "--league.enable true --league.activate-after-steps 0 --league.latest-ratio 0 --league.bot-ratio 1 "
        "--train.eval-interval 0"
    ).split()
    trainer = build_trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "run")
    assert isinstance(trainer.opponents, LeagueOpponents)
    learner_rows, opponent_rows = [], 0
    step = trainer.env.step

    def spy(actions):
        rows = np.flatnonzero(trainer.env.masks)
        mine = trainer.opponents.matchmaker.learner_mask[rows]
        learner_rows.append(rows[mine])
        nonlocal opponent_rows
        opponent_rows += int((~mine).sum())
        return step(actions)

    trainer.env.step = spy
    trainer.collect(trainer.sampler.params_tensor())
    buf = trainer.learner.buffer
    assert buf.size == trainer.cfg.train.batch_size and opponent_rows > 0
    assert np.array_equal(buf.rows[: buf.size], np.concatenate(learner_rows)[: buf.size])


def straight_and_resumed(over: list[str], tmp_path: Path):
    """(a, b): `a` trained 4 epochs of smoke.ini + `over`; `b` built afresh, resumed (optimizer
    loaded) from a's checkpoint after epoch 2, then trained 2 epochs."""
    cfg = load_config(CONFIGS / "smoke.ini", over)
    a = build_trainer(cfg, tmp_path / "smoke_a")
    a.train_epoch()
    a.train_epoch()
    path = checkpoint_writer(tmp_path / "smoke_a", cfg)(a)
    a.train_epoch()
    a.train_epoch()
    b = build_trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "smoke_b")
    apply_resume(
        b, load_checkpoint(path, b.policy.config, log=quiet), ResumeOptions(str(path), load_optimizer=True), log=quiet
    )
    b.train_epoch()
    b.train_epoch()
    return a, b


@pytest.mark.slow  # 6 league training epochs: ~15 s on a loaded 2-core box
def test_league_run_resumes_exactly_through_a_checkpoint(tmp_path):
    """Trainer-level resume of a league run (fresh objects, optimizer loaded): after two more
    epochs the weights, the pool, ratings and payoff, and the matchups equal the straight run's."""
    over = "--league.enable true --train.eval-interval 0 --league.pool-size 8 --env.num-games 8".split()
    a, b = straight_and_resumed(over, tmp_path)
    ma, mb = a.opponents.manager.state_dict(), b.opponents.manager.state_dict()
    assert ma["candidates"] == 4 and ma["promotions"] >= 1
    for key in ("champion", "ratings", "payoff", "promotions", "candidates", "decisions"):
        assert ma[key] == mb[key], key
    assert [m["id"] for m in ma["members"]] == [m["id"] for m in mb["members"]]
    assert a.opponents.matchmaker.opponent_ids() == b.opponents.matchmaker.opponent_ids()
    assert np.array_equal(a.opponents.matchmaker.learner_seat, b.opponents.matchmaker.learner_seat)
    assert torch.equal(a.opponents.pool.state.h, b.opponents.pool.state.h)
    for name, t in a.policy.state_dict().items():
        assert torch.equal(t, b.policy.state_dict()[name]), name


def test_weights_only_resume_of_a_league_run_keeps_member_ids_unique(tmp_path):
    """A weights-only resume restarts the epoch count at 0 while the pool keeps e000001...: the
    next candidates get fresh ids instead of colliding with the restored members."""
    over = "--league.enable true --train.eval-interval 0 --env.num-games 8".split()
    cfg = load_config(CONFIGS / "smoke.ini", over)
    a = build_trainer(cfg, tmp_path / "smoke_a")
    a.train_epoch()
    path = checkpoint_writer(tmp_path / "smoke_a", cfg)(a)
    b = build_trainer(load_config(CONFIGS / "smoke.ini", over), tmp_path / "smoke_b")
    apply_resume(b, load_checkpoint(path, b.policy.config, log=quiet), ResumeOptions(str(path)), log=quiet)
    assert b.epoch == 0 and b.opponents.manager.pool_ids() == ["e000001"]
    b.train_epoch()
    assert b.opponents.manager.pool_ids() == ["e000001", "e000001r1"]


# ---- promotion --------------------------------------------------------------------------------
def test_promotion_accepted_and_rejected_with_reasons():
    logs = []
    play = Scripted()
    mgr = LeagueManager(league_cfg(), play=play, log=logs.append, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "c1")
    play.results = {GREEDY: (26, 38, 0)}  # 26/64 = 0.41 vs greedy
    d = mgr.evaluate("c1")
    assert not d.promoted and d.reason == "baseline gate: 0.41 vs greedy < 0.6"
    assert mgr.champion is None and "rejected - baseline gate: 0.41 vs greedy < 0.6" in logs[-1]
    ingest_tiny(mgr, "c2")
    play.results = {GREEDY: (50, 14, 0)}
    d = mgr.evaluate("c2")  # no champion yet: the baseline gate only
    assert d.promoted and mgr.champion == "c2" and mgr.promotions == 1
    assert d.reason == "promoted: first champion (passed the baseline gate)" and d.vs_champion is None
    ingest_tiny(mgr, "c3")
    play.results = {("c3", "c2"): (38, 26, 0), GREEDY: (60, 4, 0)}  # 0.59 point, lower ~0.47
    d = mgr.evaluate("c3")
    assert not d.promoted and d.reason.startswith("wilson lower bound 0.47 < 0.55 over 64 games")
    assert mgr.champion == "c2" and d.champion_before == "c2" and d.vs_champion == (38, 26, 0)
    mgr.cfg = dataclasses.replace(mgr.cfg, eval_games=32)
    ingest_tiny(mgr, "c4")
    play.results = {("c4", "c2"): (32, 0, 0), GREEDY: (10, 22, 0)}
    d = mgr.evaluate("c4")
    assert not d.promoted and d.reason == "only 32 games < 64; baseline gate: 0.31 vs greedy < 0.6"
    mgr.cfg = dataclasses.replace(mgr.cfg, eval_games=64)
    ingest_tiny(mgr, "c5")
    play.results = {("c5", "c2"): (50, 10, 4), GREEDY: (45, 19, 0)}
    d = mgr.evaluate("c5")
    assert d.promoted and mgr.champion == "c5" and mgr.promotions == 2
    assert d.reason.startswith("promoted: wilson lower bound 0.")
    assert ("c5", "c2", 64) in play.calls and ("c5", GREEDY, 64) in play.calls
    assert [x["candidate"] for x in mgr.decisions] == ["c1", "c2", "c3", "c4", "c5"]
    # evaluation matches reach the payoff, from the candidate's side
    assert mgr.payoff.table[("c5", "c2")][0] == 50 and mgr.payoff.table[("c2", "c5")][0] == 10
    # ratings moved the right way; metrics report them
    assert mgr.ratings.mu("c5") > mgr.ratings.mu("c2")
    m = mgr.metrics()
    assert m["league/champion_rating"] == pytest.approx(mgr.ratings.mu("c5") - 3 * mgr.ratings.sigma("c5"))
    assert m["league/promotions"] == 2 and m["league/candidates"] == 5 and m["league/pool_size"] == 5
    # the rule alone: a stricter z makes the same result fail
    result = (Tally(50, 10, 4), {GREEDY: Tally(45, 19, 0)})
    assert decide(mgr.cfg, "x", "c2", *result).promoted
    strict = decide(league_cfg(promotion_z=4.5), "x", "c2", *result)
    assert not strict.promoted and strict.reason.startswith("wilson lower bound") and strict.lower_bound < 0.55


# ---- retention --------------------------------------------------------------------------------
def test_pool_retention():
    ids = [f"m{i:02d}" for i in range(20)]
    kept = retain_ids(ids, "m07", pool_size=8, keep_recent=3, keep_old=2)
    assert len(kept) == 8 and kept == sorted(kept)
    assert {"m00", "m01", "m07", "m17", "m18", "m19"} <= set(kept)
    spread = [k for k in kept if k not in {"m00", "m01", "m07", "m17", "m18", "m19"}]
    assert spread == ["m02", "m16"]  # 2 slots: spread over the whole middle
    assert retain_ids(ids[:5], None, 8, 3, 2) == ids[:5]
    kept = retain_ids(ids, None, pool_size=10, keep_recent=3, keep_old=2)
    mid = [int(k[1:]) for k in kept if k not in {"m00", "m01", "m17", "m18", "m19"}]
    assert len(mid) == 5 and max(np.diff(mid)) - min(np.diff(mid)) <= 1  # evenly spaced by age


def test_manager_retention_keeps_champion_and_prunes_files_after_checkpoints(tmp_path):
    cfg = league_cfg(pool_size=4, keep_recent=1, keep_old=1)
    play = Scripted({GREEDY: (64, 0, 0)})
    mgr = LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    for i in range(10):
        ingest_tiny(mgr, f"e{i:02d}", epoch=i)
        if i == 0:
            mgr.evaluate("e00")  # champion
            play.results = {(f"e{j:02d}", "e00"): (0, 64, 0) for j in range(10)} | {GREEDY: (64, 0, 0)}
        else:
            mgr.evaluate(f"e{i:02d}")
        assert len(mgr.pool_ids()) <= 4
    assert mgr.champion == "e00" and "e00" in mgr.pool_ids() and "e09" in mgr.pool_ids()
    # a retiree stays loadable one round (games vs it may still run); no file goes at retirement,
    # only once a checkpoint that no longer names it is written (prune, right after that write)
    retired = list(mgr.store.retired)
    files = sorted(p.stem for p in (tmp_path / "members").glob("*.pt"))
    assert retired and files == [f"e{i:02d}" for i in range(10)]
    named = mgr.pool_ids() + retired
    assert mgr.store.prune() == sorted(set(files) - set(named))
    assert sorted(p.stem for p in (tmp_path / "members").glob("*.pt")) == sorted(named)
    assert sorted(p.stem for p in (tmp_path / "members").glob("*.json")) == sorted(named), "sidecars go too"
    policy, _ = mgr.load_policy(retired[0])
    assert not any(p.requires_grad for p in policy.parameters())
    assert set(mgr.ratings.ratings) <= set(mgr.pool_ids()) | {RANDOM, GREEDY, LEARNER}
    assert {x for pair in mgr.payoff.table for x in pair} <= set(mgr.pool_ids()) | {RANDOM, GREEDY, LEARNER}
    with pytest.raises(KeyError):
        mgr.load_policy("e02")  # retired two rounds ago: gone
    # ... unless a running game still plays it: then it stays a retiree, file and all, until none does
    gone = retired[0]
    mgr.note_playing({gone})
    for i in (10, 11):
        ingest_tiny(mgr, f"e{i:02d}", epoch=i)
        mgr.evaluate(f"e{i:02d}")
    mgr.store.prune()  # a retiree a running game plays stays
    assert gone in mgr.store.retired and mgr.load_policy(gone)[0] is not None
    assert (tmp_path / "members" / f"{gone}.pt").is_file()
    mgr.note_playing(set())
    ingest_tiny(mgr, "e12", epoch=12)
    mgr.evaluate("e12")
    assert gone not in mgr.store.retired and (tmp_path / "members" / f"{gone}.pt").is_file()
    mgr.store.prune()
    assert not (tmp_path / "members" / f"{gone}.pt").exists()


# ---- state file -------------------------------------------------------------------------------
def _snapshot(mgr):
    return json.loads(json.dumps(mgr.state_dict()))


def test_league_state_round_trip_and_bak_recovery(tmp_path):
    cfg = league_cfg()
    play = Scripted({GREEDY: (50, 10, 4)})
    mgr = LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    for i in range(3):
        ingest_tiny(mgr, f"e{i}", seed=i, epoch=i, sampling_params={"smoothing_eps": 0.01 * i})
        mgr.evaluate(f"e{i}")  # saves
        mgr.record_game(LEARNER, f"e{i}", win=i % 2 == 0, loss=i % 2 == 1)
    mgr.save()
    previous = _snapshot(mgr)
    mgr.record_game(LEARNER, "e0", win=False, loss=False)
    mgr.save()
    full = _snapshot(mgr)
    assert full != previous
    assert (tmp_path / STATE_FILE).is_file() and (tmp_path / (STATE_FILE + ".bak")).is_file()

    fresh = LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    assert fresh.load()
    assert _snapshot(fresh) == full
    assert fresh.pool_ids() == mgr.pool_ids() and fresh.champion == mgr.champion
    for name in mgr.ratings.ratings:
        assert (fresh.ratings.mu(name), fresh.ratings.sigma(name)) == (mgr.ratings.mu(name), mgr.ratings.sigma(name))
    assert fresh.payoff.table == mgr.payoff.table
    policy, sampler = fresh.load_policy("e1")
    ref, _ = mgr.load_policy("e1")
    assert sampler.get_sampling_params()["smoothing_eps"] == pytest.approx(0.01)
    assert all(torch.equal(a, b) for a, b in zip(policy.state_dict().values(), ref.state_dict().values()))

    # a torn / corrupt main file: load the .bak (the previous save) and say so
    (tmp_path / STATE_FILE).write_text('{"version": 1, "members": [')
    logs = []
    recovered = LeagueManager(cfg, tmp_path, play=play, log=logs.append, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    assert recovered.load()
    assert _snapshot(recovered) == previous
    assert any("backup" in line for line in logs)
    empty = LeagueManager(cfg, tmp_path / "none", play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    assert empty.load() is False
    # a state naming a member whose file is gone is refused, naming it, and changes nothing; a
    # resume that allows it drops the member (and says so)
    (tmp_path / "members" / "e0.pt").unlink()
    state = json.loads((tmp_path / (STATE_FILE + ".bak")).read_text())
    with pytest.raises(CheckpointError, match=r"missing: e0 \(.*members/e0.pt\) - .*--league-allow-missing-members"):
        recovered.load_state_dict(state)
    assert "e0" in recovered.pool_ids()
    logs.clear()
    recovered.load_state_dict(state, Origin(tmp_path.parent / "model.pt", allow_missing_members=True))
    assert "e0" not in recovered.pool_ids() and "e1" in recovered.pool_ids()
    assert any("dropping e0" in line for line in logs)
    # both files unreadable: refused, naming both
    (tmp_path / (STATE_FILE + ".bak")).write_text("{")
    with pytest.raises(ValueError, match="no loadable league state"):
        LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT).load()


# ---- real matches and the epoch hook ------------------------------------------------------------
def test_real_match_player_and_end_epoch(tmp_path):
    cfg = league_cfg(
        eval_games=4,
        promotion_min_games=4,
        checkpoint_add_interval=2,
        baseline_min_winrate=0.0,
        latest_ratio=0.0,
        bot_ratio=0.5,
    )
    logs = []
    mgr = LeagueManager(
        cfg, tmp_path, seed=0, log=logs.append, turn_cap=4, device=CPU, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    assert isinstance(mgr.matches, MemberMatches)
    assert mgr.prepare(RANDOM, GREEDY, 5)().games == 6  # whole duplicate deals: 5 -> 6 games
    assert mgr.prepare(RANDOM, GREEDY, 4)() == mgr.prepare(RANDOM, GREEDY, 4)()  # seeded by the pair
    env = TCGEnv(num_games=4, seed=0)
    env.reset()
    league = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 0), seed=0, device=CPU, dist=SINGLE
    )
    league.start(0)
    policy, _ = tiny_policy()
    sampler = TCGSampler(subaction_temperature=0.7)
    league.end_epoch(1, 100, policy, sampler)
    assert mgr.candidates == 0 and mgr.pool_ids() == []
    league.end_epoch(2, 200, policy, sampler)
    decision = mgr.decisions[-1]
    assert decision["candidate"] == "e000002" and decision["promoted"]  # baseline gate 0: first champion
    assert mgr.champion == "e000002" and sum(decision["vs_baselines"][GREEDY]) == 4
    assert "e000002" in league.pool and league.matchmaker.pool == ["e000002"]
    assert mgr.load_policy("e000002")[1].get_sampling_params() == sampler.get_sampling_params()
    assert mgr.prepare("e000002", RANDOM, 3)().games == 4
    assert (tmp_path / STATE_FILE).is_file() and logs
    metrics = league.metrics()
    assert {
        "league/active",
        "league/pool_size",
        "league/latest_opponent_fraction",
        "league/bot_fraction",
        "league/frozen_fraction",
        "league/champion_rating",
        "league/promotions",
        "league/candidates",
    } <= set(metrics)
    league.start(0)  # redraw, now with a member in the pool
    state = league.state_dict()
    other = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 9), seed=9, device=CPU, dist=SINGLE
    )
    other.load_state_dict(state, exact=True, log=quiet)
    assert other.matchmaker.opponent_ids() == league.matchmaker.opponent_ids()
    assert np.array_equal(other.matchmaker.learner_mask, league.matchmaker.learner_mask)
    every_row = np.arange(2 * env.num_games)
    assert list(other.opponent_of_rows(every_row)) == list(league.opponent_of_rows(every_row))


def test_resume_continues_running_frozen_games_exactly(tmp_path):
    cfg = league_cfg(latest_ratio=0.0, bot_ratio=0.0, opponent_batch=8)
    play = Scripted({GREEDY: (64, 0, 0)})
    mgr = LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "m0", seed=3)
    mgr.evaluate("m0")
    env = TCGEnv(num_games=4, seed=2)
    obs, _ = env.reset()
    league = LeagueOpponents(
        cfg, RowFormat.of(env), manager=mgr, bots=training_bots(env, 4), seed=4, device=CPU, dist=SINGLE
    )
    league.start(global_step=0)
    assert set(league.matchmaker.opponent_ids()) == {"m0"}
    rng = np.random.default_rng(0)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    for step in range(12):
        mine, theirs = league.split(np.flatnonzero(env.masks))
        actions[mine] = random_actions(obs[mine], rng)
        actions[theirs] = league.act(obs, theirs)
        obs, rewards, terminals, truncations, infos = env.step(actions)
        league.after_step(rewards, terminals, truncations, infos, step)
    state = league.state_dict()
    resumed_mgr = LeagueManager(cfg, tmp_path, play=play, log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    assert resumed_mgr.load()
    resumed = LeagueOpponents(
        cfg, RowFormat.of(env), manager=resumed_mgr, bots=training_bots(env, 99), seed=99, device=CPU, dist=SINGLE
    )
    resumed.load_state_dict(state, exact=True, log=quiet)
    assert resumed.matchmaker.opponent_ids() == league.matchmaker.opponent_ids()
    assert np.array_equal(resumed.matchmaker.learner_mask, league.matchmaker.learner_mask)
    assert league.pool.state.h.abs().sum() > 0
    assert torch.equal(resumed.pool.state.h, league.pool.state.h)
    assert torch.equal(resumed.pool.state.c, league.pool.state.c)
    theirs = league.split(np.flatnonzero(env.masks))[1]
    a, b = league.act(obs, theirs), resumed.act(obs, theirs)
    assert len(theirs) and np.array_equal(a, b)  # same state, same RNG: same actions
    # without `exact` only the pool comes back: the running matchups are this side's own
    inexact = LeagueOpponents(
        cfg, RowFormat.of(env), manager=resumed_mgr, bots=training_bots(env, 99), seed=99, device=CPU, dist=SINGLE
    )
    inexact.load_state_dict(state, exact=False, log=quiet)
    assert inexact.pool.ids() == ["m0"] and set(inexact.matchmaker.opponent_ids()) == {SELF}


def test_resume_with_a_running_game_vs_a_member_whose_file_is_gone(tmp_path):
    """A running game against a member retired in the last round whose file has since been deleted
    (the original run went on): the resume is refused, naming it; with the resume's
    allow_missing_members the game continues as self-play, with a warning, as documented."""
    cfg = league_cfg(pool_size=3, keep_recent=1, keep_old=1, latest_ratio=0.0, bot_ratio=0.0)
    mgr = LeagueManager(
        cfg, tmp_path, play=Scripted({GREEDY: (64, 0, 0)}), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT
    )
    for i in range(4):
        ingest_tiny(mgr, f"e{i}", epoch=i)
        mgr.evaluate(f"e{i}")
    assert mgr.pool_ids() == ["e0", "e2", "e3"] and list(mgr.store.retired) == ["e1"]
    league = LeagueOpponents(
        cfg, tcg_rows(2), manager=mgr, seed=0, bots=training_bots(None, 0), device=CPU, dist=SINGLE
    )
    league.start(0)
    _force(league, ["e1", "e2"], seats=[0, 1])
    state = league.state_dict()
    mgr.store.file(mgr.store.retired["e1"]["path"]).unlink()

    def resumed() -> LeagueOpponents:
        manager = LeagueManager(cfg, tmp_path, play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
        return LeagueOpponents(
            cfg, tcg_rows(2), manager=manager, seed=0, bots=training_bots(None, 0), device=CPU, dist=SINGLE
        )

    with pytest.raises(CheckpointError, match=r"missing: e1 \("):
        resumed().load_state_dict(state, exact=True, log=quiet)
    logs = []
    allowed = Origin(tmp_path.parent / "model.pt", allow_missing_members=True)
    league = resumed()
    league.load_state_dict(state, exact=True, log=logs.append, origin=allowed)
    assert league.matchmaker.opponent_ids() == [SELF, "e2"] and any("e1 cannot be loaded" in x for x in logs)


@pytest.mark.slow  # fast set: test_league_evaluation (background vs inline)
def test_bench_league_times_a_candidates_evaluation_matches(tmp_path):
    """`bench league` on the smoke config: besides the two throughputs, one candidate's
    evaluation matches were played - eval_games vs the champion and vs greedy - and timed, and
    the learner's candidate epochs with those matches inline and in the background."""
    out = tmp_path / "league.json"
    argv = ["league", "--config", str(CONFIGS / "smoke.ini"), "--members", "3", "--epochs", "1", "--json", str(out)]
    argv += ["--candidate-epochs", "2"]
    assert bench_main(argv) == 0
    figures = json.loads(out.read_text())
    assert figures["candidate_games"] == 2 * load_config(CONFIGS / "smoke.ini").league.eval_games
    assert figures["candidate_seconds"] > 0 and figures["candidate_epochs"] > 0
    assert figures["sps_league"] > 0 and figures["sps_selfplay"] > 0
    # where the time went: the bots act only in the league's epochs; the frozen members decide in
    # the learner's own step (no time of their own), whose upload gains their position grids and
    # whose one download brings their actions too
    selfplay, league = figures["split"]["selfplay"], figures["split"]["league"]
    assert league["bots_seconds"] > 0 and figures["frozen_forwards"] > 0 and "frozen_seconds" not in league
    assert league["bytes_up_per_step"] > selfplay["bytes_up_per_step"] > 0
    assert league["bytes_down_per_step"] == selfplay["bytes_down_per_step"] > 0
    for mode in (selfplay, league):
        parts = mode["learner_step_seconds"] + mode["env_seconds"] + mode["opponents_seconds"]
        assert 0 < mode["env_seconds"] and parts == pytest.approx(mode["rollout_seconds"])
    # candidate epochs, each ingesting a candidate: inline decides warm-up + 2; background, one
    # epoch behind, as many (an untimed first epoch in its block, its last candidate pending)
    assert figures["candidate_epoch_seconds"]["inline"] > 0 and figures["candidate_epoch_ratio"] > 0
    assert figures["candidate_matches_seconds"]["inline"] > 0 and figures["candidate_wait_seconds"]["inline"] == 0
    assert figures["candidate_decisions"] == {"inline": 3, "background": 3}
