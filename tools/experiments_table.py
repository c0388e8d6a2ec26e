"""Prints the experiments table (experiments/README.md) from `bench learn --json` files:
one row per file, in the order given, with the command that produced it.

    python tools/experiments_table.py experiments/results/*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = (
    "| change | steps | vs greedy [95% Wilson] | vs random | with lookahead: vs greedy / vs random | SPS "
    "| curve vs greedy (per 1M) | command |\n"
    "|---|---|---|---|---|---|---|---|"
)


def searching(f: dict) -> str:
    """The final checkpoint's figures with decision-time lookahead (rows run before it: -)."""
    if not f.get("lookahead"):
        return "-"
    greedy = (
        f"{f['winrate_vs_greedy_lookahead']:.3f} [{f['wilson_low_vs_greedy_lookahead']:.3f}, "
        f"{f['wilson_high_vs_greedy_lookahead']:.3f}]"
    )
    return f"{greedy} / {f['winrate_vs_random_lookahead']:.3f} (weight {f['lookahead']:g})"


def row(f: dict, name: str) -> str:
    greedy = f"{f['winrate_vs_greedy']:.3f} [{f['wilson_low_vs_greedy']:.3f}, {f['wilson_high_vs_greedy']:.3f}]"
    curve = " ".join(f"{p['winrate_vs_greedy']:.2f}" for p in f["curve"]) or "-"
    label = f.get("label") or name
    return (
        f"| {label} | {f['steps'] / 1e6:.1f}M | {greedy} | {f['winrate_vs_random']:.3f} | {searching(f)} | {f['sps']:,.0f} "
        f"| {curve} | `{f['command']}` |"
    )


def main(paths: list[str]) -> int:
    print(HEADER)
    for path in paths:
        f = json.loads(Path(path).read_text())
        if "league" in f:  # a --league run: both of its trainings
            for side in ("league", "selfplay"):
                print(row({**f[side], "command": f["command"]}, f"{f.get('label') or Path(path).stem} ({side})"))
        else:
            print(row(f, Path(path).stem))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
