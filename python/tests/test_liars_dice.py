"""Liar's Dice (games/liars_dice): OpenSpiel's `liars_dice` to the bit over 10,000 random games
(legal actions, both seats' information-state tensors and strings, returns), exact resume, and
bad actions refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from tcgleague.games.liars_dice.env import LiarsDiceEnv
from tcgleague.games.liars_dice.rows import LiarsDicePufferEnv
from tcgleague.games.liars_dice.rules import (
    INFO_WIDTH,
    LEGAL_OFFSET,
    LIAR,
    NUM_ACTIONS,
    OBS_WIDTH,
    OPENSPIEL_NAME,
    SEATS,
    bid_text,
    matching,
)
from tcgleague.stepped_env import IllegalActionError

GAMES_COMPARED = 10_000


def info_state_string(row: np.ndarray) -> str:
    """OpenSpiel's information-state string of a row: the die, then every bid and call so far."""
    die = int(np.flatnonzero(row[SEATS : SEATS + 6])[0]) + 1
    history = np.flatnonzero(row[SEATS + 6 : INFO_WIDTH])
    return " ".join([str(die), *(bid_text(int(a)) for a in history)])


def random_legal(obs: np.ndarray, picks: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action on every row (the waiting rows' are ignored by step)."""
    mask = obs[:, LEGAL_OFFSET:].astype(bool)
    return (picks.random(mask.shape) * mask).argmax(axis=1)


def test_random_games_match_openspiel():
    """Our rolls are given to OpenSpiel as chance outcomes, then both play the same uniformly
    random legal actions; every decision of every game is compared on both seats' rows."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game(OPENSPIEL_NAME)
    assert game.information_state_tensor_shape() == [INFO_WIDTH] and game.num_distinct_actions() == NUM_ACTIONS
    env = LiarsDiceEnv(GAMES_COMPARED, seed=42)
    obs, dice = env.reset(), env.dice.copy()
    states = []
    for roll in dice:
        states.append(game.new_initial_state())
        for die in roll:
            states[-1].apply_action(int(die) - 1)
    picks, live, decisions = np.random.default_rng(7), np.ones(GAMES_COMPARED, dtype=bool), 0
    while live.any():
        actions = random_legal(obs, picks)
        for g in np.flatnonzero(live):
            state, row = states[g], env.acting_rows()[g]
            mask = obs[row, LEGAL_OFFSET:]
            assert state.current_player() == row % SEATS, f"game {g}"
            assert np.flatnonzero(mask).tolist() == state.legal_actions(), f"game {g}: {state}"
            for seat in range(SEATS):
                mine = obs[SEATS * g + seat]
                assert info_state_string(mine) == state.information_state_string(seat), f"game {g}"
                assert mine[:INFO_WIDTH].tolist() == state.information_state_tensor(seat), f"game {g}"
                assert seat == row % SEATS or not mine[LEGAL_OFFSET:].any(), "the waiting row has no legal action"
            state.apply_action(int(actions[row]))
            decisions += 1
        obs, rewards, terminals, _, episodes = env.step(actions)
        ended = terminals[::SEATS] & live
        assert set(np.flatnonzero(ended)) == {g for g in np.flatnonzero(live) if states[g].is_terminal()}
        for g in np.flatnonzero(ended):
            assert rewards[SEATS * g : SEATS * g + SEATS].tolist() == states[g].returns(), f"game {g}: {states[g]}"
        assert (episodes.returns[np.arange(len(episodes.games)), episodes.winners] == 1).all()
        live &= ~ended
    assert decisions > 2 * GAMES_COMPARED


def test_sixes_are_wild_and_a_bid_stands_on_enough_dice():
    dice = np.array([[3, 6], [3, 4], [2, 2], [6, 6]])
    assert matching(dice, np.array([3, 3, 2, 5])).tolist() == [2, 1, 2, 2]


def test_a_seeded_env_resumes_exactly_from_its_state():
    picks = np.random.default_rng(3)
    env = LiarsDiceEnv(64, seed=5)
    obs = env.reset()
    for _ in range(20):
        obs = env.step(random_legal(obs, picks))[0]
    saved, draws = env.state_dict(), np.random.default_rng(9)
    straight = [env.step(random_legal(env.obs, draws))[1].copy() for _ in range(30)]
    resumed = LiarsDiceEnv(64, seed=123)
    resumed.load_state_dict(saved)
    draws = np.random.default_rng(9)
    again = [resumed.step(random_legal(resumed.obs, draws))[1].copy() for _ in range(30)]
    assert all((a == b).all() for a, b in zip(straight, again)) and (resumed.obs == env.obs).all()
    with pytest.raises(ValueError, match="cannot be loaded into liars_dice of 8"):
        LiarsDiceEnv(8).load_state_dict(saved)


@pytest.mark.parametrize("action", [LIAR, -1, NUM_ACTIONS, 0])
def test_an_illegal_action_is_refused_naming_the_row_and_nothing_changes(action):
    env = LiarsDiceEnv(4, seed=1)
    env.reset()
    if action == 0:  # a bid not above the last one
        env.step(np.full(env.num_rows, 3))
    before = env.state_dict()
    with pytest.raises(IllegalActionError, match=r"row \d+: action -?\d+ is not legal \(mask"):
        env.step(np.full(env.num_rows, action))
    after = env.state_dict()
    assert all((np.asarray(before[k]) == np.asarray(after[k])).all() for k in ("obs", "dice", "bid", "actor"))


def test_bad_shapes_and_dice_are_refused():
    env = LiarsDiceEnv(4)
    env.reset()
    with pytest.raises(ValueError, match=r"one action per row: shape \(8,\)"):
        env.step(np.zeros((8, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="faces 1-6"):
        env.set_deal([0], [[0, 7]])
    with pytest.raises(ValueError, match=f"int8 \\[8, {OBS_WIDTH}\\]"):
        LiarsDiceEnv(4, obs=np.zeros((8, OBS_WIDTH), dtype=np.float32))


def test_the_puffer_face_steps_records_and_resumes_exactly_from_its_engine_state():
    env = LiarsDicePufferEnv(num_games=32, seed=3)
    obs, _ = env.reset()
    picks, infos = np.random.default_rng(1), []
    for _ in range(15):
        assert env.masks.sum() == 32 and (obs[~env.masks, LEGAL_OFFSET:] == 0).all(), "one acting row per game"
        obs, rewards, terminals, _, step_infos = env.step(random_legal(obs, picks)[:, None])
        infos += step_infos
        assert sorted(i["game"] for i in step_infos) == sorted(np.flatnonzero(terminals[::SEATS]).tolist())
    assert infos and all(i["returns"][i["winner"]] == 1 and i["decisions"] >= 2 for i in infos)
    assert 0 < LiarsDicePufferEnv.summarize_episodes(infos)["environment/first_player_winrate"] < 1
    env_masks = env.masks.copy()
    saved, rows, draws = env.engine.get_state(), env.observations.copy(), np.random.default_rng(4)
    straight = [env.step(random_legal(env.observations, draws))[1].copy() for _ in range(10)]
    draws = np.random.default_rng(4)
    resumed = LiarsDicePufferEnv(num_games=32, seed=7)
    resumed.reset()
    resumed.engine.set_state(saved)
    resumed.observations[:], resumed.masks[:] = rows, env_masks  # the rollout's buffers: a checkpoint's run state
    again = [resumed.step(random_legal(resumed.observations, draws))[1].copy() for _ in range(10)]
    assert all((a == b).all() for a, b in zip(straight, again))
    with pytest.raises(ValueError, match="liars_dice engine state refused"):
        LiarsDicePufferEnv(num_games=8).engine.set_state(saved)


@pytest.mark.parametrize(
    "actions, error, message",
    [
        (lambda n: np.full((n, 1), np.nan), ValueError, "nan is not an integer index"),
        (lambda n: np.full((n, 1), 1.5), ValueError, "1.5 is not an integer index"),
        (lambda n: np.zeros((n, 3)), TypeError, r"shape \(8, 1\)"),
        (lambda n: np.zeros(2 * n), TypeError, r"shape \(8, 1\)"),
        (lambda n: np.array(["a"] * n), TypeError, "integer or float array"),
    ],
    ids=["nan", "fraction", "wide", "flat", "strings"],
)
def test_bad_action_batches_are_refused_by_the_face_before_any_step(actions, error, message):
    env = LiarsDicePufferEnv(num_games=4, seed=2)
    env.reset()
    before = env.engine.get_state()
    with pytest.raises(error, match=message):
        env.step(actions(env.num_agents))
    assert env.engine.get_state() == before


def test_the_honest_bot_beats_random_play_in_duplicate_games_with_legal_moves_only():
    """Both bots only ever play legal actions (the env refuses any other), and the baseline wins."""
    from tcgleague.games.liars_dice.match import HONEST, RANDOM, LiarsDiceTable, bot_side
    from tcgleague.match import play_duplicate

    report = play_duplicate(LiarsDiceTable(), bot_side(HONEST), bot_side(RANDOM, 5), 2000, seed=3, parallel=128)
    assert report.games == 2000 and report.tally.draws == 0
    assert report.winrate > 0.6, report.winrate
    again = play_duplicate(LiarsDiceTable(), bot_side(HONEST), bot_side(RANDOM, 5), 2000, seed=3, parallel=128)
    assert again.records == report.records, "a seeded match is reproducible"
    with pytest.raises(ValueError, match="unknown Liar's Dice bot 'greedy'; valid: random, honest"):
        bot_side("greedy")


def test_the_honest_bot_calls_an_implausible_bid_and_bids_what_its_die_makes_true():
    from tcgleague.games.liars_dice.match import HonestBot

    env = LiarsDiceEnv(3)
    env.set_deal(np.arange(3), [[2, 4], [5, 6], [3, 3]])
    env.step(np.repeat([11, 0, 3], SEATS))  # seat 0 bids 2-6 / 1-1 / 1-4
    rows = env.acting_rows()
    # a 4 leaves "two sixes" to the other die (P = 0): liar; a wild six makes 1-1 true and any one-die bid
    # above it: the lowest, 1-2; a 3 leaves 1-4 to the other die (P = 1/3): liar
    assert HonestBot().act(env.obs, rows)[:, 0].tolist() == [LIAR, 1, LIAR]
