"""`bench engine --game liars_dice`: the Liar's Dice env through the table-game engine bench
(bench/table_engine.py: decisions per second on one thread, random play against OpenSpiel's
exact value)."""

from __future__ import annotations

import argparse

from ...bench.table_engine import run_table_bench
from .env import LiarsDiceEnv
from .rules import NUM_ACTIONS, OPENSPIEL_NAME


def run(args: argparse.Namespace) -> dict:
    return run_table_bench(
        args, "Liar's Dice", OPENSPIEL_NAME, lambda games, seed: LiarsDiceEnv(games, seed), NUM_ACTIONS, ">= 500,000"
    )
