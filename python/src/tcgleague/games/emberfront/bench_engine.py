"""`bench engine` for Emberfront: decisions per second of the C engine (one core, random-legal;
and at each of `--threads`) and the game-health figures (natural ends, game length, first-player
advantage, the deck matrix of greedy against greedy)."""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from ...bench.common import print_table
from ...perf import tune_process
from ...rng import stream_seed
from ...scoring import winrate
from .bots import GREEDY, RANDOM, random_actions
from .env import TCGEnv
from .match import bot_side, play_match


def measure_speed(games: int, seconds: float, seed: int, threads: int = 1) -> float:
    """Random-legal decisions per second through the vectorized step, observation writes
    included; the batched bot acts for the deciding row of every game (masks). This is a timing
    loop over raw env steps (games restart themselves, nothing is scored), not a match: matches
    are match.play_match's."""
    env = TCGEnv(num_games=games, seed=seed, num_threads=threads)
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


def random_health(n_games: int, seed: int) -> dict:
    """Random-legal play (random vs random through the game runner): natural ends, game length
    and the first player's advantage."""
    report = play_match(bot_side(RANDOM, seed), bot_side(RANDOM, stream_seed(seed, "second_side")), n_games, seed)
    games = report.records
    decided = [g for g in games if g.result != 0]
    first_won = [(g.result > 0) == g.went_first for g in decided]
    return {
        "natural_end_rate": float(np.mean([not g.truncated for g in games])),
        "median_decisions": float(np.median([g.decisions for g in games])),
        "first_player_winrate": float(np.mean(first_won)),
        "random_games": len(games),
    }


def deck_matrix(n_games: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Greedy-vs-greedy win rate of deck i against deck j (scoring.winrate), each deal played
    with both seat orders (the runner's duplicate format)."""
    names = TCGEnv(num_games=1).pool.deck_names
    rates = np.full((len(names), len(names)), np.nan)
    for i, j in itertools.combinations(range(len(names)), 2):
        report = play_match(bot_side(GREEDY), bot_side(GREEDY), n_games, seed + 31 * i + j, parallel=128, decks=(i, j))
        # deck i won when the side holding it won: the learner with deck i, or the opponent otherwise
        i_won = sum((g.result > 0) == (g.deck == names[i]) for g in report.records if g.result != 0)
        draws = sum(g.result == 0 for g in report.records)
        rates[i, j] = winrate(i_won, report.games - draws - i_won, draws)
        rates[j, i] = 1.0 - rates[i, j]
    return names, rates


def thread_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise SystemExit(
            f"bench engine: --threads takes thread counts >= 1, comma-separated (e.g. 1,2,4), got {text!r}"
        )
    return counts


def run(args: argparse.Namespace) -> dict:
    counts = thread_counts(args.threads)
    by_threads = {str(n): measure_speed(args.games, args.seconds, args.seed, n) for n in counts}
    dps = by_threads[str(counts[0])]
    health = random_health(args.health_games or 4000, args.seed)
    names, rates = deck_matrix(args.matrix_games, args.seed)
    off_diag = rates[~np.eye(len(names), dtype=bool)]
    figures = {
        "decisions_per_sec": dps,
        "decisions_per_sec_by_threads": by_threads,
        "games_per_call": args.games,
        **health,
        "deck_matrix": {
            a: {b: (None if a == b else float(rates[i, j])) for j, b in enumerate(names)} for i, a in enumerate(names)
        },
        "deck_matrix_min": float(off_diag.min()),
        "deck_matrix_max": float(off_diag.max()),
        "matrix_games_per_pair": args.matrix_games,
    }
    print_table(
        "Emberfront engine",
        [
            *[
                (
                    f"decisions/s ({n} engine thread{'s' * (n > 1)}, random-legal)",
                    f"{v:,.0f}",
                    ">= 500,000" if n == 1 else f"{v / by_threads[str(counts[0])]:.2f}x {counts[0]} thread(s)",
                )
                for n, v in zip(counts, by_threads.values(), strict=True)
            ],
            ("natural end rate", f"{health['natural_end_rate']:.3f}", ">= 0.95"),
            ("median decisions / game", f"{health['median_decisions']:.0f}", "40-200"),
            ("first-player win rate (random)", f"{health['first_player_winrate']:.3f}", "0.40-0.60"),
            ("deck matrix min / max (greedy)", f"{off_diag.min():.2f} / {off_diag.max():.2f}", "0.30-0.70"),
        ],
    )
    matrix = Table(title="greedy win rate, row deck vs column deck")
    matrix.add_column("")
    for n in names:
        matrix.add_column(n)
    for i, a in enumerate(names):
        matrix.add_row(a, *["-" if i == j else f"{rates[i, j]:.2f}" for j in range(len(names))])
    Console().print(matrix)
    return figures
