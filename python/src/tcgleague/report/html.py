"""The report: every figure the run has data for as a PNG, and one self-contained `report.html`
(inline CSS, no scripts of its own, images by relative path) that shows them with the league's
promotion decisions and the run's recorded games (the replay viewer, in a sandboxed iframe of
its own). Sections without data are left out and said so in one line."""

from __future__ import annotations

import html
import re
from pathlib import Path

from ..atomic import write_readable
from ..replay.viewer import viewer_html
from .data import DECISION_COLUMNS, RunData, decision_cells
from .figures import LEAGUE, TRAINING, FigureSpec, evaluation_tables

REPORT_FILE = "report.html"
STYLE = """
body { font-family: sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }
img { max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
.missing { color: #777; font-style: italic; }
iframe.replays { width: 100%; height: 920px; border: 1px solid #ccc; }
"""


def save_png(fig, path: Path) -> None:
    write_readable(path, lambda f: fig.savefig(f, format="png"))


def figure_section(spec: FigureSpec, run: RunData, out: Path) -> str:
    fig = spec.draw(run)
    if fig is None:
        return f'<p class="missing">{html.escape(spec.title)}: no data in this run.</p>'
    save_png(fig, out / f"{spec.name}.png")
    return f'<h3>{html.escape(spec.title)}</h3>\n<img src="{spec.name}.png" alt="{html.escape(spec.title)}">'


def decisions_table(run: RunData) -> str:
    """Every promotion decision, with links to the recorded games of its matches (the report is
    written in <run>/report/, so a recording is one folder up)."""
    rows = []
    for d in run.decisions():
        links = " ".join(
            f'<a href="../{html.escape(folder)}/viewer.html">vs {html.escape(who)}</a>'
            for who, folder in run.recordings(d["candidate"])
        )
        cells = "".join(f"<td>{html.escape(str(c))}</td>" for c in decision_cells(d))
        rows.append(f"<tr>{cells}<td>{links}</td></tr>")
    if not rows:
        return '<p class="missing">Promotion decisions: none yet.</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in (*DECISION_COLUMNS, "replays"))
    return f"<h3>Promotion decisions (newest last)</h3>\n<table><tr>{head}</tr>\n" + "\n".join(rows) + "\n</table>"


def replays_section(replays: dict | None) -> str:
    """The run's recorded games in the replay viewer (the whole page inline, as `srcdoc`)."""
    if replays is None:
        return '<p class="missing">Replays: none (evaluate_checkpoint --replays K records games into replays/).</p>'
    page = html.escape(viewer_html(replays), quote=True)
    return (
        f"<p>{len(replays['games'])} recorded games, newest first: click in the viewer, then step with the arrow "
        f'keys.</p>\n<iframe class="replays" title="replay viewer" sandbox="allow-scripts" srcdoc="{page}"></iframe>'
    )


def write_report(run: RunData, out: Path) -> Path:
    """Writes the figures and report.html into `out`; returns the HTML's path."""
    out.mkdir(parents=True, exist_ok=True)
    last = run.metrics[-1] if run.metrics else {}
    parts = [
        f"<h1>{html.escape(run.run_dir.name)}</h1>",
        f"<p>{len(run.metrics)} epochs logged, global step {last.get('global_step', 0):,}.</p>",
        "<h2>Training</h2>",
        *(figure_section(spec, run, out) for spec in TRAINING),
        "<h2>League</h2>",
    ]
    if run.league is None:
        parts.append('<p class="missing">League: not a league run (no league state file).</p>')
    else:
        parts += [figure_section(spec, run, out) for spec in LEAGUE]
        parts.append(decisions_table(run))
    parts.append("<h2>Evaluations</h2>")
    if not run.evaluations:
        parts.append(
            '<p class="missing">Evaluations: none (evaluate_checkpoint --json files in the run directory).</p>'
        )
    for name, report in run.evaluations.items():
        png = f"eval_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
        save_png(evaluation_tables(report), out / png)
        parts.append(f'<h3>{html.escape(name)}</h3>\n<img src="{png}" alt="{html.escape(name)}">')
    parts += ["<h2>Replays</h2>", replays_section(run.replays)]
    page = (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(run.run_dir.name)}</title>"
        f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )
    path = out / REPORT_FILE
    write_readable(path, lambda f: f.write(page.encode("utf-8")))
    return path
