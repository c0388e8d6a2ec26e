"""The engine's multi-threaded step: the games are split over threads inside one C call, and the
results (observations, rewards, done flags, masks, episode records) are bit-identical for any
thread count."""

from __future__ import annotations

import numpy as np
import pytest

from tcgleague.config import ConfigError, load_config
from tcgleague.games.emberfront.bots import greedy_actions, random_actions
from tcgleague.games.emberfront.env import TCGEnv


def play(num_threads: int, steps: int = 1500, games: int = 96, seed: int = 11):
    env = TCGEnv(num_games=games, seed=seed, num_threads=num_threads)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    trace, episodes = [], []
    for _ in range(steps):
        obs, rewards, terminals, truncations, infos = env.step(random_actions(obs, rng))
        trace.append((obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(), env.masks.copy()))
        episodes.extend(infos)
    return trace, episodes, env.engine.get_state()


# 3 and 8 threads (an odd split, more threads than cores) in the slow set; 2 keeps the fast set's
# check that a split over threads plays the same games.
@pytest.mark.parametrize(
    "threads", [2, pytest.param(3, marks=pytest.mark.slow), pytest.param(8, marks=pytest.mark.slow)]
)
def test_any_thread_count_gives_bit_identical_games(threads):
    trace_1, episodes_1, state_1 = play(1)
    trace_n, episodes_n, state_n = play(threads)
    assert len(episodes_1) > 100  # many games ended (and were logged) during the run
    assert episodes_n == episodes_1  # same records, same order
    assert state_n == state_1
    for step, (a, b) in enumerate(zip(trace_1, trace_n, strict=True)):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y), f"step {step} differs"


@pytest.mark.parametrize("threads", [2, 5])
def test_the_greedy_bot_picks_the_same_actions_on_any_thread_count(threads):
    """The greedy search runs over the engine's threads too: for every game, and for a subset of
    rows (as a league asks it), the actions equal one thread's, step after step."""
    envs = [TCGEnv(num_games=64, seed=3, num_threads=n) for n in (1, threads)]
    for env in envs:
        env.reset()
    for step in range(60):
        every = [greedy_actions(env) for env in envs]
        rows = np.flatnonzero(envs[0].masks)[step % 3 :: 3]
        some = [greedy_actions(env, rows) for env in envs]
        assert np.array_equal(every[0], every[1]) and np.array_equal(some[0], some[1]), f"step {step} differs"
        assert np.array_equal(some[0], every[0][rows])
        for env in envs:
            env.step(every[0])


def test_num_threads_is_validated():
    with pytest.raises(ValueError, match="num_threads"):
        TCGEnv(num_games=2, num_threads=0)
    with pytest.raises(ConfigError, match=r"\[env\] num_threads"):
        load_config(None, ["--env.num-threads", "0"])
    assert load_config(None, ["--env.num-threads", "4"]).env.num_threads == 4
