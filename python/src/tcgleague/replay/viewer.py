"""The replay viewer as one file: `viewer.html` (this package's template: inline CSS and JS,
no network, works from file://) with a replay document (record.py's format) embedded as JSON
in its `<script type="application/json" id="replays">` tag.

`write_replays` writes a recording's two files, `replays.json` and `viewer.html`; the run
report and its W&B panel show `combined_replays` of a run directory: the newest recordings
under `<run>/replays/*/` (evaluate_checkpoint --replays puts them there), capped in games and
bytes so a report stays light."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from ..atomic import write_readable
from .record import FORMAT, replay_document

REPLAYS_FILE, VIEWER_FILE = "replays.json", "viewer.html"
RUN_REPLAYS = "replays"  # a run directory's folder of recordings, one sub-folder each
PLACEHOLDER = "__REPLAYS__"  # where the template takes the JSON
REPORT_GAMES = 8  # at most this many games in a run report's viewer
REPORT_BYTES = 2_000_000  # and at most this much JSON


def compact_json(document: dict) -> str:
    return json.dumps(document, separators=(",", ":"))


def viewer_html(document: dict) -> str:
    """The self-contained viewer page showing `document`'s games. Every `<` in the JSON is
    written as its escape, so no text of a game can end the script tag."""
    template = files(__package__).joinpath(VIEWER_FILE).read_text(encoding="utf-8")
    return template.replace(PLACEHOLDER, compact_json(document).replace("<", "\\u003c"))


def write_replays(out: Path, document: dict) -> Path:
    """`out/replays.json` and `out/viewer.html` (atomic writes; `out` made if missing); the
    viewer's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_readable(out / REPLAYS_FILE, lambda f: f.write(compact_json(document).encode("utf-8")))
    viewer = out / VIEWER_FILE
    write_readable(viewer, lambda f: f.write(viewer_html(document).encode("utf-8")))
    return viewer


def read_replays(path: Path) -> dict | None:
    """A replays.json document, or None when the file is not one (damaged, another format)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if (
        not isinstance(document, dict)
        or document.get("format") != FORMAT
        or not isinstance(document.get("games"), list)
    ):
        return None
    return document


def combined_replays(run_dir: Path, max_games: int = REPORT_GAMES, max_bytes: int = REPORT_BYTES) -> dict | None:
    """The games of the run's recordings (`<run>/replays/*/replays.json`), newest recording
    first, each game marked with its recording's folder name, up to `max_games` games and
    `max_bytes` of JSON; None when the run has none."""
    paths = sorted(Path(run_dir).glob(f"{RUN_REPLAYS}/*/{REPLAYS_FILE}"), key=lambda p: p.stat().st_mtime, reverse=True)
    games, size = [], 0
    for path in paths:
        document = read_replays(path)
        for game in (document or {}).get("games", []):
            cost = len(compact_json(game))
            if len(games) == max_games or size + cost > max_bytes:
                break
            games.append({**game, "set": path.parent.name})
            size += cost
    if not games:
        return None
    return replay_document(games, title=f"{Path(run_dir).name}: recorded games (newest first)")
