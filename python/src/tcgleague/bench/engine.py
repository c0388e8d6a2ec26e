"""engine: the speed of a game's env and its game-health figures, as the game measures them
(`Game.bench_engine`: Emberfront's C engine, games/emberfront/bench_engine.py: decisions per
second, natural ends, game length, first-player advantage, deck balance; Leduc's and Kuhn's
numpy env, games/poker/bench_engine.py: decisions per second, random play against OpenSpiel's
exact value)."""

from __future__ import annotations

import argparse
import importlib

from ..errors import ArgumentError
from ..game import DEFAULT_GAME, GAME_NAMES, game_named


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
    p.add_argument("--game", default=DEFAULT_GAME, choices=GAME_NAMES, help="the game whose engine is timed")


def run(args: argparse.Namespace) -> dict:
    game = game_named(args.game)
    if game.bench_engine is None:
        raise ArgumentError(f"bench engine: {game.name} brings no engine bench")
    return importlib.import_module(game.bench_engine).run(args)
