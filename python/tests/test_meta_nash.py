"""The league's Nash mixture (PSRO): the meta-solver recovers known equilibria from payoff
matrices, leaves out entries measured on too few games, the manager fills the members' payoff and
draws / retains by the meta-Nash, and a mixture file (`league_policy.pt`) is judged exactly like
the reach-weighted average it plays (weights (1, 0): the first member alone); bad mixture files
are refused in one line, exit 2."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import evaluate_checkpoint
from tcgleague import exact as exact_cli
from tcgleague import openspiel_judge as exact
from tcgleague import play as play_cli
from tcgleague import train as train_cli
from tcgleague.checkpoint import CheckpointError, load_checkpoint
from tcgleague.checkpoint.files import read_state
from tcgleague.exploit.__main__ import main as exploit_main
from tcgleague.exploit.target_side import actor_state, load_actor_state, load_target
from tcgleague.game import game_named
from tcgleague.games.emberfront.game import EMBERFRONT_RUNNER
from tcgleague.games.emberfront.layout import NAME as EMBERFRONT
from tcgleague.games.poker.exact import JUDGED
from tcgleague.games.poker.match import POKER_BOTS
from tcgleague.games.poker.rows import PokerPufferEnv
from tcgleague.league.manager import LeagueManager
from tcgleague.league.matchmaking import LEARNER
from tcgleague.league.meta_nash import exploitability, payoff_matrix, solve_symmetric
from tcgleague.league.mixture import MIXTURE_FILE, delivered_ids, load_mixture, mixture_weights, write_mixture
from tcgleague.league.promotion import retain_by_weight
from tcgleague.league.ratings import Payoff
from tcgleague.policy.flat import FlatPolicyConfig, build_flat_policy
from tcgleague.replay import __main__ as replay_cli
from tcgleague.report.data import load_run
from tcgleague.report.figures import payoff_ids
from test_game_plugin import KUHN_LEAGUE, UNIFORM
from test_league import Scripted, ingest_tiny, league_cfg, quiet

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROCK_PAPER_SCISSORS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
# strategy 0 beats both others, 1 beats 2: (1, 0, 0) is the one equilibrium, and it is pure
PURE = np.array([[0, 0.3, 0.2], [-0.3, 0, 0.1], [-0.2, -0.1, 0]])


def test_the_meta_solver_recovers_known_equilibria():
    rps = solve_symmetric(ROCK_PAPER_SCISSORS)
    np.testing.assert_allclose(rps, [1 / 3] * 3, atol=1e-3)
    assert exploitability(ROCK_PAPER_SCISSORS, rps) < 1e-3
    pure = solve_symmetric(PURE)
    assert pure[0] > 0.999 and exploitability(PURE, pure) < 1e-6
    # a cycle among three strong members and one weak one: the weak one gets nothing
    cycle = np.zeros((4, 4))
    cycle[:3, :3] = ROCK_PAPER_SCISSORS
    cycle[:3, 3], cycle[3, :3] = 0.4, -0.4
    mixed = solve_symmetric(cycle)
    assert mixed[3] < 1e-3 and exploitability(cycle, mixed) < 1e-3
    with pytest.raises(ValueError, match="square"):
        solve_symmetric(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        solve_symmetric(np.array([[0.0, np.nan], [0.0, 0.0]]))


def test_the_logit_meta_solver_shares_the_weight_among_members_within_its_temperature():
    """x = softmax(A x / T) on any antisymmetric game; the exact equilibria in the limits (uniform
    as T grows, the pure one as it falls); and on a noisy matrix of three equal members and a weak
    one, the noise's winner no longer takes the weight."""
    g = np.random.default_rng(0)
    a = g.normal(size=(6, 6))
    a = 0.5 * (a - a.T)
    for temperature in (0.1, 0.5, 2.0):
        x = solve_symmetric(a, temperature=temperature)
        response = np.exp(a @ x / temperature)
        np.testing.assert_allclose(x, response / response.sum(), atol=1e-9)
    np.testing.assert_allclose(solve_symmetric(PURE, temperature=100.0), [1 / 3] * 3, atol=0.01)
    assert solve_symmetric(PURE, temperature=0.02)[0] > 0.99
    np.testing.assert_allclose(solve_symmetric(ROCK_PAPER_SCISSORS, temperature=0.1), [1 / 3] * 3, atol=1e-9)
    noisy = np.zeros((4, 4))
    noisy[:3, :3] = [[0, 0.05, 0.03], [-0.05, 0, 0.04], [-0.03, -0.04, 0]]  # member 0 ahead by noise
    noisy[:3, 3], noisy[3, :3] = 1.0, -1.0  # the weak member loses a chip a game to each
    exact, logit = solve_symmetric(noisy), solve_symmetric(noisy, temperature=0.2)
    assert exact[0] > 0.999, "the exact meta-Nash: the noise's winner alone"
    assert logit[:3].min() > 0.25 and logit[3] < 0.01


def test_entries_on_too_few_games_are_left_out():
    scores = {("a", "b"): 0.4, ("b", "a"): -0.4, ("a", "c"): -0.3, ("c", "a"): 0.3}
    games = {("a", "b"): 100, ("b", "a"): 100, ("a", "c"): 10, ("c", "a"): 10}
    matrix = payoff_matrix(["a", "b", "c"], lambda x, y: scores.get((x, y), 0.0), lambda x, y: games.get((x, y), 0), 64)
    np.testing.assert_allclose(matrix, [[0, 0.4, 0], [-0.4, 0, 0], [0, 0, 0]])


def test_the_manager_fills_the_payoff_and_draws_and_retains_by_the_meta_nash():
    cfg = league_cfg(opponent_sampling="nash", eval_games=64, nash_min_games=64, pool_size=3, keep_recent=1)
    # m0 beats m1, m1 beats m2, m2 beats m0 (a cycle); m3, the candidate, loses to everyone
    results = {("m1", "m0"): (10, 54, 0), ("m2", "m0"): (54, 10, 0), ("m2", "m1"): (10, 54, 0)}
    results.update({("m3", m): (5, 59, 0) for m in ("m0", "m1", "m2")})
    play = Scripted(results)
    mgr = LeagueManager(cfg, play=play, log=quiet, runner=game_named("kuhn").runner, game="kuhn")
    policy = build_flat_policy(FlatPolicyConfig(11, 3, hidden_size=4), 0)
    for m in ("m0", "m1", "m2"):
        mgr.ingest(m, policy.state_dict(), policy.config.to_dict())
        mgr.evaluate(m)
    population = [(a, b) for a, b, _ in play.calls if b.startswith("m")]
    assert ("m2", "m0") in population and ("m2", "m1") in population  # every pool member, not just the champion
    weights = mgr.meta_nash()
    np.testing.assert_allclose([weights[m] for m in ("m0", "m1", "m2")], [1 / 3] * 3, atol=0.02)
    assert mgr.metrics()["league/nash_weight/m1"] == pytest.approx(weights["m1"])
    mgr.ingest("m3", policy.state_dict(), policy.config.to_dict())
    mgr.evaluate("m3")  # the pool is over its size: the newest stays, then the heaviest weights
    assert sorted(mgr.pool_ids()) == ["m0", "m2", "m3"] or len(mgr.pool_ids()) == 3
    assert "m3" in mgr.pool_ids()
    assert retain_by_weight(["a", "b", "c", "d"], {"a": 0.6, "b": 0.0, "c": 0.4}, None, 3, 1) == ["a", "c", "d"]


def test_the_delivered_mixture_leaves_out_the_candidates_before_deliverable_start():
    """The deliverable's burn-in: members ingested before `deliverable_start` steps are not mixed
    (the meta-Nash solved over the later ones alone); while none is later, the whole pool is."""
    policy = build_flat_policy(FlatPolicyConfig(11, 3, hidden_size=4), 0)
    steps = {"m0": 0, "m1": 500, "m2": 1000, "m3": 1500}
    # m0 beats everyone: the whole pool's meta-Nash is m0 alone
    results = {(m, "m0"): (4, 60, 0) for m in ("m1", "m2", "m3")}  # (candidate, member): its wins, losses, draws
    results.update({("m2", "m1"): (32, 32, 0), ("m3", "m1"): (32, 32, 0), ("m3", "m2"): (32, 32, 0)})  # even
    for start, want in ((1000, ["m2", "m3"]), (0, ["m0", "m1", "m2", "m3"]), (10**9, ["m0", "m1", "m2", "m3"])):
        cfg = league_cfg(opponent_sampling="nash", deliverable="nash_mixture", deliverable_start=start, pool_size=8)
        mgr = LeagueManager(cfg, play=Scripted(results), log=quiet, runner=game_named("kuhn").runner, game="kuhn")
        for m, step in steps.items():
            mgr.ingest(m, policy.state_dict(), policy.config.to_dict(), step=step)
            mgr.evaluate(m)
        assert delivered_ids(mgr) == want
        ids, weights = mixture_weights(mgr)
        assert set(ids) <= set(want) and sum(weights) == pytest.approx(1.0)
        if "m0" in want:
            assert ids == ["m0"] and mgr.meta_nash()["m0"] > 0.99
        else:
            assert sorted(ids) == ["m2", "m3"] and weights == pytest.approx([0.5, 0.5]), "the later ones' meta-Nash"


def two_members(tmp_path, weights):
    """A Kuhn league manager with members m0, m1 and a mixture file of them at `weights`."""
    cfg = league_cfg(deliverable="nash_mixture")
    mgr = LeagueManager(
        cfg, tmp_path / "league", play=Scripted(), log=quiet, runner=game_named("kuhn").runner, game="kuhn"
    )
    rules = JUDGED["kuhn"]
    for k, m in enumerate(("m0", "m1")):
        policy = build_flat_policy(FlatPolicyConfig(rules.obs_width, 3, hidden_size=8), k + 3)
        with torch.no_grad():
            policy.actor.bias.add_(torch.tensor([0.0, 2.0, -1.0]) * (1 - 2 * k))
        mgr.ingest(m, policy.state_dict(), policy.config.to_dict())
    mgr.meta_nash = lambda ids=None: dict(zip(("m0", "m1"), weights))  # the weights under test
    return mgr, write_mixture(tmp_path, mgr, global_step=10, epoch=1)


def test_a_mixture_judges_as_its_reach_weighted_average(tmp_path):
    mgr, path = two_members(tmp_path / "a", (1.0, 0.0))
    assert path.name == MIXTURE_FILE
    first = exact.file_exploitability(tmp_path / "a" / "league" / "members" / "m0.pt", JUDGED["kuhn"])
    alone = exact.file_exploitability(path, JUDGED["kuhn"])
    assert alone.exploitability == pytest.approx(first.exploitability, abs=1e-9)
    _, half = two_members(tmp_path / "b", (0.5, 0.5))
    mixture = load_mixture(half)
    assert mixture.weights == [0.5, 0.5] and mixture.game == "kuhn"
    rules = JUDGED["kuhn"]
    singles = [exact.recurrent_policy(rules, p, s) for p, s in mixture.members]
    average = exact.mixture_policy(rules, singles, [0.5, 0.5])
    # at the first decision both members reach it: the average is the plain mean there
    state = exact.openspiel_game(rules).new_initial_state()
    state.apply_action(0)
    state.apply_action(1)
    mean = {a: 0.5 * (singles[0](state)[a] + singles[1](state)[a]) for a in state.legal_actions()}
    assert average(state) == pytest.approx(mean, abs=1e-6)
    judged = exact.file_exploitability(half, JUDGED["kuhn"]).exploitability
    assert 0 < judged < max(exact.measure(rules, p).exploitability for p in singles)


def test_a_runs_mixture_judge_reuses_the_tables_of_unchanged_members(tmp_path, monkeypatch):
    _, path = two_members(tmp_path, (0.5, 0.5))
    members = load_mixture(path).members
    made = []
    table_of_member = exact.recurrent_policy
    monkeypatch.setattr(exact, "recurrent_policy", lambda *a: made.append(a[1]) or table_of_member(*a))
    evaluate = exact.mixture_evaluation(JUDGED["kuhn"])(None)
    first = evaluate(members, [0.5, 0.5])
    assert evaluate(members, [0.5, 0.5]) == first and len(made) == 2  # both tables kept
    with torch.no_grad():
        members[1][0].actor.bias.add_(1.0)  # a member whose weights changed is judged again
    changed = evaluate(members, [0.5, 0.5])
    assert made[2:] == [members[1][0]] and changed != first
    uncached = exact.members_exploitability(JUDGED["kuhn"], members, [0.5, 0.5])
    assert changed["eval/mixture_exploitability"] == pytest.approx(uncached.exploitability, abs=1e-12)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m.update(members=[{**m["members"][0], "weight": 0.7}, m["members"][1]]), "sum to 1.2"),
        (lambda m: m["members"][1].pop("policy"), "missing its id, weight, policy"),
        (lambda m: m["members"][0].update(weight=float("nan")), "not a finite number"),
        (lambda m: m["members"][1]["policy"]["actor.bias"].fill_(float("nan")), "not finite tensors"),
    ],
    ids=["weights", "member", "nan-weight", "nan-policy"],
)
def test_bad_mixture_files_are_refused_in_one_line(tmp_path, capsys, damage, message):
    _, path = two_members(tmp_path, (0.5, 0.5))
    state = read_state(path)
    damage(state["mixture"])
    bad = tmp_path / "bad.pt"
    torch.save(state, bad)
    before = bad.read_bytes()
    with pytest.raises(CheckpointError, match=message):
        load_mixture(bad)
    capsys.readouterr()
    assert exact_cli.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert bad.read_bytes() == before
    copy.deepcopy(state)  # the damaged state itself is plain data


def test_a_kuhn_league_delivers_its_nash_mixture_and_resumes_exactly(tmp_path, capsys):
    """PSRO on Kuhn through train.py: opponents drawn from the meta-Nash, every candidate plays the
    pool, league_policy.pt written with each checkpoint and judged at each evaluation; an exact
    resume repeats the pool's weights and the mixture."""
    nash = [
        "--league.opponent-sampling",
        "nash",
        "--league.deliverable",
        "nash_mixture",
        "--league.nash-min-games",
        "16",
    ]
    run = [*KUHN_LEAGUE, *nash, "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(run) == 0
    (run_a,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    events = [json.loads(x) for x in (run_a / "league" / "events.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "match" and e["role"] == "population" for e in events)
    metrics = [json.loads(x) for x in (run_a / "metrics.jsonl").read_text().splitlines()]
    weights = {k: v for k, v in metrics[-1].items() if k.startswith("league/nash_weight/")}
    assert weights and sum(weights.values()) == pytest.approx(1.0)
    judged = [m["eval/mixture_exploitability"] for m in metrics if "eval/mixture_exploitability" in m]
    assert judged and all(0 <= x < UNIFORM["kuhn"] * 1.5 for x in judged)
    mixture = load_mixture(run_a / MIXTURE_FILE)
    assert mixture.game == "kuhn" and sum(mixture.weights) == pytest.approx(1.0)
    assert exact.file_exploitability(run_a / MIXTURE_FILE, JUDGED["kuhn"]).exploitability == pytest.approx(
        judged[-1], abs=1e-9
    )
    capsys.readouterr()
    assert exact_cli.main([str(run_a / MIXTURE_FILE)]) == 0
    assert "kuhn: NashConv" in capsys.readouterr().out
    assert (run_a / "report" / "nash.png").is_file() and (run_a / "report" / "exact_exploitability.png").is_file()
    assert metrics[-1]["league/bot_fraction"] > 0
    reported = load_run(run_a)  # the report orders and draws poker's own bots as bots, not members
    ids = payoff_ids(reported.league, reported.bots)
    assert reported.bots == POKER_BOTS and ids[: 1 + len(POKER_BOTS)] == [LEARNER, *POKER_BOTS], ids
    resume = ["--resume-checkpoint", str(run_a / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*run, *resume]) == 0
    (run_b,) = [p for p in tmp_path.iterdir() if p.is_dir() and p != run_a]
    a, b = (torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (run_a, run_b))
    assert_same(a["policy"], b["policy"], "policy")
    assert load_mixture(run_b / MIXTURE_FILE).weights == mixture.weights


def test_evaluate_checkpoint_plays_an_emberfront_mixture_and_single_policy_tools_refuse_it(tmp_path, capsys):
    """On Emberfront a mixture plays by drawing a member per game (evaluate_checkpoint, its panel
    too, and replay, which records its games); play, a person against one policy, refuses the file
    in one line, exit 2."""
    cfg = league_cfg(deliverable="nash_mixture")
    mgr = LeagueManager(cfg, tmp_path / "league", play=Scripted(), log=quiet, runner=EMBERFRONT_RUNNER, game=EMBERFRONT)
    ingest_tiny(mgr, "m0", seed=0)
    ingest_tiny(mgr, "m1", seed=1)
    mgr.meta_nash = lambda ids=None: {"m0": 0.25, "m1": 0.75}
    path = write_mixture(tmp_path, mgr, global_step=10, epoch=1)
    assert load_mixture(path).ids == ["m1", "m0"]
    out = tmp_path / "eval.json"
    args = [str(path), "--opponent", "random", "--episodes", "8", "--parallel", "4", "--json", str(out)]
    assert evaluate_checkpoint.main(args) == 0
    report = json.loads(out.read_text())
    assert report["episodes"] == 8 and report["checkpoint"] == str(path), report.keys()
    with pytest.raises(CheckpointError, match="is a league mixture"):
        load_checkpoint(path)
    capsys.readouterr()
    assert play_cli.main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a league mixture" in err and len(err.splitlines()) == 1
    assert replay_cli.main([str(path), "--opponent", "random", "--games", "2", "--out", str(tmp_path / "r")]) == 0
    assert len(json.loads((tmp_path / "r" / "replays.json").read_text())["games"]) == 2
    capsys.readouterr()
    assert evaluate_checkpoint.main([str(path), "--lookahead", "1.0", "--episodes", "2"]) == 2
    assert "take one policy" in capsys.readouterr().err


def test_the_meta_game_is_in_points_not_win_rate():
    """Poker: a member that wins most hands but loses chips is the weaker one in the meta-game."""
    payoff = Payoff(decay=1.0)
    payoff.update("nit", "maniac", wins=30, losses=70, draws=0, points=+45.0)  # loses often, small; wins big
    assert payoff.winrate("nit", "maniac") == pytest.approx(0.3)
    assert payoff.points_per_game("nit", "maniac") == pytest.approx(0.45)
    assert payoff.points_per_game("maniac", "nit") == pytest.approx(-0.45)
    payoff.update("a", "b", wins=3, losses=1, draws=0)  # no points given: a game is worth +-1
    assert payoff.points_per_game("a", "b") == pytest.approx(0.5)
    matrix = payoff_matrix(["nit", "maniac"], payoff.points_per_game, payoff.games, 64)
    assert solve_symmetric(matrix)[0] > 0.999
    restored = Payoff(decay=1.0)
    restored.load_state_dict(payoff.state_dict(), payoff.points_state_dict())
    assert restored.points_per_game("maniac", "nit") == pytest.approx(-0.45)
    old = Payoff(decay=1.0)
    old.load_state_dict(payoff.state_dict())  # a state saved before points: wins - losses
    assert old.points_per_game("nit", "maniac") == pytest.approx(-0.4)


def test_a_best_response_trains_against_a_kuhn_mixture_and_its_target_resumes_exactly(tmp_path, capsys):
    """exploit takes a league mixture as its target (one member drawn per game), judged exactly as
    the mixture; the target's state - each row's member, the draws' stream, every member's rows -
    round-trips, so an exact resume continues every game as the uninterrupted run would."""
    _, path = two_members(tmp_path, (0.5, 0.5))
    small = ["--train.batch-size", "1024", "--train.minibatch-size", "256", "--env.num-games", "64"]
    argv = [str(path), "--steps", "2048", "--eval-every", "0", "--curve-games", "20", "--games", "40", *small]
    out = tmp_path / "br.json"
    assert exploit_main([*argv, "--base.experiments-dir", str(tmp_path / "runs"), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["game"] == "kuhn" and report["final"]["games"] == 40
    assert report["exact"]["exploitability"] == pytest.approx(
        exact.file_exploitability(path, JUDGED["kuhn"]).exploitability
    )
    target = load_target(str(path), "kuhn")
    env = PokerPufferEnv("kuhn", num_games=4, seed=0)
    obs, _ = env.reset(0)
    a, b = target.side(5, torch.device("cpu"))(env), target.side(6, torch.device("cpu"))(env)
    rows = np.arange(env.num_agents)
    a.reset_rows(rows)
    a.act(obs, rows)
    load_actor_state(b, actor_state(a), 6)
    assert np.array_equal(a.member, b.member) and np.array_equal(a.act(obs, rows), b.act(obs, rows))
    capsys.readouterr()
    assert exploit_main([str(path), "--init", "target", "--base.experiments-dir", str(tmp_path / "x")]) == 2
    assert "is a league mixture" in capsys.readouterr().err and not (tmp_path / "x").exists()
