"""A decision-time search as the tools offer it (`--lookahead [W]` on evaluate_checkpoint, play,
replay, exploit's target, bench learn's final evaluation): the value weight W a search balances
its policy's prior against its values with, checked the same everywhere. A game that can search
brings the search itself (`Game.search`: Emberfront's turn-ahead lookahead,
games/emberfront/lookahead.py); the tools refuse `--lookahead` for a game without one."""

from __future__ import annotations

import argparse
import math

DEFAULT_VALUE_WEIGHT = 100.0  # chosen against the policy itself at 1.6M-4.1M steps (experiments/README.md)


def is_value_weight(value_weight) -> bool:
    """A finite number > 0 (the command lines' --lookahead W and LookaheadActor accept only these)."""
    number = isinstance(value_weight, (int, float)) and not isinstance(value_weight, bool)
    return number and math.isfinite(value_weight) and value_weight > 0


def add_lookahead_argument(p: argparse.ArgumentParser, who: str) -> None:
    """`--lookahead [W]` for a command line (evaluate_checkpoint, play): `who` searches a turn
    ahead at value weight W; a W that is not a finite number > 0 is refused by argparse."""

    def value_weight(text: str) -> float:
        try:
            return check_value_weight(float(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--lookahead W must be a finite number > 0, got {text}") from None

    p.add_argument(
        "--lookahead",
        type=value_weight,
        nargs="?",
        const=DEFAULT_VALUE_WEIGHT,
        metavar="W",
        help=f"{who} searches a turn ahead before each move, value weight W (default {DEFAULT_VALUE_WEIGHT:g}; "
        "search.py)",
    )


def check_value_weight(value_weight) -> float:
    if not is_value_weight(value_weight):
        raise ValueError(f"lookahead value_weight must be a finite number > 0, got {value_weight!r}")
    return float(value_weight)
