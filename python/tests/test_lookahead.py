"""Decision-time lookahead: the engine's candidate search leaves the game alone, judges every
candidate at the decider's next turn, depends only on what the decider sees; the actor is seeded, takes a winning move
when the value weight says so, plays its policy's own decisions, and bad weights are refused
(in code and on the command line)."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tcgleague import evaluate_checkpoint
from tcgleague.checkpoint import load_checkpoint
from tcgleague.evaluate_checkpoint import evaluate_loaded
from tcgleague.games.emberfront.bots import make_bot, random_actions
from tcgleague.games.emberfront.engine import LAYOUT, position
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import (
    COUNT,
    EFFECTS,
    MAX_LEGAL,
    N_EFFECTS,
    OBS_BYTES,
    features_np,
    legal_actions,
)
from tcgleague.games.emberfront.lookahead import STATUS, LookaheadActor
from tcgleague.games.emberfront.play import agent_actor

ROOT = Path(__file__).resolve().parents[2]
GLOBAL = LAYOUT["global_offset"]
MY_DECK = GLOBAL + LAYOUT["global_features"]["my_deck"]  # cards left in the decider's deck
TURN, SEAT, MY_TURN = (GLOBAL + LAYOUT["global_features"][name] for name in ("turn", "seat", "my_turn"))
HAND_START = LAYOUT["entity_offset"] + LAYOUT["entity_groups"]["my_hand"] * LAYOUT["entity_width"]
MY_HAND = slice(HAND_START, HAND_START + LAYOUT["max_hand"] * LAYOUT["entity_width"])  # the decider's hand entities

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def checkpoint(smoke_checkpoint) -> Path:
    """The epoch-1 checkpoint of a one-epoch smoke run (conftest's, shared: read only)."""
    return smoke_checkpoint


def random_positions(n_games: int, steps: int, seed: int):
    """Yields (env, obs, row) at every decision of random play in `n_games` games."""
    env = TCGEnv(num_games=n_games, seed=seed)
    obs, _ = env.reset(seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        for row in np.flatnonzero(env.masks):
            yield env, obs, int(row)
        obs, *_ = env.step(random_actions(obs, rng))


def look(env: TCGEnv, row: int, salt: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(n legal actions, the next observations' features [MAX_LEGAL, OBS_SIZE], statuses); rows
    the engine leaves alone read -1 (their bytes start as 0xFF)."""
    next_obs = np.full((MAX_LEGAL, OBS_BYTES), 0xFF, dtype=np.uint8)
    status = np.full(MAX_LEGAL, -1, dtype=np.int8)
    n = env.engine.lookahead(row // 2, salt, next_obs, status)
    return n, features_np(next_obs), status


def test_the_search_leaves_the_game_alone_and_covers_every_legal_action():
    seen = set()
    for env, obs, row in random_positions(16, 60, seed=1):
        before = env.engine.get_state()
        n, next_obs, status = look(env, row, salt=row)
        assert env.engine.get_state() == before, "the search changed the real game"
        assert n == int(features_np(obs[row])[COUNT]), "one candidate per legal action"
        assert set(status[:n].tolist()) <= set(STATUS.values()) and (status[n:] == -1).all()
        decide = status[:n] == STATUS["decide"]
        assert (next_obs[:n][decide][:, COUNT] >= 1).all() and (next_obs[:n][~decide] == 0).all()
        assert (next_obs[n:] == -1).all(), "nothing written past the legal actions"
        seen |= set(status[:n].tolist())
    assert STATUS["decide"] in seen and STATUS["win"] in seen and STATUS["loss"] in seen


def test_every_candidate_is_judged_at_the_deciders_next_turn():
    """A candidate that does not end the game is looked at from the decider's own seat at the
    start of its next turn (not in a response window of the opponent's): the same horizon for a
    mid-turn play and an end of turn."""
    looked = 0
    for env, obs, row in random_positions(8, 60, seed=2):
        n, next_obs, status = look(env, row, salt=7)
        turn = features_np(obs[row])[TURN]
        for i in np.flatnonzero(status[:n] == STATUS["decide"]):
            assert next_obs[i, SEAT] == row % 2 and next_obs[i, MY_TURN] == 1, "the decider's own turn"
            assert next_obs[i, TURN] > turn, (turn, next_obs[i, TURN])
            looked += 1
    assert looked > 500


def hidden_information_permuted(pos: dict, me: int) -> dict:
    """The same position as the decider `me` sees it: its deck in another order, one of the
    opponent's hand cards swapped with one of its deck."""
    pos = copy.deepcopy(pos)
    mine, theirs = pos["players"][me], pos["players"][1 - me]
    mine["deck"] = mine["deck"][::-1]
    swap = [(h, d) for h, card in enumerate(theirs["hand"]) for d, other in enumerate(theirs["deck"]) if card != other]
    if swap:
        h, d = swap[0]
        theirs["hand"][h], theirs["deck"][d] = theirs["deck"][d], theirs["hand"][h]
    return pos


def test_the_search_depends_only_on_what_the_decider_sees():
    """Two games that differ only in hidden information (the decider's deck order, which of
    the opponent's unseen cards are in its hand, the rng: the twin is dealt from another seed
    and then given the position) give the very same lookahead; a visible change does not (the
    comparison can fail)."""
    compared = changed = 0
    for env, _obs, row in random_positions(8, 60, seed=5):
        game = row // 2
        twin = TCGEnv(num_games=env.num_games, seed=99)
        twin.reset(99)
        pos = position.decode(env.engine.export_position(game))
        twin.engine.import_position(game, position.encode(hidden_information_permuted(pos, row % 2)))
        n, next_obs, status = look(env, row, salt=11)
        n_twin, next_obs_twin, status_twin = look(twin, row, salt=11)
        assert n == n_twin and np.array_equal(status, status_twin) and np.array_equal(next_obs[:n], next_obs_twin[:n])
        compared += 1
        mine = pos["players"][row % 2]
        if mine["deck"] and mine["hand"] and mine["deck"][0] != mine["hand"][0]:
            mine["hand"][0], mine["deck"][0] = mine["deck"][0], mine["hand"][0]  # visible: a card in hand
            twin.engine.import_position(game, position.encode(pos))
            changed += not np.array_equal(look(twin, row, salt=11)[1][:n], next_obs[:n])
    assert compared > 100 and changed > 20, (compared, changed)


def test_action_effects_depend_only_on_what_the_decider_sees():
    """The observation's effects of each legal action (the engine applies it to a copy of the
    game) are the same in a twin that differs only in hidden information and its rng, so they
    never reveal a hidden card or a random outcome to come; they are non-zero and differ
    between actions, so the comparison can fail."""
    compared = informative = 0
    for env, obs, row in random_positions(8, 60, seed=6):
        game, me = row // 2, row % 2
        twin = TCGEnv(num_games=env.num_games, seed=98)
        twin.reset(98)
        pos = position.decode(env.engine.export_position(game))
        twin.engine.import_position(game, position.encode(hidden_information_permuted(pos, me)))
        f = features_np(obs[row])
        n = int(f[COUNT])
        effects = f[EFFECTS].reshape(MAX_LEGAL, N_EFFECTS)
        assert np.array_equal(twin.observations[row], obs[row])
        assert not effects[n:].any(), "no effects past the legal list"
        compared += 1
        informative += n > 1 and len(np.unique(effects[:n], axis=0)) > 1
    assert compared > 100 and informative > 50, (compared, informative)


def test_an_attack_is_seen_landing():
    """An attack's effects are the attack resolved with the opponent passing its response
    windows: the opponent's leader loses what the real game takes from it then."""
    checked = landed = 0
    health = LAYOUT["effect_features"]["opp_leader_health"]
    for env, obs, row in random_positions(16, 80, seed=8):
        legal, count = legal_actions(obs[row][None])
        effects = features_np(obs[row])[EFFECTS].reshape(MAX_LEGAL, N_EFFECTS)
        for i in np.flatnonzero(legal[0, : count[0], 0] == LAYOUT["action_types"]["attack"])[:2]:
            me = row % 2
            game = TCGEnv(num_games=1, seed=97)
            game.reset(97)
            game.engine.import_position(0, env.engine.export_position(row // 2))
            before = game.engine.export_position(0)
            actions = np.zeros((2, 4), dtype=np.int32)
            actions[me] = legal[0, i]
            game.step(actions)
            while game.masks[1 - me] and not game.masks[me]:
                actions[:] = 0
                actions[1 - me] = legal_actions(game.observations[1 - me][None])[0][0, 0]  # PASS: listed first
                game.step(actions)
            lost = opp_leader_health(game.engine.export_position(0), me) - opp_leader_health(before, me)
            assert effects[i, health] == lost, (effects[i], lost)
            checked += 1
            landed += lost < 0
        if checked >= 40:
            break
    assert checked >= 20 and landed >= 10, (checked, landed)


def opp_leader_health(values, me: int) -> int:
    return position.decode(values)["players"][1 - me]["units"][LAYOUT["front_slots"] + LAYOUT["back_slots"]]["health"]


def test_a_drawn_card_comes_from_a_reshuffled_deck_not_the_real_one():
    """Where a candidate draws, the card in the decider's hand depends on the search's salt: the
    real deck order is never read (without the reshuffle every salt would draw the real top card)."""
    varied = draws = 0
    for env, obs, row in random_positions(16, 80, seed=3):
        n, first, status = look(env, row, salt=1)
        drew = (status[:n] == STATUS["decide"]) & (first[:n, MY_DECK] < features_np(obs[row])[MY_DECK])
        if not drew.any():
            continue
        draws += 1
        i = int(np.flatnonzero(drew)[0])
        varied += any(
            not np.array_equal(look(env, row, salt)[1][i, MY_HAND], first[i, MY_HAND]) for salt in range(2, 10)
        )
    assert draws > 5 and varied >= 0.8 * draws, (varied, draws)


def test_a_seeded_lookahead_match_is_reproducible_and_searches(checkpoint):
    loaded = load_checkpoint(checkpoint)
    a, b = (evaluate_loaded(loaded, "greedy", 16, seed=3, lookahead=100.0, log=lambda *_: None) for _ in range(2))
    assert a["lookahead_searched"] > 100 and a["lookahead_overridden"] > 0
    keys = ("wins", "losses", "draws", "mean_length", "lookahead_searched", "lookahead_overridden")
    assert [a[k] for k in keys] == [b[k] for k in keys]
    plain = evaluate_loaded(loaded, "greedy", 16, seed=3, log=lambda *_: None)
    assert plain["lookahead"] is None and plain["lookahead_searched"] == 0


def test_the_policys_own_decision_is_untouched_and_a_winning_move_is_taken(checkpoint):
    """The search keeps the policy's sampled decision (same LSTM state, same draws as a plain
    actor) and, at a weight that makes Q dominate, takes a move that wins on the spot."""
    loaded = load_checkpoint(checkpoint)
    wins_found = 0
    for env, obs, row in random_positions(16, 200, seed=4):
        n, _, status = look(env, row, salt=0)
        if not (status[:n] == STATUS["win"]).any() or (status[:n] == STATUS["win"]).all():
            continue
        plain = agent_actor(loaded, env, seed=9, name="plain")
        searcher = agent_actor(loaded, env, seed=9, name="search", lookahead=1e4)
        d_plain = plain.decide(torch.from_numpy(obs[[row]]), torch.tensor([row]))
        d_search, chosen = searcher.search(obs, np.array([row]))
        assert torch.equal(d_plain.actions, d_search.actions) and torch.equal(d_plain.logprob, d_search.logprob)
        legal, _ = legal_actions(obs[row][None])
        picked = [i for i in range(n) if np.array_equal(legal[0, i], chosen[0])]
        assert status[picked[0]] == STATUS["win"]
        wins_found += 1
        if wins_found == 3:
            break
    assert wins_found == 3, "random play should reach winning moves"


@pytest.mark.parametrize("weight", [0.0, -1.0, math.nan, math.inf, True, "100"])
def test_a_bad_value_weight_is_refused(checkpoint, weight):
    env = TCGEnv(num_games=1)
    with pytest.raises(ValueError, match="value_weight must be a finite number > 0"):
        agent_actor(load_checkpoint(checkpoint), env, seed=0, name="agent", lookahead=weight)


def test_only_a_policy_in_an_engine_env_can_search(checkpoint):
    env = TCGEnv(num_games=1)
    with pytest.raises(TypeError, match="needs a policy"):
        LookaheadActor(make_bot("greedy", env, 0), env, seed=0)
    inner = agent_actor(load_checkpoint(checkpoint), env, seed=0, name="agent")
    with pytest.raises(TypeError, match="needs the engine's games"):
        LookaheadActor(inner, object(), seed=0)


def evaluate(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "evaluate_checkpoint.py", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_evaluate_checkpoint_with_lookahead_reports_the_search(checkpoint, tmp_path):
    out = tmp_path / "r.json"
    proc = evaluate(str(checkpoint), "--episodes", "8", "--lookahead", "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["lookahead"] == 100.0 and report["lookahead_searched"] > 0 and report["episodes"] == 8
    assert "lookahead 100 (searched" in proc.stdout


@pytest.mark.parametrize("weight", ["0", "-1", "nan", "inf"])
def test_evaluate_checkpoint_refuses_a_bad_lookahead_weight(checkpoint, weight, capsys):
    with pytest.raises(SystemExit) as exited:  # argparse's refusal: one usage line and the message
        evaluate_checkpoint.main([str(checkpoint), "--episodes", "2", f"--lookahead={weight}"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--lookahead W must be a finite number > 0" in err and "Traceback" not in err
