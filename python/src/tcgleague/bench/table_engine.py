"""The engine bench of a small table game's numpy env (`bench engine --game leduc|kuhn|liars_dice`;
each game's `bench_engine` module hands its env here): decisions per second on one thread, and
seat 0's mean return under random-legal play checked against OpenSpiel's exact value of uniform
random play when the `[exact]` extra is installed.

The env keeps the interface poker's and Liar's Dice's share: `reset()` -> rows, `step(actions)`
-> (rows, rewards, terminals, truncations, episodes with `.games` and `.returns`), one decision
in every game per step, the legal mask in each row's last `num_actions` entries."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from ..rng import stream_seed
from .common import print_table

MakeEnv = Callable[[int, int], object]  # (games, seed) -> the game's numpy env


def random_legal(obs: np.ndarray, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """An action per row, uniform over its legal ones: the largest of uniform draws on legal entries."""
    return np.argmax(rng.random((len(obs), num_actions)) * obs[:, -num_actions:], axis=1)


def decisions_per_second(make_env: MakeEnv, num_actions: int, games: int, seconds: float, seed: int) -> float:
    """Random-legal decisions per second through the env's `step` (numpy, one thread): every
    game has a row to act on every step, so a step is `games` decisions."""
    env = make_env(games, seed)
    obs, rng = env.reset(), np.random.default_rng(seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            obs = env.step(random_legal(obs, num_actions, rng))[0]
        steps += 50
    return steps * games / (time.perf_counter() - start)


def random_returns(make_env: MakeEnv, num_actions: int, games: int, per_game: int, seed: int) -> dict:
    """Seat 0's mean return under random-legal play, over the first `per_game` games of each of
    `games` slots (a count fixed in advance: stopping at a time would leave out the longest games
    still in flight), with its standard error and the decisions per game."""
    env = make_env(games, seed)
    obs, rng = env.reset(), np.random.default_rng(stream_seed(seed, "second_side"))
    done = np.zeros(games, dtype=np.int64)
    returns, decisions = [], 0
    while done.min() < per_game:
        decisions += int((done < per_game).sum())
        obs, _, _, _, episodes = env.step(random_legal(obs, num_actions, rng))
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


def exact_random_value(openspiel_name: str) -> float | None:
    """Seat 0's exact expected return when both seats play uniformly at random (OpenSpiel), or
    None without the optional `[exact]` extra."""
    try:
        import pyspiel  # the [exact] extra: optional
        from open_spiel.python.algorithms.expected_game_score import policy_value
        from open_spiel.python.policy import UniformRandomPolicy
    except ImportError:
        return None
    game = pyspiel.load_game(openspiel_name)
    uniform = UniformRandomPolicy(game)
    return float(policy_value(game.new_initial_state(), [uniform, uniform])[0])


def run_table_bench(
    args: argparse.Namespace, title: str, openspiel_name: str, make_env: MakeEnv, num_actions: int, target: str
) -> dict:
    """The figures of `bench engine --game NAME` for one table game, printed as a table under
    `title` (`target`: the decisions per second asked of it)."""
    figures = {"game": args.game, "games_per_call": args.games}
    figures["decisions_per_sec"] = decisions_per_second(make_env, num_actions, args.games, args.seconds, args.seed)
    per_game = max(1, (args.health_games or 1_000_000) // args.games)
    figures.update(random_returns(make_env, num_actions, args.games, per_game, args.seed))
    figures["seat0_exact_return_random"] = exact = exact_random_value(openspiel_name)
    stderr = figures["seat0_return_stderr"]
    judged = (
        "(no [exact] extra)"
        if exact is None
        else f"{exact:+.4f} ({(figures['seat0_mean_return_random'] - exact) / stderr:+.1f} s.e.)"
    )
    print_table(
        f"{title} env (numpy, one thread)",
        [
            ("decisions/s per thread (random-legal)", f"{figures['decisions_per_sec']:,.0f}", target),
            ("games ended / decisions per game", f"{figures['random_games']:,} / {figures['mean_decisions']:.2f}", ""),
            (
                "seat 0 mean return, random play",
                f"{figures['seat0_mean_return_random']:+.4f} +- {stderr:.4f}",
                f"OpenSpiel exact: {judged}",
            ),
        ],
    )
    return figures
