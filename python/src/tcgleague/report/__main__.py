"""`python -m tcgleague.report RUN_DIR [--out DIR] [--eval FILE ...]`: a run's report.html with
its figures (learning curves, evaluation win rates, and for a league run the payoff heatmap,
ratings, pool timeline and promotion decisions). Works on a run that is still going."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import entry_point
from .data import load_run
from .html import write_report


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
    return p.parse_args(argv)


@entry_point("report")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = load_run(args.run_dir, args.eval)
    path = write_report(run, args.out or args.run_dir / "report")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
