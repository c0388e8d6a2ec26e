"""W&B panels, drawn from the same data and figures as the HTML report: the league's, logged
after each candidate evaluation of a `--wandb` run (the payoff heatmap as an image, the
promotion decisions as a table, every rated id's mu as one line per member in a single chart,
the newest recorded promotion matches in the replay viewer as an HTML panel),
an `evaluate_checkpoint --wandb` report (its heatmaps and result tables, as a run of its own),
and `report --wandb`: the run's recorded games in the replay viewer, as an HTML panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..logger import resolve_wandb_mode
from ..replay.viewer import viewer_html
from .data import DECISION_COLUMNS, RunData, decision_cells
from .figures import evaluation_tables, payoff

RATING_POINTS = 200


def pixels(fig) -> np.ndarray:
    """RGB pixels from the figure's Agg canvas (wandb's own figure path needs pyplot)."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3]


def league_panels(run: RunData) -> dict[str, Any]:
    import wandb  # late: optional for everything but --wandb, and slow to import

    panels: dict[str, Any] = {}
    heatmap = payoff(run)
    if heatmap is not None:
        caption = "decayed payoff: row's win rate vs column"
        panels["league/payoff_heatmap"] = wandb.Image(pixels(heatmap), caption=caption)
    if run.league is not None:
        rows = [decision_cells(d) for d in run.decisions()]
        panels["league/decisions"] = wandb.Table(columns=list(DECISION_COLUMNS), data=rows)
    if run.replays is not None:
        panels["league/replays"] = wandb.Html(viewer_html(run.replays), inject=False)
    members = [k.removeprefix("league/rating_mu/") for k in run.keys("league/rating_mu/")]
    if members:  # each id over the epochs it was rated, at most RATING_POINTS points (W&B caps a table's rows)
        series = [run.series(f"league/rating_mu/{who}") for who in members]
        thin = [slice(None, None, max(1, -(-len(steps) // RATING_POINTS))) for steps, _ in series]
        panels["league/ratings"] = wandb.plot.line_series(
            xs=[steps[t] for (steps, _), t in zip(series, thin)],
            ys=[mu[t] for (_, mu), t in zip(series, thin)],
            keys=members,
            title="OpenSkill mu per member",
            xname="global step",
        )
    return panels


RESULT_COLUMNS = ("group", "games", "wins", "losses", "draws", "winrate", "wilson_low", "wilson_high")


def log_evaluation(report: dict, directory: Path, project: str = "tcgleague") -> str:
    """An evaluate_checkpoint report as a W&B run of its own (job type "evaluation"; offline
    without an API key): the win rate and its interval as summary figures, the deck and seat
    heatmaps as an image, every breakdown as a table. Returns the run's local directory."""
    import wandb  # late: optional, and slow to import

    name = f"eval-{Path(str(report['checkpoint'])).stem}-vs-{Path(str(report['opponent'])).stem}"
    run = wandb.init(
        project=project, job_type="evaluation", name=name, dir=str(directory), mode=resolve_wandb_mode("auto")
    )
    try:
        rows = [
            [f"{section} {group}", *(r[c] for c in RESULT_COLUMNS[1:])]
            for section in ("per_deck", "per_seat", "per_turn_order")
            for group, r in report.get(section, {}).items()
        ]
        rows += [
            [f"deck {deck} vs {opp}", *(r[c] for c in RESULT_COLUMNS[1:])]
            for deck, row in (report.get("per_deck_pair") or {}).items()
            for opp, r in row.items()
        ]
        run.log(
            {
                "eval/tables": wandb.Image(pixels(evaluation_tables(report))),
                "eval/results": wandb.Table(columns=list(RESULT_COLUMNS), data=rows),
            }
        )
        for key in ("winrate", "wilson_low", "wilson_high", "episodes", "mean_length", "entropy", "noop_rate"):
            run.summary[f"eval/{key}"] = report[key]
        return str(run.dir)
    finally:
        run.finish()


def log_replays(run: RunData, project: str = "tcgleague") -> str:
    """The run's recorded games (`run.replays`) as a W&B run of its own (job type "report",
    files under the run directory's wandb/, offline without an API key) holding one HTML
    panel, `replays/viewer`: the very page the report embeds (W&B's own styles left out, so it
    looks the same). Returns the run's local directory."""
    import wandb  # late: optional, and slow to import

    name = f"replays-{run.run_dir.name}"
    wb = wandb.init(
        project=project, job_type="report", name=name, dir=str(run.run_dir), mode=resolve_wandb_mode("auto")
    )
    try:
        wb.log({"replays/viewer": wandb.Html(viewer_html(run.replays), inject=False)})
        return str(wb.dir)
    finally:
        wb.finish()
