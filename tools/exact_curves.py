"""Draws judged runs' exact exploitability curves side by side, with reference levels: the README's
figure of a game's runs beside uniform play and a solver (docs/liars_dice_exploitability.png).

    python tools/exact_curves.py RUN_DIR_1="seed 1" RUN_DIR_2="seed 2" --out docs/liars_dice_exploitability.png \
        --title "Liar's Dice" --reference "uniform play=0.781" --reference "CFR+, 100 iterations=0.0049"

Each run (`RUN_DIR=LABEL`, or the directory's name) draws its deliverable (solid: a league's Nash
mixture where it logs one, `eval/mixture_exploitability`, else the average policy,
`eval/average_exploitability`), and its learner (`eval/exploitability`, dashed) in one colour;
the y axis is logarithmic, so a tenth of uniform play is as far below it as uniform play is
above 7.8.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from matplotlib.figure import Figure

from tcgleague.average import AVERAGE_FILE
from tcgleague.bench.learn_exact import DELIVERED_CURVES, DELIVERED_NAMES
from tcgleague.report.data import load_run
from tcgleague.report.figures import new_figure, steps_axis


def reference(text: str) -> tuple[str, float]:
    label, _, value = text.rpartition("=")
    try:
        return label, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=VALUE, e.g. 'uniform play=0.781'") from None


def labelled(text: str) -> tuple[Path, str]:
    path, _, label = text.partition("=")
    return Path(path), label or Path(path).name


def delivered(run) -> str:
    """The file a run delivers, as DELIVERED_CURVES names it: its Nash mixture where it logs one."""
    return next((name for name, key in DELIVERED_CURVES.items() if run.series(key)[0]), AVERAGE_FILE)


def draw(runs: list[tuple[Path, str]], references: list[tuple[str, float]], title: str) -> Figure:
    """The figure: each run's deliverable and learner over steps, and each reference level."""
    fig, axes = new_figure()
    ax = axes[0, 0]
    for run_dir, label in runs:
        run = load_run(run_dir)
        name = delivered(run)
        steps, values = run.series(DELIVERED_CURVES[name])
        (line,) = ax.plot(steps, values, marker="o", ms=3, label=f"{label}: {DELIVERED_NAMES[name]}")
        steps, values = run.series("eval/exploitability")
        ax.plot(steps, values, ls="--", lw=0.9, color=line.get_color(), label=f"{label}: learner")
    for k, (label, value) in enumerate(references):
        ax.axhline(value, color="grey", ls=(0, (1, 1 + k)), lw=1)
        where = {"xycoords": ("axes fraction", "data"), "textcoords": "offset points", "xytext": (4, 3)}
        ax.annotate(f"{label} {value:g}", (0, value), fontsize=8, color="dimgrey", **where)
    ax.set_yscale("log")
    ax.set_ylabel("exploitability (OpenSpiel's; 0 = Nash)")
    steps_axis(ax, title)
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=labelled, help="RUN_DIR[=LABEL]: run directories of one judged game")
    p.add_argument("--out", type=Path, required=True, help="the PNG to write")
    p.add_argument("--title", default="exact exploitability")
    p.add_argument("--reference", type=reference, action="append", default=[], help="LABEL=VALUE: a level drawn")
    args = p.parse_args(argv)
    fig = draw(args.runs, args.reference, args.title)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
