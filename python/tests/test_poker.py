"""Leduc and Kuhn poker (tcgleague.games): the rules by hand, then against OpenSpiel's own
`leduc_poker` and `kuhn_poker` over 10,000 random games each (the same deal and actions give the
same legal actions, information-state strings and tensors at every decision, and the same
returns), then seeded deals that repeat and a state_dict that resumes exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tcgleague.games.poker.env import PokerEnv
from tcgleague.games.poker.openspiel import info_state_string, openspiel_action, openspiel_legal
from tcgleague.games.poker.rules import ACTION_NAMES, CALL, FOLD, KUHN, LEDUC, RAISE, SEATS, rules_named
from tcgleague.stepped_env import IllegalActionError

GAMES_COMPARED = 10_000
J1, J2, Q1, Q2, K1, K2 = range(6)  # Leduc's cards in OpenSpiel's numbering: rank = card // 2


def play(env: PokerEnv, *moves: int):
    """Each move by whichever seat is to act in game 0 (every other game checks along)."""
    result = None
    for move in moves:
        actions = np.full(env.num_rows, CALL)
        actions[env.acting_rows()[0]] = move
        result = env.step(actions)
    return result


def legal(env: PokerEnv, row: int) -> list[str]:
    mask = env.obs[row, env.rules.legal_offset :]
    return [name for name, bit in zip(ACTION_NAMES, mask) if bit]


def test_leduc_betting_fold_only_facing_a_bet_two_raises_a_round_and_the_pot_sizes():
    env = PokerEnv(LEDUC, 1)
    env.set_deal([0], [[J1, K1, Q1]])
    assert legal(env, 0) == ["call", "raise"] and legal(env, 1) == [], "seat 0 opens; nothing to fold to"
    play(env, RAISE, RAISE)
    assert legal(env, 0) == ["fold", "call"], "two raises close the round's raising"
    play(env, CALL)  # round 1: 1 + 2 + 2 = 5 chips each
    assert env.betting.round[0] == 1 and legal(env, 0) == ["call", "raise"], "seat 0 opens round 2"
    _, rewards, terminals, _, episodes = play(env, RAISE, RAISE, CALL)  # round 2 raises by 4: 13 each
    assert terminals[:2].all() and episodes.winners.tolist() == [1]
    assert rewards[:2].tolist() == [-13.0, 13.0], "the king beats the jack at the showdown: 13, OpenSpiel's max utility"


def test_leduc_showdown_pair_beats_rank_and_equal_ranks_split():
    env = PokerEnv(LEDUC, 1)
    env.set_deal([0], [[J1, K1, J2]])
    _, rewards, *_ = play(env, CALL, CALL, CALL, CALL)
    assert rewards[:2].tolist() == [1.0, -1.0], "a jack paired with the public jack beats a king"
    env.set_deal([0], [[Q1, Q2, K1]])
    _, rewards, _, _, episodes = play(env, CALL, RAISE, CALL, CALL, CALL)
    assert rewards[:2].tolist() == [0.0, 0.0] and episodes.winners.tolist() == [-1], "two queens split the pot"


def test_a_fold_loses_what_the_folder_put_in():
    env = PokerEnv(LEDUC, 1)
    env.set_deal([0], [[K1, J1, Q1]])
    _, rewards, terminals, _, episodes = play(env, RAISE, FOLD)
    assert terminals[:2].all() and rewards[:2].tolist() == [1.0, -1.0] and episodes.winners.tolist() == [0]
    kuhn = PokerEnv(KUHN, 1)
    kuhn.set_deal([0], [[0, 2]])
    assert legal(kuhn, 0) == ["call", "raise"]
    _, rewards, *_ = play(kuhn, CALL, RAISE, FOLD)
    assert rewards[:2].tolist() == [-1.0, 1.0], "Kuhn: pass, bet, pass"


def test_an_illegal_action_is_refused_naming_the_row():
    env = PokerEnv(LEDUC, 2)
    env.reset()
    actions = np.full(env.num_rows, CALL)
    actions[2] = FOLD  # game 1's seat 0, with nothing to fold to
    with pytest.raises(IllegalActionError, match="row 2: action 0 is not legal"):
        env.step(actions)
    with pytest.raises(ValueError, match="one action per row"):
        env.step(actions[:3])
    with pytest.raises(ValueError, match="valid: kuhn, leduc"):
        rules_named("holdem")


@pytest.mark.parametrize("rules", [LEDUC, KUHN], ids=lambda r: r.name)
def test_random_games_match_openspiel(rules):
    """Our deals are dealt to OpenSpiel as chance outcomes, then both play the same uniformly
    random legal actions; every decision of every game is compared on both seats' rows."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game(rules.openspiel_name)
    env = PokerEnv(rules, GAMES_COMPARED, seed=42)
    obs, cards = env.reset(), env.cards.copy()
    states = []
    for deal in cards[:, :SEATS]:
        states.append(game.new_initial_state())
        for card in deal:
            states[-1].apply_action(int(card))
    picks, live, decisions = np.random.default_rng(7), np.ones(GAMES_COMPARED, dtype=bool), 0
    while live.any():
        actions = np.full(env.num_rows, CALL)
        for g in np.flatnonzero(live):
            state, row = states[g], env.acting_rows()[g]
            if state.is_chance_node():
                state.apply_action(int(cards[g, SEATS]))  # the public card
            mask = obs[row, rules.legal_offset :]
            assert state.current_player() == row % SEATS, f"game {g}"
            assert openspiel_legal(rules, mask) == state.legal_actions(), f"game {g}: {state}"
            for seat in range(SEATS):
                mine = obs[SEATS * g + seat]
                assert info_state_string(rules, mine) == state.information_state_string(seat), f"game {g}"
                assert mine[: rules.info_width].tolist() == state.information_state_tensor(seat), f"game {g}"
            actions[row] = picks.choice(np.flatnonzero(mask))
            state.apply_action(openspiel_action(rules, mask, actions[row]))
            decisions += 1
        obs, rewards, terminals, _, episodes = env.step(actions)
        ended = terminals[::SEATS] & live
        assert set(np.flatnonzero(ended)) == {g for g in np.flatnonzero(live) if states[g].is_terminal()}
        for g in np.flatnonzero(ended):
            assert rewards[SEATS * g : SEATS * g + SEATS].tolist() == states[g].returns(), f"game {g}: {states[g]}"
        won = episodes.winners >= 0
        assert (episodes.returns[won, episodes.winners[won]] > 0).all(), "a winner's return is positive"
        live &= ~ended
    assert decisions > 2 * GAMES_COMPARED


def random_legal(obs: np.ndarray, rules, picks: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action on every row (the waiting rows' are ignored by step)."""
    mask = obs[:, rules.legal_offset :].astype(bool)
    scores = picks.random(mask.shape) * mask
    return scores.argmax(axis=1)


def run(env: PokerEnv, steps: int, seed: int) -> list[tuple]:
    picks, out = np.random.default_rng(seed), []
    for _ in range(steps):
        obs, rewards, terminals, _, episodes = env.step(random_legal(env.obs, env.rules, picks))
        out.append((obs.copy(), rewards, terminals, episodes.games, episodes.returns))
    return out


def same(a: list[tuple], b: list[tuple]) -> bool:
    return all(np.array_equal(x, y) for step_a, step_b in zip(a, b) for x, y in zip(step_a, step_b))


@pytest.mark.parametrize("rules", [LEDUC, KUHN], ids=lambda r: r.name)
def test_seeded_deals_repeat_and_differ_by_seed(rules):
    first, second, other = (PokerEnv(rules, 64, seed=s) for s in (5, 5, 6))
    for env in (first, second, other):
        env.reset()
    assert same(run(first, 40, seed=1), run(second, 40, seed=1))
    assert not np.array_equal(first.cards, other.cards)


@pytest.mark.parametrize("rules", [LEDUC, KUHN], ids=lambda r: r.name)
def test_state_dict_round_trip_continues_exactly(rules):
    straight = PokerEnv(rules, 64, seed=3)
    straight.reset()
    run(straight, 17, seed=2)
    saved = straight.state_dict()
    expected = run(straight, 30, seed=9)
    resumed = PokerEnv(rules, 64, seed=99)
    resumed.reset()
    resumed.load_state_dict(saved)
    assert same(run(resumed, 30, seed=9), expected)
    with pytest.raises(ValueError, match="cannot be loaded"):
        PokerEnv(rules, 8).load_state_dict(saved)


@pytest.mark.parametrize("rules", [pytest.param(KUHN, marks=pytest.mark.slow), LEDUC], ids=lambda r: r.name)
def test_bench_engine_random_play_agrees_with_openspiels_exact_value(rules, tmp_path):
    """`bench engine --game`: the env's random-legal games come to seat 0's exact expected return
    under uniform random play (OpenSpiel's), within four standard errors; and the speed is timed."""
    out = tmp_path / "engine.json"
    cmd = [sys.executable, "-m", "tcgleague.bench", "engine", "--game", rules.name, "--seconds", "0.3"]
    done = subprocess.run(
        [*cmd, "--games", "512", "--health-games", "200000", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["decisions_per_sec"] > 0 and figures["random_games"] == 512 * (200000 // 512)
    exact = figures["seat0_exact_return_random"]
    assert exact == pytest.approx({"kuhn": 0.125, "leduc": -0.078125}[rules.name], abs=1e-6)
    assert abs(figures["seat0_mean_return_random"] - exact) < 4 * figures["seat0_return_stderr"]
    assert figures["mean_decisions"] == pytest.approx({"kuhn": 2.25, "leduc": 4.06}[rules.name], abs=0.05)
