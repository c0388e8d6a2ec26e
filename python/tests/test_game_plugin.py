"""The game as a plug-in (issue 42): poker behind the PufferLib face the trainer steps, the flat
policy family's masked softmax, a recurrent policy judged exactly by OpenSpiel, and a Kuhn run
through train.py that learns (exact exploitability down), resumes exactly, and is judged by
`python -m tcgleague.exact CKPT` as the trainer judged it; the league on Kuhn, with its own runner,
bots and member files."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from helpers.state_compare import assert_same
from tcgleague import evaluate_checkpoint
from tcgleague import exact as exact_cli
from tcgleague import openspiel_judge as exact
from tcgleague import play as play_cli
from tcgleague import train as train_cli
from tcgleague.checkpoint import CheckpointError, load_checkpoint
from tcgleague.config import ConfigError, load_config
from tcgleague.errors import UserInputError
from tcgleague.exploit.__main__ import main as exploit_main
from tcgleague.games.poker.exact import JUDGED
from tcgleague.games.poker.game import poker_play
from tcgleague.games.poker.match import ALWAYS_CALL, POKER_BOTS, RANDOM, poker_bot_side
from tcgleague.games.poker.rows import PokerPufferEnv
from tcgleague.games.poker.rules import GAMES, KUHN, LEDUC, NUM_ACTIONS
from tcgleague.league.matchmaking import LEARNER
from tcgleague.match import policy_side
from tcgleague.policy.flat import FlatPolicyConfig, FlatSampler, build_flat_policy
from tcgleague.replay.__main__ import main as replay_main
from tcgleague.report import load_run
from tcgleague.report.__main__ import main as report_main
from tcgleague.report.figures import payoff_ids
from tcgleague.rows import RowFormat, finished_games, game_of
from tcgleague.vecenv import check_env_memory

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# OpenSpiel's exploitability of the uniform random policy (exact.py's tests derive them too)
UNIFORM = {"kuhn": 0.458333333, "leduc": 2.373611111}
KUHN_RUN = [
    "--config",
    "configs/leduc.ini",
    "--env.game",
    "kuhn",
    "--base.run-name",
    "kuhn",
    "--env.num-games",
    "128",
    "--policy.hidden-size",
    "32",
    "--train.total-timesteps",
    "16384",
    "--train.batch-size",
    "2048",
    "--train.minibatch-size",
    "512",
    "--train.learning-rate",
    "3e-3",
    "--train.eval-interval",
    "4",
    "--train.checkpoint-interval",
    "4",
]


def random_legal(obs: np.ndarray, masks: np.ndarray, rng: np.random.Generator, legal_offset: int) -> np.ndarray:
    actions = np.zeros((len(obs), 1), dtype=np.int32)
    for row in np.flatnonzero(masks):
        actions[row, 0] = rng.choice(np.flatnonzero(obs[row, legal_offset:]))
    return actions


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_poker_env_keeps_the_row_contract_and_resumes_exactly(game):
    env = PokerPufferEnv(game, num_games=16, seed=3)
    rules, rng = env.rules, np.random.default_rng(0)
    assert RowFormat.of(env) == RowFormat(32, rules.obs_width, 1)
    obs, _ = env.reset()
    ended = 0
    for _ in range(60):
        assert (env.masks.reshape(-1, 2).sum(1) == 1).all(), "one acting row per game"
        acting = np.flatnonzero(env.masks)
        assert (obs[acting, rules.legal_offset :].sum(1) >= 1).all() and not obs[~env.masks, rules.legal_offset :].any()
        obs, rewards, terminals, truncations, infos = env.step(random_legal(obs, env.masks, rng, rules.legal_offset))
        games = finished_games(terminals, truncations)
        assert [i["game"] for i in infos] == games.tolist()
        assert (rewards.reshape(-1, 2).sum(1) == 0).all(), "zero-sum, on both rows of a game that ended"
        assert not rewards[~np.isin(game_of(np.arange(32)), games)].any()
        ended += len(games)
    assert ended > 16
    saved, twin = env.engine.get_state(), PokerPufferEnv(game, num_games=16, seed=99)
    twin.reset()
    twin.engine.set_state(saved)
    twin.observations[:], twin.masks[:] = env.observations, env.masks
    for _ in range(30):
        actions = random_legal(env.observations, env.masks, rng, rules.legal_offset)
        a, b = env.step(actions), twin.step(actions)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        assert a[4] == b[4]
    with pytest.raises(ValueError, match=f"a {game} state of 16 games cannot be loaded into {game} of 8"):
        PokerPufferEnv(game, num_games=8).engine.set_state(saved)


def flat_batch(n=512, seed=0):
    env = PokerPufferEnv("leduc", num_games=n, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(3):  # rows in several betting states
        obs, *_ = env.step(random_legal(obs, env.masks, rng, LEDUC.legal_offset))
    rows = torch.from_numpy(obs[env.masks].copy())
    policy = build_flat_policy(FlatPolicyConfig(LEDUC.obs_width, NUM_ACTIONS, 16), seed=1)
    x, ent = policy.encode(rows)
    out, _ = policy.step(x, (torch.zeros(len(rows), 16), torch.zeros(len(rows), 16)))
    return policy, rows, out, ent


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_the_flat_sampler_draws_legal_actions_with_its_own_log_probabilities(eps):
    policy, rows, out, ent = flat_batch()
    sampler = FlatSampler(primary_temperature=0.7, smoothing_eps=eps)
    legal = rows[:, LEDUC.legal_offset :] > 0
    uniforms = sampler.draw(len(rows), torch.Generator().manual_seed(5))
    actions, logprob, entropy = sampler.sample_rows(policy, out, ent, rows, uniforms=uniforms)
    assert actions.shape == (len(rows), 1) and legal.gather(1, actions).all()
    again, entropy_again = sampler.log_prob_entropy_rows(policy, out, ent, rows, actions)
    torch.testing.assert_close(again, logprob)
    torch.testing.assert_close(entropy_again, entropy)
    p = sampler.listed_log_probs(policy, out, ent, rows).exp()
    torch.testing.assert_close(p.sum(1), torch.ones(len(rows)))
    assert (p[~legal] == 0).all() and (p[legal] >= eps / 3 - 1e-6).all()
    torch.testing.assert_close(-(p * p.clamp(min=1e-30).log()).sum(1), entropy, atol=1e-5, rtol=1e-5)
    greedy, _, _ = sampler.sample_rows(policy, out, ent, rows, argmax=True)
    assert (greedy[:, 0] == p.argmax(1)).all()
    # the draws decide: the empirical frequencies follow p (every row the same: one row repeated)
    one = rows[:1].expand(20000, -1)
    x, e = policy.encode(one)
    o, _ = policy.step(x, (torch.zeros(20000, 16), torch.zeros(20000, 16)))
    drawn, *_ = sampler.sample_rows(policy, o, e, one, uniforms=sampler.draw(20000, torch.Generator().manual_seed(6)))
    freq = torch.bincount(drawn[:, 0], minlength=NUM_ACTIONS).float() / 20000
    torch.testing.assert_close(
        freq, sampler.listed_log_probs(policy, o[:1], e[:1], one[:1]).exp()[0], atol=0.015, rtol=0
    )


def test_the_flat_samplers_gradients_are_finite_where_actions_are_illegal():
    policy, rows, out, ent = flat_batch(64)
    actions, *_ = FlatSampler().sample_rows(policy, out, ent, rows, uniforms=FlatSampler().draw(64, torch.Generator()))
    logprob, entropy = FlatSampler().log_prob_entropy_rows(policy, out, ent, rows, actions)
    (logprob.sum() + entropy.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.grad is not None)


@pytest.mark.parametrize("rules", [KUHN, LEDUC], ids=["kuhn", "leduc"])
def test_a_recurrent_policy_is_judged_exactly_in_one_batch(rules):
    policy = build_flat_policy(FlatPolicyConfig(rules.obs_width, NUM_ACTIONS, 16), seed=2)
    sampler = FlatSampler()
    batched = exact.recurrent_policy(JUDGED[rules.name], policy, sampler)

    def one_state_at_a_time(rows: np.ndarray) -> np.ndarray:  # the LSTM along this state's rows alone
        h = c = torch.zeros(1, 16)
        for row in torch.from_numpy(rows.astype(np.uint8)):
            x, ent = policy.encode(row[None])
            out, (h, c) = policy.step(x, (h, c))
        with torch.no_grad():
            return sampler.listed_log_probs(policy, out, ent, row[None]).exp()[0].numpy()

    judged = exact.measure(JUDGED[rules.name], batched)
    assert judged.exploitability == pytest.approx(
        exact.measure(JUDGED[rules.name], exact.rows_policy(JUDGED[rules.name], one_state_at_a_time)).exploitability,
        abs=1e-5,
    )
    with torch.no_grad():  # a policy whose logits are all equal is uniform random play
        policy.actor.weight.zero_()
        policy.actor.bias.zero_()
    assert exact.policy_exploitability(JUDGED[rules.name], policy, sampler).exploitability == pytest.approx(
        UNIFORM[rules.name], abs=1e-6
    )


@pytest.fixture(scope="module")
def kuhn_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("kuhn")
    assert train_cli.main([*KUHN_RUN, "--base.experiments-dir", str(base)]) == 0
    (run_dir,) = [p for p in base.iterdir() if p.is_dir()]
    return base, run_dir


def test_a_kuhn_run_learns_on_the_exact_judge_and_its_checkpoint_says_so(kuhn_run, tmp_path, capsys):
    _, run_dir = kuhn_run
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    judged = [m["eval/exploitability"] for m in lines if "eval/exploitability" in m]
    assert len(judged) == 2 and judged[-1] < 0.8 * UNIFORM["kuhn"], judged
    capsys.readouterr()
    assert exact_cli.main([str(run_dir / "model_kuhn_000008.pt"), "--json", str(tmp_path / "out.json")]) == 0
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["game"] == "kuhn" and report["exploitability"] == pytest.approx(judged[-1], abs=1e-9)
    assert exact_cli.main([str(run_dir / "model_kuhn_000008.pt"), "--game", "leduc"]) == 2
    assert "plays kuhn; the exact judge takes leduc checkpoints" in capsys.readouterr().err


def test_a_kuhn_run_resumes_exactly_and_is_refused_by_another_game(kuhn_run):
    base, run_a = kuhn_run
    resume = ["--resume-checkpoint", str(run_a / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*KUHN_RUN, "--base.experiments-dir", str(base), *resume]) == 0
    (run_b,) = [p for p in base.iterdir() if p.is_dir() and p != run_a]
    a, b = (torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (run_a, run_b))
    for key in ("policy", "optimizer", "rng", "run_state"):
        assert_same(a[key], b[key], key)
    assert a["fingerprint"]["game"] == "kuhn"
    emberfront = load_config(Path("configs/smoke.ini"), [])
    with pytest.raises(CheckpointError, match="plays kuhn, not emberfront"):
        load_checkpoint(run_a / "model_kuhn_000004.pt", None, game=emberfront.env.game)


# ---- the league on poker --------------------------------------------------------------------------
def test_the_poker_runner_plays_duplicate_deals_whatever_the_batch():
    call, leduc, kuhn = poker_bot_side(ALWAYS_CALL), poker_play("leduc"), poker_play("kuhn")
    even = leduc(call, call, 200, seed=3)
    assert even.games == 200 and even.reward_per_game == 0 and even.tally.wins == even.tally.losses, (
        "duplicate deals cancel"
    )
    policy = build_flat_policy(FlatPolicyConfig(KUHN.obs_width, NUM_ACTIONS, 16), seed=4)
    argmax = policy_side(policy, FlatSampler(), seed=0, argmax=True)
    wide = kuhn(argmax, call, 300, seed=5)
    narrow = kuhn(argmax, call, 300, seed=5, parallel=7)
    assert (wide.tally, wide.reward_per_game) == (narrow.tally, narrow.reward_per_game) and wide.games == 300
    random = leduc(poker_bot_side(RANDOM, 1), call, 400, seed=6)  # every action it takes is legal
    assert random.tally == leduc(poker_bot_side(RANDOM, 1), call, 400, seed=6).tally
    with pytest.raises(ValueError, match="unknown poker bot 'greedy'; valid: random, call"):
        poker_bot_side("greedy")


KUHN_LEAGUE = [
    *KUHN_RUN,
    "--league-enable",
    "--league.checkpoint-add-interval",
    "2",
    "--league.latest-ratio",
    "0.4",
    "--league.bot-ratio",
    "0.2",
    "--league.eval-games",
    "32",
    "--league.promotion-min-games",
    "32",
    "--train.checkpoint-interval",
    "2",
]


@pytest.mark.slow  # fast set: test_meta_nash's Kuhn league (its own bots' games, members, an exact resume)
def test_a_kuhn_league_plays_its_own_bots_and_members_and_resumes_exactly(tmp_path):
    base = tmp_path / "league"
    assert train_cli.main([*KUHN_LEAGUE, "--base.experiments-dir", str(base)]) == 0
    (run_a,) = [p for p in base.iterdir() if p.is_dir()]
    events = [json.loads(x) for x in (run_a / "league" / "events.jsonl").read_text().splitlines()]
    baseline = [e for e in events if e["kind"] == "match" and e["role"] == "baseline"]
    assert baseline and {e["opponent"] for e in baseline} == {ALWAYS_CALL} and all(e["games"] == 32 for e in baseline)
    members = sorted((run_a / "league" / "members").glob("*.pt"))
    assert members and torch.load(members[0], weights_only=True)["fingerprint"]["game"] == "kuhn"
    assert load_checkpoint(members[0]).policy_config.family == "flat_lstm"
    metrics = [json.loads(x) for x in (run_a / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["league/bot_fraction"] > 0 and "eval/exploitability" in metrics[-1]
    run = load_run(run_a)  # the report orders and draws poker's own bots as bots, not members
    assert run.bots == POKER_BOTS
    ids = payoff_ids(run.league, run.bots)
    assert ids[: 1 + len(POKER_BOTS)] == [LEARNER, *POKER_BOTS] and all(i.startswith("e") for i in ids[3:]), ids
    assert report_main([str(run_a)]) == 0 and (run_a / "report" / "payoff.png").is_file()
    resume = ["--resume-checkpoint", str(run_a / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*KUHN_LEAGUE, "--base.experiments-dir", str(base), *resume]) == 0
    (run_b,) = [p for p in base.iterdir() if p.is_dir() and p != run_a]
    a, b = (torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (run_a, run_b))
    for key in ("policy", "optimizer", "run_state"):
        assert_same(a[key], b[key], key)
    assert a["league"]["league"]["matchmaker"] == b["league"]["league"]["matchmaker"]


@pytest.mark.slow  # fast set: test_meta_nash (a Kuhn league judged exactly), test_bench_learn
def test_bench_learn_judges_a_poker_league_and_its_self_play_exactly(tmp_path):
    out = tmp_path / "learn.json"
    cmd = [sys.executable, "-m", "tcgleague.bench", "learn", "--league", "--config", "configs/leduc.ini"]
    cmd += ["--steps", "8192", "--eval-every", "4096", "--episodes", "64", "--json", str(out)]
    cmd += [
        "--env.game",
        "kuhn",
        "--env.num-games",
        "64",
        "--train.batch-size",
        "2048",
        "--train.minibatch-size",
        "512",
    ]
    cmd += ["--league.checkpoint-add-interval", "1", "--league.deliverable", "nash_mixture"]
    cmd += ["--base.experiments-dir", str(tmp_path / "runs")]
    cmd += ["--train.average-snapshots", "2", "--train.average-interval", "2048", "--train.average-start", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text())
    # a league delivering its Nash mixture, self-play its average policy: each judged and played as such
    for name, delivered in (("league", "league_policy.pt"), ("selfplay", "average_policy.pt")):
        run = figures[name]
        assert run["deliverable"] == str(Path(run["run_dir"]) / delivered)
        assert run["steps"] == 8192 and [p["step"] for p in run["curve"]] == [4096, 8192]
        assert run["exploitability"] == pytest.approx(
            exact.file_exploitability(Path(run["deliverable"]), JUDGED["kuhn"]).exploitability
        )
        assert run["learner_exploitability"] == pytest.approx(
            exact.file_exploitability(Path(run["checkpoint"]), JUDGED["kuhn"]).exploitability
        )
        for curve, final in (("curve", "exploitability"), ("learner_curve", "learner_exploitability")):
            assert run[curve][-1]["exploitability"] == pytest.approx(run[final])  # the final, evaluated
    assert figures["games_league_vs_selfplay"] == 64 and -13 <= figures["chips_per_game_league_vs_selfplay"] <= 13
    assert "self-play: exact exploitability, average policy" in done.stdout
    assert "league: exact exploitability, Nash mixture" in done.stdout
    assert "league below self-play and below the target" in done.stdout


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (lambda n: np.zeros((n, 3)), TypeError, r"shape \(8, 1\)"),
        (lambda n: np.zeros((n, 4)), TypeError, r"shape \(8, 1\)"),
        (lambda n: np.zeros(2 * n), TypeError, r"got \(16,\)"),
        (lambda n: np.zeros(0), TypeError, r"got \(0,\)"),
        (lambda n: np.full((n, 1), np.nan), ValueError, "nan is not an integer index"),
        (lambda n: np.full((n, 1), 1.5), ValueError, "1.5 is not an integer index"),
        (lambda n: np.array([["a"]] * n), TypeError, "integer or float array"),
        (lambda n: np.full((n, 1), 3), ValueError, "is not legal"),
    ],
    ids=["width-3", "width-4", "twice-the-rows", "empty", "nan", "fraction", "strings", "out-of-range"],
)
def test_the_poker_env_refuses_bad_action_batches_by_name_and_steps_nothing(bad, error, message):
    env = PokerPufferEnv(game="leduc", num_games=4, seed=0)
    env.reset()
    before, state = env.observations.copy(), env.engine.get_state()
    with pytest.raises(error, match=message):
        env.step(bad(env.num_agents))
    assert np.array_equal(env.observations, before) and env.engine.get_state() == state
    env.step(np.ones((env.num_agents, 1), dtype=np.int32))  # a good batch still steps (call everywhere)


def test_a_poker_config_with_emberfronts_keys_is_refused_naming_each():
    with pytest.raises(ConfigError) as refused:
        load_config(Path("configs/kuhn.ini"), ["--policy.entity-attention-layers", "2", "--env.turn-cap", "5"])
    assert "[policy] entity_attention_layers = 2: only [env] game = emberfront reads it" in str(refused.value)
    assert "[env] turn_cap = 5" in str(refused.value)
    assert load_config(Path("configs/smoke.ini"), ["--policy.entity-attention-layers", "2"]).env.game == "emberfront"


def test_more_games_than_memory_holds_are_refused_before_anything_is_allocated_or_written(tmp_path, capsys):
    base = tmp_path / "experiments"
    assert (
        train_cli.main(
            ["--config", "configs/kuhn.ini", "--env.num-games", "1000000000", "--base.experiments-dir", str(base)]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "[env] num_games = 1,000,000,000: the env's buffers need about" in err and err.count("\n") == 1
    assert not base.exists(), "nothing written"
    with pytest.raises(ConfigError, match="at most 1,323 games here"):  # 1 MiB at Leduc's bound per game
        check_env_memory(PokerPufferEnv, 4096, {"game": "leduc", "num_games": 4096}, available=2**20)
    check_env_memory(PokerPufferEnv, 1323, {"game": "leduc", "num_games": 1323}, available=2**20)


def test_a_poker_checkpoint_stripped_of_its_fingerprint_is_refused_by_name(kuhn_run, tmp_path, capsys):
    _, run_dir = kuhn_run
    state = torch.load(run_dir / "model_kuhn_000008.pt", weights_only=True)
    del state["fingerprint"]
    stripped = tmp_path / "stripped.pt"
    torch.save(state, stripped)
    before = stripped.read_bytes()
    capsys.readouterr()
    assert exact_cli.main([str(stripped)]) == 2
    err = capsys.readouterr().err
    assert "missing fingerprint" in err and "expected shape" not in err and err.count("\n") == 1
    assert stripped.read_bytes() == before


# ---- the tools on poker ---------------------------------------------------------------------------


def test_evaluate_checkpoint_plays_a_kuhn_checkpoint_against_its_bots_and_judges_it_exactly(kuhn_run, tmp_path, capsys):
    _, run_dir = kuhn_run
    ckpt = str(run_dir / "model_kuhn_000008.pt")
    capsys.readouterr()
    assert evaluate_checkpoint.main([ckpt, "--episodes", "200", "--json", str(tmp_path / "one.json")]) == 0
    out = capsys.readouterr().out
    one = json.loads((tmp_path / "one.json").read_text())
    assert one["opponent"] == ALWAYS_CALL and one["game"] == "kuhn" and one["episodes"] == 200
    assert "chips per game" in out and "exact exploitability" in out and "per deck" not in out
    assert one["exact"]["exploitability"] == pytest.approx(
        exact.file_exploitability(Path(ckpt), JUDGED["kuhn"]).exploitability
    )
    assert evaluate_checkpoint.main([ckpt, "--panel", "--episodes", "100", "--json", str(tmp_path / "p.json")]) == 0
    panel = json.loads((tmp_path / "p.json").read_text())
    assert [r["opponent"] for r in panel["panel"]] == [RANDOM, ALWAYS_CALL]
    for bad, message in (
        (["--opponent", "greedy"], "neither a bot of kuhn (random, call)"),
        (["--lookahead"], "kuhn has no lookahead"),
    ):
        capsys.readouterr()
        assert evaluate_checkpoint.main([ckpt, "--episodes", "10", *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_a_best_response_on_kuhn_trains_against_the_checkpoint_and_never_beats_the_exact_one(kuhn_run, tmp_path):
    _, run_dir = kuhn_run
    ckpt = str(run_dir / "model_kuhn_000008.pt")
    small = ["--train.batch-size", "2048", "--train.minibatch-size", "512", "--env.num-games", "128"]
    argv = [ckpt, "--steps", "4096", "--eval-every", "0", "--curve-games", "100", "--games", "2000", *small]
    assert (
        exploit_main([*argv, "--base.experiments-dir", str(tmp_path / "runs"), "--json", str(tmp_path / "r.json")]) == 0
    )
    r = json.loads((tmp_path / "r.json").read_text())
    best = exact.file_exploitability(Path(ckpt), JUDGED["kuhn"]).exploitability
    assert r["game"] == "kuhn" and r["exact"]["exploitability"] == pytest.approx(best)
    final = r["final"]
    assert final["games"] == 2000 and final["points_per_game"] <= best + final["points_half_width"]
    assert r["steps"] >= 4096 and [p["step"] for p in r["curve"]][0] == 0


def test_exploit_refuses_a_config_of_another_game_than_its_targets_and_writes_nothing(kuhn_run, tmp_path, capsys):
    _, run_dir = kuhn_run
    ckpt = str(run_dir / "model_kuhn_000008.pt")
    runs = ["--base.experiments-dir", str(tmp_path / "runs")]
    for argv, message in (
        ([ckpt, "--config", "configs/smoke.ini"], "it plays emberfront, the target"),
        ([ckpt, "--env.game", "leduc"], "it plays leduc, the target"),
        ([ckpt, "--target-lookahead"], "kuhn has no lookahead"),
        (["greedy", "--config", "configs/kuhn.ini"], "neither a bot of kuhn (random, call)"),
    ):
        capsys.readouterr()
        assert exploit_main([*argv, *runs]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "runs").exists()


def test_a_person_plays_kuhn_hands_in_words_and_a_wrong_answer_is_asked_again(kuhn_run):
    _, run_dir = kuhn_run
    ckpt = str(run_dir / "model_kuhn_000008.pt")
    answers = iter(["9", "x", *["1"] * 20])
    console = Console(file=io.StringIO(), width=120)
    results = play_cli.play(play_cli.parse_args([ckpt, "--games", "3"]), console, lambda _: next(answers))
    text = console.file.getvalue()
    assert len(results) == 3 and set(results) <= {-1, 0, 1}
    assert "enter a number from 1 to 2 (got '9')" in text and "(got 'x')" in text
    assert "your card:" in text and "pot: 2 chips" in text and "1. check" in text and "agent:" in text
    assert text.count("hand 3: the agent") == 1 and "the agent's chips over 3 hand(s)" in text
    watched = play_cli.play(play_cli.parse_args([ckpt, "--opponent", RANDOM, "--games", "2"]), console, None)
    assert len(watched) == 2 and "random: " in console.file.getvalue()
    for bad, message in (
        (["--deck", "ember"], "kuhn has no decks"),
        (["--lookahead"], "kuhn has no lookahead"),
        (["--opponent", "greedy"], "neither a bot (random, call) of kuhn"),
    ):
        with pytest.raises(UserInputError, match=re.escape(message)):
            play_cli.play(play_cli.parse_args([ckpt, *bad]), console, None)


def test_kuhn_hands_are_recorded_for_the_viewer_from_each_deciders_seat(kuhn_run, tmp_path, capsys):
    _, run_dir = kuhn_run
    ckpt = str(run_dir / "model_kuhn_000008.pt")
    assert replay_main([ckpt, "--games", "4", "--out", str(tmp_path / "out")]) == 0
    document = json.loads((tmp_path / "out" / "replays.json").read_text())
    assert (tmp_path / "out" / "viewer.html").is_file() and len(document["games"]) == 4
    for game in document["games"]:
        assert set(game["players"]) == {"model_kuhn_000008", ALWAYS_CALL} and game["winner"] in (0, 1, None)
        for step in game["steps"]:
            board = [game["strings"][i] for i in step["b"]]
            assert board[0] == f"you are seat {step['s']}; your card: {game['decks'][step['s']]}"
            words = [game["strings"][i] for i in step["l"]]
            assert set(words) in ({"check", "bet"}, {"fold", "call"}) and 0 <= step["a"] < len(words)
            if game["players"][step["s"]] == ALWAYS_CALL:
                assert "p" not in step and words[step["a"]] in ("check", "call")
            else:
                assert sum(p for _, p in step["p"]) == pytest.approx(1.0, abs=0.01) and "v" in step
    assert (
        evaluate_checkpoint.main([ckpt, "--episodes", "8", "--replays", "2", "--replays-out", str(tmp_path / "e")]) == 0
    )
    assert len(json.loads((tmp_path / "e" / "replays.json").read_text())["games"]) == 2


def test_the_registry_builds_every_game_it_names_and_refuses_another():
    from tcgleague.game import GAME_NAMES, UnknownGame, family_of, game_named

    assert [game_named(name).name for name in GAME_NAMES] == list(GAME_NAMES)
    assert family_of({}) is game_named("emberfront").family, "an architecture without a family is Emberfront's"
    assert family_of({"family": "flat_lstm"}) is game_named("leduc").family
    with pytest.raises(UnknownGame, match="unknown game 'chess'; valid: emberfront, leduc, kuhn, liars_dice"):
        game_named("chess")
