"""Playing a checkpoint in the terminal: a whole game driven by scripted input (wrong answers
re-asked), leaving at the end of input, watching the agent play a bot, actions in words, and
bad input refused with one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tcgleague import play as play_cli
from tcgleague.checkpoint import load_checkpoint
from tcgleague.games.emberfront.engine.cards import load_card_pool
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import legal_actions
from tcgleague.games.emberfront.play import agent_actor
from tcgleague.games.emberfront.words import describe

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def checkpoint(smoke_checkpoint) -> Path:
    """The epoch-1 checkpoint of a one-epoch smoke run (conftest's, shared: read only)."""
    return smoke_checkpoint


def play(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "play.py", *args], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120
    )


def test_a_whole_game_with_scripted_input_reasks_wrong_answers_and_ends_with_the_result(checkpoint):
    proc = play(str(checkpoint), "--seed", "2", "--deck", "ember", stdin="x\n0\n" + "1\n" * 600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "enter a number from 1 to 2 (got 'x')" in out and "enter a number from 1 to 2 (got '0')" in out
    assert "hand:" in out and "cards (hidden)" in out, "the agent's hand is hidden"
    assert "1. pass (end turn / decline)" in out and "agent: " in out and "(top: " in out
    assert "game 1: " in out and "1 game(s): the agent won" in out


def test_the_end_of_input_leaves_cleanly(checkpoint):
    proc = play(str(checkpoint), "--seed", "3", "--reveal", stdin="1\n")
    assert proc.returncode == 0 and "left the game" in proc.stdout
    assert "cards (hidden)" not in proc.stdout, "--reveal shows the agent's hand"
    assert "Traceback" not in proc.stderr


def test_watching_the_agent_play_greedy(checkpoint):
    proc = play(str(checkpoint), "--opponent", "greedy", "--games", "2", "--seed", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "greedy: " in proc.stdout and "agent: " in proc.stdout and "your move" not in proc.stdout
    assert "game 2: " in proc.stdout and "2 game(s): the agent won" in proc.stdout


def test_watching_a_searching_agent_play_greedy(checkpoint):
    proc = play(str(checkpoint), "--opponent", "greedy", "--games", "1", "--seed", "1", "--lookahead", "1000")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "agent: " in proc.stdout and "(lookahead's choice)" in proc.stdout and "1 game(s)" in proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.pt"], "play: checkpoint refused: checkpoint missing.pt not found"),
        (["--deck", "lava"], "play: bad argument: --deck 'lava': not a deck (decks: ember, tide, grove, shade)"),
        (["--opponent", "nobody"], "play: checkpoint refused: --opponent nobody: neither a bot"),
        (["--lookahead=nan"], "--lookahead W must be a finite number > 0, got nan"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(checkpoint, args, message, capsys):
    argv = args if args[0].endswith(".pt") else [str(checkpoint), *args]
    try:  # in-process: the entry point's refusal, or argparse's exit
        code = play_cli.main(argv)
    except SystemExit as exited:
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def test_actions_are_described_with_card_names_and_places():
    env = TCGEnv(num_games=1, seed=5)
    obs, _ = env.reset(5)
    cards = load_card_pool()
    words = []
    actions = np.zeros((2, 4), dtype=np.int32)
    for _ in range(60):  # into the main phase, where plays and attacks are legal
        row = int(np.flatnonzero(env.masks)[0])
        legal, count = legal_actions(obs[row][None])
        words += [describe(legal[0, i], obs[row], cards) for i in range(int(count[0]))]
        actions[row] = legal[0, int(count[0]) - 1]  # the last legal action: plays and attacks come late
        obs, *_ = env.step(actions)
    plays = [w for w in words if w.startswith("play your hand ")]
    assert plays and all(": " in w and not w.endswith(": -") for w in plays), plays[:3]
    assert any(w.startswith("attack with your ") and "-> enemy " in w for w in words), words[:20]
    hand_cards = {name for w in plays for name in [w.split(": ", 1)[1].split(" into ")[0]]}
    assert hand_cards <= {cards.name(c) for c in cards.cards}


def test_the_agents_shown_probabilities_are_its_sampling_distribution(checkpoint):
    env = TCGEnv(num_games=1, seed=4)
    agent = agent_actor(load_checkpoint(checkpoint, policy_config=None), env, seed=0, name="agent")
    obs, _ = env.reset(4)
    actions = np.zeros((2, 4), dtype=np.int32)
    for _ in range(12):
        row = int(np.flatnonzero(env.masks)[0])
        d = agent.decide(torch.as_tensor(obs[row][None]), torch.tensor([row]))
        legal, count = legal_actions(obs[row][None])
        logprob = agent.legal_log_probs(torch.as_tensor(obs[row][None]), d.state_h, d.state_c)[0].numpy()
        probs = np.exp(logprob[: int(count[0])])
        assert np.isneginf(logprob[int(count[0]) :]).all(), "past the legal count: probability 0"
        chosen = [i for i in range(int(count[0])) if (legal[0, i] == d.actions[0].numpy()).all()]
        assert len(probs) == int(count[0]) and probs.sum() == pytest.approx(1.0, abs=1e-5)
        assert probs[chosen[0]] == pytest.approx(float(d.logprob[0].exp()), rel=1e-5)
        actions[row] = d.actions[0].numpy()
        obs, *_ = env.step(actions)


def test_the_agents_alternatives_never_name_cards_it_keeps_in_hand():
    env = TCGEnv(num_games=1, seed=5)
    obs, _ = env.reset(5)
    cards = load_card_pool()
    row = int(np.flatnonzero(env.masks)[0])
    legal, count = legal_actions(obs[row][None])
    for _ in range(40):
        plays = [i for i in range(int(count[0])) if legal[0, i, 0] == 2]  # action type "play"
        if plays:
            break
        actions = np.zeros((2, 4), dtype=np.int32)
        actions[row] = legal[0, 0]
        obs, *_ = env.step(actions)
        row = int(np.flatnonzero(env.masks)[0])
        legal, count = legal_actions(obs[row][None])
    hidden = describe(legal[0, plays[0]], obs[row], cards, "its", hide_hand=True)
    shown = describe(legal[0, plays[0]], obs[row], cards, "its")
    assert hidden.startswith("play its hand ") and ":" not in hidden and ": " in shown
