"""`python -m tcgleague.report RUN_DIR [--out DIR] [--eval FILE ...] [--wandb]`: a run's report.html
with its figures (learning curves, evaluation win rates, and for a league run the payoff
heatmap, ratings, pool timeline and promotion decisions) and its recorded games in the replay
viewer. Works on a run that is still going. `--wandb` also logs the replay viewer to W&B."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import entry_point
from .data import load_run
from .html import write_report
from .panels import log_replays


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tcgleague.report", description=__doc__)
    p.add_argument("run_dir", type=Path, help="a run directory (experiments/<run_name>_<id>)")
    p.add_argument("--out", type=Path, help="where to write report.html and its PNGs (default: RUN_DIR/report)")
    p.add_argument(
        "--eval",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="an evaluate_checkpoint --json report to include (repeatable; those in RUN_DIR are found by themselves)",
    )
    p.add_argument(
        "--wandb",
        action="store_true",
        help="also log the run's recorded games (the replay viewer) to W&B as an HTML panel (offline without an "
        "API key; files under RUN_DIR/wandb/)",
    )
    return p.parse_args(argv)


@entry_point("report")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = load_run(args.run_dir, args.eval)
    path = write_report(run, args.out or args.run_dir / "report")
    print(f"wrote {path}")
    if args.wandb:
        if run.replays is None:
            print("--wandb: no recorded games in this run (evaluate_checkpoint --replays K records some)")
        else:
            print(f"logged the replay viewer to W&B: {log_replays(run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
