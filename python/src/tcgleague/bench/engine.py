"""engine: decisions per second (one core, random-legal) and the game-health figures (natural ends,
game length, first-player advantage, deck balance). `--game leduc|kuhn` times the poker env
instead (numpy, one thread), with its random-play figures checked against OpenSpiel's exact
value of uniform random play when the `[exact]` extra is installed."""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from ..games.emberfront.bots import GREEDY, RANDOM, random_actions
from ..games.emberfront.env import TCGEnv
from ..games.emberfront.match import bot_side, play_match
from ..games.poker.env import PokerEnv
from ..games.poker.rules import GAMES, NUM_ACTIONS, PokerRules
from ..perf import tune_process
from ..rng import stream_seed
from ..scoring import winrate
from .common import print_table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--games", type=int, default=4096, help="games stepped per C call (>= 1024 for the figure)")
    p.add_argument("--seconds", type=float, default=8.0, help="timed random-legal play")
    p.add_argument(
        "--health-games",
        type=int,
        help="random-legal games for the health figures (default 4,000 of Emberfront, 1,000,000 of poker)",
    )
    p.add_argument("--matrix-games", type=int, default=600, help="greedy games per deck pair")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        default="1",
        help="engine thread counts to time, comma-separated (e.g. 1,2,4; Emberfront's engine only)",
    )
    p.add_argument(
        "--game", default="emberfront", choices=["emberfront", *GAMES], help="the game whose engine is timed"
    )


def measure_speed(games: int, seconds: float, seed: int, threads: int = 1) -> float:
    """Random-legal decisions per second through the vectorized step, observation writes
    included; the batched bot acts for the deciding row of every game (masks). This is a timing
    loop over raw env steps (games restart themselves, nothing is scored), not a match: matches
    are emberfront_match.play_match's."""
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


def run_poker(args: argparse.Namespace) -> dict:
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


def run(args: argparse.Namespace) -> dict:
    if args.game != "emberfront":
        return run_poker(args)
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
