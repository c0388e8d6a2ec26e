"""The single-agent env the peer benchmark trains on: one seat against a bot, actions as
indices into the legal list with a mask, the seat alternating, +1 / -1 at the end."""

from __future__ import annotations

import numpy as np
import pytest

from tcgleague.games.emberfront.layout import COUNT, MAX_LEGAL
from tcgleague.games.emberfront.peers.versus_bot import VersusBot


def play_episode(env: VersusBot, rng: np.random.Generator) -> tuple[float, int, int]:
    """(total reward, the agent's seat, decisions) with uniformly random legal indices."""
    obs, _ = env.reset()
    seat, total, decisions = env.seat, 0.0, 0
    while True:
        mask = env.action_masks()
        assert mask.sum() == int(obs[COUNT]) >= 1 and mask[: mask.sum()].all()
        obs, reward, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        total, decisions = total + reward, decisions + 1
        if terminated or truncated:
            return total, seat, decisions


def test_random_indices_play_whole_games_against_greedy_from_both_seats():
    env = VersusBot(seed=3)
    assert env.action_space.n == MAX_LEGAL and env.observation_space.contains(env.reset(seed=3)[0])
    rng = np.random.default_rng(0)
    results = [play_episode(env, rng) for _ in range(12)]
    assert {seat for _, seat, _ in results} == {0, 1}, "the agent's seat alternates"
    assert all(total in (-1.0, 0.0, 1.0) for total, _, _ in results), results
    assert all(decisions > 3 for _, _, decisions in results)
    assert sum(total for total, _, _ in results) < 0, "greedy beats random choices"


def test_an_index_past_the_legal_count_is_refused():
    env = VersusBot(seed=1, bot="random")
    obs, _ = env.reset(seed=1)
    with pytest.raises(ValueError, match="not legal"):
        env.step(int(obs[COUNT]))


def test_the_same_seed_replays_the_same_games():
    a, b = VersusBot(seed=7), VersusBot(seed=7)
    runs = [[play_episode(env, np.random.default_rng(1)) for _ in range(3)] for env in (a, b)]
    assert runs[0] == runs[1]
