"""Liar's Dice through every tool, as Leduc and Kuhn go through them (test_game_plugin.py): a run
judged exactly at its evaluations, `python -m tcgleague.exact` agreeing with it, the judge's
batched recurrent path giving OpenSpiel's value of uniform play, evaluate_checkpoint (one
opponent and the panel), play, replay, exploit and report on its checkpoint, and bad input
refused by name like the other games'."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

from helpers.state_compare import assert_same
from tcgleague import evaluate_checkpoint
from tcgleague import exact as exact_cli
from tcgleague import play as play_cli
from tcgleague import train as train_cli
from tcgleague.config import ConfigError, load_config
from tcgleague.errors import UserInputError
from tcgleague.exploit.__main__ import main as exploit_main
from tcgleague.game import game_named
from tcgleague.games.liars_dice.env import LiarsDiceEnv
from tcgleague.games.liars_dice.match import BOTS, HONEST
from tcgleague.games.liars_dice.rules import NUM_ACTIONS, OBS_WIDTH
from tcgleague.policy.flat import FlatPolicyConfig, FlatSampler, build_flat_policy
from tcgleague.replay.__main__ import main as replay_main
from tcgleague.report.__main__ import main as report_main

pyspiel = pytest.importorskip("pyspiel")
from tcgleague import openspiel_judge  # noqa: E402
from tcgleague.games.liars_dice.exact import JUDGED, decision_rows  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

UNIFORM_EXPLOITABILITY = 0.7807443231922397  # OpenSpiel's exploitability of uniform random play
RUN = [
    "--config",
    "configs/liars_dice.ini",
    "--env.num-games",
    "128",
    "--policy.hidden-size",
    "32",
    "--train.total-timesteps",
    "8192",
    "--train.batch-size",
    "2048",
    "--train.minibatch-size",
    "512",
    "--train.eval-interval",
    "4",
    "--train.checkpoint-interval",
    "2",
]
CKPT = "model_liars_dice_000004.pt"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("liars_dice")
    assert train_cli.main([*RUN, "--base.experiments-dir", str(base)]) == 0
    (run,) = [p for p in base.iterdir() if p.is_dir()]
    return run


def test_the_exact_command_judges_a_checkpoint_as_the_trainer_did(run_dir, tmp_path, capsys):
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    judged = [m["eval/exploitability"] for m in lines if "eval/exploitability" in m]
    assert len(judged) == 1 and 0 < judged[0] < 2, judged
    capsys.readouterr()
    assert exact_cli.main([str(run_dir / CKPT), "--json", str(tmp_path / "out.json")]) == 0
    assert "liars_dice: NashConv" in capsys.readouterr().out
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["game"] == "liars_dice" and report["exploitability"] == pytest.approx(judged[0], abs=1e-9)
    assert exact_cli.main([str(run_dir / CKPT), "--game", "kuhn"]) == 2
    assert "plays liars_dice; the exact judge takes kuhn checkpoints" in capsys.readouterr().err


def test_the_judges_rows_are_the_rows_our_env_writes():
    """decision_rows (read off OpenSpiel's states) are the rows our env writes along the same
    game, at every decision of 200 random games."""
    game, rng = pyspiel.load_game("liars_dice"), np.random.default_rng(3)
    for _ in range(200):
        state, env = game.new_initial_state(), LiarsDiceEnv(1)
        state.apply_action(int(rng.integers(6)))
        state.apply_action(int(rng.integers(6)))
        env.set_deal([0], [[a + 1 for a in state.history()]])
        seen = {0: [], 1: []}
        while not state.is_terminal():
            seat = state.current_player()
            seen[seat].append(env.obs[seat].copy())
            assert (decision_rows(state) == np.stack(seen[seat])).all(), state.history()
            action = int(rng.choice(state.legal_actions()))
            actions = np.zeros(2, dtype=np.int64)
            actions[seat] = action
            env.step(actions)
            state.apply_action(action)


@pytest.mark.slow  # fast set: the rows above, Kuhn's and Leduc's uniform policies on the same batched path
def test_a_uniform_policy_through_the_batched_lstm_gets_openspiels_value():
    """A policy whose logits are all equal, run in one batch over every information state, is
    judged as OpenSpiel judges its uniform random policy."""
    policy = build_flat_policy(FlatPolicyConfig(OBS_WIDTH, NUM_ACTIONS, 16), seed=2)
    with torch.no_grad():
        policy.actor.weight.zero_()
        policy.actor.bias.zero_()
    judged = openspiel_judge.policy_exploitability(JUDGED, policy, FlatSampler())
    assert judged.exploitability == pytest.approx(UNIFORM_EXPLOITABILITY, abs=1e-6)


@pytest.mark.slow  # fast set: the env's and its PufferLib face's exact resume (test_liars_dice), Kuhn's run's
def test_a_liars_dice_run_resumes_exactly(run_dir, tmp_path):
    resume = ["--resume-checkpoint", str(run_dir / "model_liars_dice_000002.pt"), "--resume-load-optimizer"]
    fast = ["--train.eval-interval", "100"]  # the judge is not what is compared
    assert train_cli.main([*RUN, *fast, "--base.experiments-dir", str(tmp_path), *resume]) == 0
    (again,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    a, b = (torch.load(r / CKPT, weights_only=True) for r in (run_dir, again))
    for key in ("policy", "optimizer", "rng", "run_state"):
        assert_same(a[key], b[key], key)
    assert a["fingerprint"]["game"] == "liars_dice"


@pytest.mark.slow  # fast set: Kuhn's evaluation (test_game_plugin), this game's exact command above
def test_evaluate_checkpoint_plays_its_bots_and_judges_it(run_dir, tmp_path, capsys):
    ckpt = str(run_dir / CKPT)
    capsys.readouterr()
    assert evaluate_checkpoint.main([ckpt, "--episodes", "200", "--json", str(tmp_path / "one.json")]) == 0
    out = capsys.readouterr().out
    one = json.loads((tmp_path / "one.json").read_text())
    assert one["opponent"] == HONEST and one["game"] == "liars_dice" and one["episodes"] == 200
    assert "points per game" in out and "exact exploitability" in out and "per deck" not in out
    assert 0 < one["exact"]["exploitability"] < 2
    for bad, message in (
        (["--opponent", "greedy"], "neither a bot of liars_dice (random, honest)"),
        (["--lookahead"], "liars_dice has no lookahead"),
    ):
        capsys.readouterr()
        assert evaluate_checkpoint.main([ckpt, "--episodes", "10", *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


@pytest.mark.slow  # fast set: the single evaluation above, Kuhn's panel (test_game_plugin)
def test_evaluate_checkpoint_plays_the_liars_dice_panel(run_dir, tmp_path):
    path = tmp_path / "p.json"
    assert evaluate_checkpoint.main([str(run_dir / CKPT), "--panel", "--episodes", "100", "--json", str(path)]) == 0
    panel = json.loads(path.read_text())
    assert [r["opponent"] for r in panel["panel"]] == list(BOTS)
    assert 0 <= panel["worst_winrate"] <= panel["mean_winrate"] <= 1


def test_a_person_plays_liars_dice_in_words(run_dir):
    ckpt = str(run_dir / CKPT)
    answers = iter(["99", "x", *["1"] * 40])
    console = Console(file=io.StringIO(), width=120)
    results = play_cli.play(play_cli.parse_args([ckpt, "--games", "3", "--reveal"]), console, lambda _: next(answers))
    text = console.file.getvalue()
    assert len(results) == 3 and set(results) <= {-1, 1}
    assert "enter a number from 1 to" in text and "(got '99')" in text and "(got 'x')" in text
    assert "your die:" in text and "bids: none yet" in text and "1. bid 1-1: one one" in text
    assert "(the agent holds die " in text and "agent:" in text
    assert text.count("game 3: the agent") == 1 and re.search(r"the agent won \d of 3 game\(s\)", text)
    watched = play_cli.play(play_cli.parse_args([ckpt, "--opponent", HONEST, "--games", "2"]), console, None)
    assert len(watched) == 2 and "honest: " in console.file.getvalue()
    with pytest.raises(UserInputError, match=re.escape("liars_dice has no decks")):
        play_cli.play(play_cli.parse_args([ckpt, "--deck", "ember"]), console, None)


def test_liars_dice_games_are_recorded_for_the_viewer(run_dir, tmp_path):
    ckpt = str(run_dir / CKPT)
    assert replay_main([ckpt, "--games", "4", "--out", str(tmp_path / "out")]) == 0
    document = json.loads((tmp_path / "out" / "replays.json").read_text())
    assert (tmp_path / "out" / "viewer.html").is_file() and len(document["games"]) == 4
    for game in document["games"]:
        assert set(game["players"]) == {"model_liars_dice_000004", HONEST} and game["winner"] in (0, 1)
        assert all(re.fullmatch(r"die [1-6]", d) for d in game["decks"])
        for step in game["steps"]:
            board = [game["strings"][i] for i in step["b"]]
            die = game["decks"][step["s"]].removeprefix("die ")
            assert board[0] == f"you are seat {step['s']}; your die: {die} (sixes are wild)"
            words = [game["strings"][i] for i in step["l"]]
            assert all(w.startswith("bid ") or w == "call liar" for w in words) and 0 <= step["a"] < len(words)
            if game["players"][step["s"]] != HONEST:
                assert sum(p for _, p in step["p"]) == pytest.approx(1.0, abs=0.01) and "v" in step


@pytest.mark.slow  # fast set: Kuhn's best response (test_game_plugin), the same code on another table game
def test_a_best_response_trains_against_a_liars_dice_checkpoint(run_dir, tmp_path, capsys):
    small = ["--train.batch-size", "2048", "--train.minibatch-size", "512", "--env.num-games", "128"]
    argv = [str(run_dir / CKPT), "--steps", "4096", "--eval-every", "0", "--curve-games", "100", "--games", "1000"]
    runs = ["--base.experiments-dir", str(tmp_path / "runs")]
    assert exploit_main([*argv, *small, *runs, "--json", str(tmp_path / "r.json")]) == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["game"] == "liars_dice" and r["final"]["games"] == 1000 and r["points_unit"] == "points"
    assert r["final"]["points_per_game"] <= r["exact"]["exploitability"] + r["final"]["points_half_width"]
    assert "an exact best response wins" in capsys.readouterr().out
    capsys.readouterr()
    assert exploit_main([str(run_dir / CKPT), "--config", "configs/kuhn.ini", *runs]) == 2
    assert "it plays kuhn, the target" in capsys.readouterr().err


def test_the_report_draws_a_liars_dice_run(run_dir):
    assert report_main([str(run_dir)]) == 0
    html = (run_dir / "report" / "report.html").read_text()
    assert "exploitability" in html and "liars_dice" in html


def test_a_liars_dice_config_with_emberfronts_keys_is_refused():
    with pytest.raises(ConfigError) as refused:
        load_config(Path("configs/liars_dice.ini"), ["--env.turn-cap", "5"])
    assert "[env] turn_cap = 5: only [env] game = emberfront reads it" in str(refused.value)
    assert load_config(Path("configs/liars_dice.ini"), []).env.game == "liars_dice"
    assert game_named("liars_dice").default_config == "configs/liars_dice.ini"
