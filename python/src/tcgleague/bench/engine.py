"""engine: decisions per second (one core, random-legal) and the game-health figures of SPEC §4."""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from ..bots import greedy_actions, random_actions
from ..env import TCGEnv
from ..perf import tune_process
from .common import print_table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--games", type=int, default=4096, help="games stepped per C call (>= 1024 for the figure)")
    p.add_argument("--seconds", type=float, default=8.0, help="timed random-legal play")
    p.add_argument("--health-games", type=int, default=4000, help="random-legal games for the health figures")
    p.add_argument("--matrix-games", type=int, default=600, help="greedy games per deck pair")
    p.add_argument("--seed", type=int, default=0)


def measure_speed(games: int, seconds: float, seed: int) -> float:
    """Random-legal decisions per second through the vectorized step, observation writes
    included; the batched bot acts for the deciding row of every game (masks)."""
    env = TCGEnv(num_games=games, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    tune_process()

    def step() -> None:
        rows = np.flatnonzero(env.masks)
        actions[rows] = random_actions(obs, rng, rows)
        env.step(actions)

    for _ in range(20):  # warm caches and allocator
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(50):
            step()
        steps += 50
    return steps * games / (time.perf_counter() - start)


def play_until(env: TCGEnv, n_episodes: int, choose) -> list[dict]:
    """Steps until n_episodes games ended; `choose(obs)` returns the actions."""
    obs, _ = env.reset()
    episodes: list[dict] = []
    while len(episodes) < n_episodes:
        _, _, _, _, infos = env.step(choose(obs))
        episodes.extend(infos)
    return episodes[:n_episodes]


def random_health(n_games: int, seed: int) -> dict:
    env = TCGEnv(num_games=256, seed=seed)
    rng = np.random.default_rng(seed)
    eps = play_until(env, n_games, lambda obs: random_actions(obs, rng))
    winner = np.array([e["winner"] for e in eps])
    first = np.array([e["first_player"] for e in eps])
    decided = winner != 2
    return {
        "natural_end_rate": float(np.mean([not e["truncated"] for e in eps])),
        "median_decisions": float(np.median([e["decisions"] for e in eps])),
        "first_player_winrate": float(np.mean(winner[decided] == first[decided])),
        "random_games": len(eps),
    }


def deck_matrix(n_games: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Greedy-vs-greedy win rate of deck i against deck j (draws count half), both seat orders."""
    probe = TCGEnv(num_games=1)
    names = probe.pool.deck_names
    rates = np.full((len(names), len(names)), np.nan)
    for i, j in itertools.combinations(range(len(names)), 2):
        pool = {"seat0": [names[i], names[j]], "seat1": [names[i], names[j]]}
        env = TCGEnv(num_games=128, seed=seed + 31 * i + j, deck_pool=pool)
        eps = [e for e in play_until(env, 3 * n_games, lambda obs: greedy_actions(env))
               if e["deck0"] != e["deck1"]][:n_games]
        score = [1.0 if (e["winner"] == 0) == (e["deck0"] == i) else 0.0 for e in eps if e["winner"] != 2]
        score += [0.5 for e in eps if e["winner"] == 2]
        rates[i, j] = float(np.mean(score))
        rates[j, i] = 1.0 - rates[i, j]
    return names, rates


def run(args: argparse.Namespace) -> dict:
    dps = measure_speed(args.games, args.seconds, args.seed)
    health = random_health(args.health_games, args.seed)
    names, rates = deck_matrix(args.matrix_games, args.seed)
    off_diag = rates[~np.eye(len(names), dtype=bool)]
    figures = {"decisions_per_sec": dps, "games_per_call": args.games, **health,
               "deck_matrix": {a: {b: (None if a == b else float(rates[i, j])) for j, b in enumerate(names)}
                               for i, a in enumerate(names)},
               "deck_matrix_min": float(off_diag.min()), "deck_matrix_max": float(off_diag.max()),
               "matrix_games_per_pair": args.matrix_games}
    print_table("Emberfront engine", [
        ("decisions/s (1 core, random-legal)", f"{dps:,.0f}", ">= 500,000"),
        ("natural end rate", f"{health['natural_end_rate']:.3f}", ">= 0.95"),
        ("median decisions / game", f"{health['median_decisions']:.0f}", "40-200"),
        ("first-player win rate (random)", f"{health['first_player_winrate']:.3f}", "0.40-0.60"),
        ("deck matrix min / max (greedy)", f"{off_diag.min():.2f} / {off_diag.max():.2f}", "0.30-0.70"),
    ])
    matrix = Table(title="greedy win rate, row deck vs column deck")
    matrix.add_column("")
    for n in names:
        matrix.add_column(n)
    for i, a in enumerate(names):
        matrix.add_row(a, *["-" if i == j else f"{rates[i, j]:.2f}" for j in range(len(names))])
    Console().print(matrix)
    return figures
