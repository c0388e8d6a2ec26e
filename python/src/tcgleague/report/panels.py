"""The league's W&B panels, logged after each candidate evaluation (`--wandb`): the payoff
heatmap as an image, the promotion decisions as a table, and every rated id's mu as one line
per member in a single chart. Drawn from the same RunData and figures as the HTML report."""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import RunData
from .figures import payoff
from .html import DECISION_COLUMNS, decision_cells


def league_panels(run: RunData) -> dict[str, Any]:
    import wandb  # late: optional for everything but --wandb, and slow to import

    panels: dict[str, Any] = {}
    heatmap = payoff(run)
    if heatmap is not None:
        heatmap.canvas.draw()  # pixels from the Agg canvas: wandb's own figure path needs pyplot
        pixels = np.asarray(heatmap.canvas.buffer_rgba())[..., :3]
        panels["league/payoff_heatmap"] = wandb.Image(pixels, caption="decayed payoff: row's win rate vs column")
    if run.league is not None:
        rows = [decision_cells(d) for d in run.league.get("decisions", [])]
        panels["league/decisions"] = wandb.Table(columns=list(DECISION_COLUMNS), data=rows)
    members = [k.removeprefix("league/rating_mu/") for k in run.keys("league/rating_mu/")]
    if members:
        steps = [m["global_step"] for m in run.metrics]
        ys = [[m.get(f"league/rating_mu/{who}") for m in run.metrics] for who in members]
        panels["league/ratings"] = wandb.plot.line_series(
            xs=steps, ys=ys, keys=members, title="OpenSkill mu per member", xname="global step"
        )
    return panels
