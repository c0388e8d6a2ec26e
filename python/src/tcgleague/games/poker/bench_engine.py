"""`bench engine --game leduc|kuhn`: decisions per second of the poker env (numpy, one thread),
with its random-play figures checked against OpenSpiel's exact value of uniform random play when
the `[exact]` extra is installed."""

from __future__ import annotations

import argparse
import time

import numpy as np

from ...bench.common import print_table
from ...rng import stream_seed
from .env import PokerEnv
from .rules import GAMES, NUM_ACTIONS, PokerRules


def random_legal(rules: PokerRules, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An action per row, uniform over its legal ones: the largest of uniform draws on legal entries."""
    legal = obs[:, rules.legal_offset : rules.legal_offset + NUM_ACTIONS]
    return np.argmax(rng.random(legal.shape) * legal, axis=1)


def poker_speed(rules: PokerRules, games: int, seconds: float, seed: int) -> float:
    """Random-legal decisions per second through `PokerEnv.step` (numpy, one thread): every game
    has a row to act on every step, so a step is `games` decisions."""
    env = PokerEnv(rules, games, seed)
    obs, rng = env.reset(), np.random.default_rng(seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            obs = env.step(random_legal(rules, obs, rng))[0]
        steps += 50
    return steps * games / (time.perf_counter() - start)


def poker_random_returns(rules: PokerRules, games: int, per_game: int, seed: int) -> dict:
    """Seat 0's mean return under random-legal play, over the first `per_game` games of each of
    `games` slots (a count fixed in advance: stopping at a time would leave out the longest games
    still in flight), with its standard error and the decisions per game."""
    env = PokerEnv(rules, games, seed)
    obs, rng = env.reset(), np.random.default_rng(stream_seed(seed, "second_side"))
    done = np.zeros(games, dtype=np.int64)
    returns, decisions = [], 0
    while done.min() < per_game:
        counted = done < per_game
        decisions += int(counted.sum())
        obs, _, _, _, episodes = env.step(random_legal(rules, obs, rng))
        kept = done[episodes.games] < per_game
        returns.append(episodes.returns[kept, 0])
        done[episodes.games] += 1
    seat0 = np.concatenate(returns).astype(np.float64)
    return {
        "random_games": len(seat0),
        "mean_decisions": decisions / len(seat0),
        "seat0_mean_return_random": float(seat0.mean()),
        "seat0_return_stderr": float(seat0.std() / np.sqrt(len(seat0))),
    }


def exact_random_value(rules: PokerRules) -> float | None:
    """Seat 0's exact expected return when both seats play uniformly at random (OpenSpiel), or
    None without the optional `[exact]` extra."""
    try:
        import pyspiel  # the [exact] extra: optional
        from open_spiel.python.algorithms.expected_game_score import policy_value
        from open_spiel.python.policy import UniformRandomPolicy
    except ImportError:
        return None
    game = pyspiel.load_game(rules.openspiel_name)
    uniform = UniformRandomPolicy(game)
    return float(policy_value(game.new_initial_state(), [uniform, uniform])[0])


def run(args: argparse.Namespace) -> dict:
    rules = GAMES[args.game]
    figures = {"game": rules.name, "games_per_call": args.games}
    figures["decisions_per_sec"] = poker_speed(rules, args.games, args.seconds, args.seed)
    figures.update(
        poker_random_returns(rules, args.games, max(1, (args.health_games or 1_000_000) // args.games), args.seed)
    )
    figures["seat0_exact_return_random"] = exact_random_value(rules)
    exact, stderr = figures["seat0_exact_return_random"], figures["seat0_return_stderr"]
    judged = (
        "(no [exact] extra)"
        if exact is None
        else f"{exact:+.4f} ({(figures['seat0_mean_return_random'] - exact) / stderr:+.1f} s.e.)"
    )
    print_table(
        f"{rules.name} poker env (numpy, one thread)",
        [
            ("decisions/s per thread (random-legal)", f"{figures['decisions_per_sec']:,.0f}", ">= 1,000,000"),
            ("games ended / decisions per game", f"{figures['random_games']:,} / {figures['mean_decisions']:.2f}", ""),
            (
                "seat 0 mean return, random play (chips)",
                f"{figures['seat0_mean_return_random']:+.4f} +- {stderr:.4f}",
                f"OpenSpiel exact: {judged}",
            ),
        ],
    )
    return figures
