"""`bench engine --game leduc|kuhn`: the poker env through the table-game engine bench
(bench/table_engine.py: decisions per second on one thread, random play against OpenSpiel's
exact value)."""

from __future__ import annotations

import argparse

from ...bench.table_engine import run_table_bench
from .env import PokerEnv
from .rules import GAMES, NUM_ACTIONS


def run(args: argparse.Namespace) -> dict:
    rules = GAMES[args.game]
    make_env = lambda games, seed: PokerEnv(rules, games, seed)  # noqa: E731
    return run_table_bench(args, f"{rules.name} poker", rules.openspiel_name, make_env, NUM_ACTIONS, ">= 1,000,000")
