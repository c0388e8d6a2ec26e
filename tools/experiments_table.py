"""Prints the experiments table (experiments/README.md) from `bench learn --json` files:
one row per file, in the order given, with the command that produced it.

    python tools/experiments_table.py experiments/results/*.json
    python tools/experiments_table.py --judged experiments/results/judged_*.json

A file judged exactly (Leduc, Kuhn, Liar's Dice: `bench learn --league` on a game OpenSpiel
judges) gives the exploitability row instead: the deliverable's at the end and near 4M steps, the
last learner's alone.

`--judged` prints the robustness table of `bench learn --league` files instead: how exploitable
each final is (its best response's win rate, lower is better), its held-out panel, and the
league's head-to-head against its self-play baseline; a baseline shared by several files
(`--baseline`) is printed once.
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


EXACT_HEADER = (
    "| change | steps | deliverable's exploitability | at 4M steps | the last learner's | minutes | command |\n"
    "|---|---|---|---|---|---|---|"
)


def exact_row(f: dict, name: str) -> str:
    """A side judged exactly: its deliverable's exploitability, its curve's last point at or before
    4M steps, its last learner's (lower is better, 0 a Nash equilibrium). A run that delivers its
    learner has no `learner_*` figures (bench/learn_exact.final_figures): the two are one."""
    early = [p["exploitability"] for p in f["curve"] if p["step"] <= 4_000_000]
    at_4m = f"{early[-1]:.4f}" if early else "-"
    learner = f.get("learner_exploitability", f["exploitability"])
    return (
        f"| {name} | {f['steps'] / 1e6:.1f}M | {f['exploitability']:.4f} | {at_4m} | "
        f"{learner:.4f} | {f['minutes']:.0f} | `{f['command']}` |"
    )


JUDGED_HEADER = (
    "| change | steps | best response's win rate [95% Wilson] (its steps) | held-out panel mean / worst "
    "| league vs self-play [95% Wilson] | command |\n"
    "|---|---|---|---|---|---|"
)


def judged_row(f: dict, label: str, head_to_head: str, command: str) -> str:
    br = f.get("exploit")
    exploit = (
        f"{br['winrate']:.3f} [{br['wilson_low']:.3f}, {br['wilson_high']:.3f}] ({br['steps'] / 1e6:.1f}M)"
        if br
        else "-"
    )
    panel = f"{f['panel']['mean_winrate']:.3f} / {f['panel']['worst_winrate']:.3f}"
    return f"| {label} | {f['steps'] / 1e6:.1f}M | {exploit} | {panel} | {head_to_head} | `{command}` |"


def judged(paths: list[str]) -> int:
    print(JUDGED_HEADER)
    baselines_printed = set()
    for path in paths:
        f = json.loads(Path(path).read_text())
        label = f.get("label") or Path(path).stem
        head = (
            f"{f['winrate_league_vs_selfplay']:.3f} [{f['wilson_low_league_vs_selfplay']:.3f}, "
            f"{f['wilson_high_league_vs_selfplay']:.3f}]"
        )
        selfplay = f["selfplay"]
        if selfplay["checkpoint"] not in baselines_printed:
            baselines_printed.add(selfplay["checkpoint"])
            print(judged_row(selfplay, f"self-play baseline of {label}", "-", f["command"]))
        print(judged_row(f["league"], label, head, f["command"]))
    return 0


def main(paths: list[str]) -> int:
    if paths[:1] == ["--judged"]:
        return judged(paths[1:])
    files = [(Path(path).stem, json.loads(Path(path).read_text())) for path in paths]
    judged_exactly = {bool((f.get("judge") or {}).get("exact")) for _, f in files}
    if len(judged_exactly) > 1:
        print("experiments_table: files judged exactly and files judged by win rate need two tables", file=sys.stderr)
        return 2
    exact = judged_exactly == {True}
    print(EXACT_HEADER if exact else HEADER)
    format_row = exact_row if exact else row
    for stem, f in files:
        if "league" in f:  # a --league run: both of its trainings
            for side in ("league", "selfplay"):
                print(format_row({**f[side], "command": f["command"]}, f"{f.get('label') or stem} ({side})"))
        else:
            print(format_row(f, stem))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
