"""What a report is drawn from: a run directory's `metrics.jsonl`, its league state file,
any `evaluate_checkpoint --json` reports and its recorded games (`replays/`). Everything is read as it is on disk now, so a run
that is still going (a half-written last metrics line) reports what it has so far."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArgumentError
from ..fingerprint import checkpoint_game
from ..game import game_named
from ..league.events import EVENTS_FILE, read_events
from ..league.manager import STATE_FILE
from ..logger import METRICS_FILE
from ..replay.viewer import combined_replays

EVALUATION_KEYS = ("opponent", "per_seat", "per_deck", "winrate")  # what marks an evaluate_checkpoint report


@dataclass
class RunData:
    run_dir: Path
    metrics: list[dict]  # one dict per epoch, in order
    league: dict | None  # the league state file, None for a self-play run
    evaluations: dict[str, dict] = field(default_factory=dict)  # file stem -> evaluate_checkpoint report
    replays: dict | None = None  # the run's newest recorded games, capped (replay.viewer.combined_replays)
    events: list[dict] = field(default_factory=list)  # league/events.jsonl, the league's history
    exploits: dict[str, list[dict]] = field(default_factory=dict)  # file stem -> a best response's curve
    bots: tuple[str, ...] = ()  # the run's game's bots (its checkpoints say which game)

    def decisions(self) -> list[dict]:
        """The promotion decisions, oldest first: the event log's (every one), else the state
        file's (its newest; runs from before the log)."""
        logged = [e for e in self.events if e.get("kind") == "decision"]
        return logged or list((self.league or {}).get("decisions", []))

    def recordings(self, candidate: str) -> list[tuple[str, str]]:
        """(opponent, recording folder relative to the run) of the candidate's recorded matches."""
        matches = [e for e in self.events if e.get("kind") == "match" and e.get("candidate") == candidate]
        return [(e["opponent"], e["replays"]) for e in matches if e.get("replays")]

    def series(self, *keys: str) -> tuple[list[float], ...]:
        """(global steps, values of each key) over the epochs that have every one of `keys`
        (non-null), so the lists always line up."""
        rows = [m for m in self.metrics if all(m.get(k) is not None for k in keys)]
        steps = [float(m["global_step"]) for m in rows]
        return (steps, *([float(m[k]) for m in rows] for k in keys))

    def keys(self, prefix: str) -> list[str]:
        """Every metric name starting with `prefix`, in order of first appearance."""
        seen: dict[str, None] = {}
        for m in self.metrics:
            seen.update((k, None) for k in m if k.startswith(prefix))
        return list(seen)


def read_metrics(path: Path) -> list[dict]:
    """metrics.jsonl lines; a line that does not parse (the one being written) is skipped."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "global_step" in row:
            out.append(row)
    return out


def read_league(run_dir: Path) -> dict | None:
    """The league state (or its backup when the main file is mid-write or damaged); None without one."""
    for path in (run_dir / "league" / STATE_FILE, run_dir / "league" / f"{STATE_FILE}.bak"):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return None


def read_evaluation(path: Path) -> dict | None:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return report if isinstance(report, dict) and all(k in report for k in EVALUATION_KEYS) else None


def read_exploit_curve(path: Path) -> list[dict] | None:
    """The curve of a `tcgleague.exploit` report (`--json`) or run file (`exploit.json`): its
    points (step, win rate, Wilson interval), or None when the file is not one."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    curve = report.get("curve") if isinstance(report, dict) else None
    keys = ("step", "winrate", "wilson_low", "wilson_high")
    if (
        not isinstance(curve, list)
        or not curve
        or not all(isinstance(p, dict) and all(k in p for k in keys) for p in curve)
    ):
        return None
    return curve


def load_run(run_dir: Path, evaluation_files: list[Path] = ()) -> RunData:
    """The run's data. Evaluation reports are the given files plus any in the run directory
    (and its `evaluations/`); checkpoint sidecars and other JSON files are not reports and are
    passed over."""
    run_dir = Path(run_dir)
    metrics_path = run_dir / METRICS_FILE
    if not metrics_path.is_file():
        raise ArgumentError(f"{run_dir}: not a run directory (no {METRICS_FILE} in it)")
    evaluations = {}  # named by the path relative to the run directory (or as given): names never collide
    for path in [*sorted(run_dir.glob("*.json")), *sorted(run_dir.glob("evaluations/*.json"))]:
        report = read_evaluation(path)
        if report is not None:
            evaluations[str(path.relative_to(run_dir).with_suffix(""))] = report
    for path in evaluation_files:
        report = read_evaluation(Path(path))
        if report is None:
            raise ArgumentError(f"--eval {path}: not an evaluate_checkpoint --json report")
        evaluations[str(Path(path).with_suffix(""))] = report
    exploits = {}  # best responses' reports in the run directory: how exploitable its checkpoints are
    for path in sorted(run_dir.glob("*.json")):
        curve = read_exploit_curve(path)
        if curve is not None:
            exploits[path.stem] = curve
    league, events = read_league(run_dir), read_events(run_dir / "league" / EVENTS_FILE)
    replays = combined_replays(run_dir)
    bots = game_named(run_game(run_dir)).runner.bots
    return RunData(run_dir, read_metrics(metrics_path), league, evaluations, replays, events, exploits, bots)


def run_game(run_dir: Path) -> str:
    """The game a run plays: its newest checkpoint sidecar's fingerprint says (none: Emberfront)."""
    for path in sorted(run_dir.glob("model_*.json"), reverse=True):
        try:
            sidecar = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(sidecar, dict) and isinstance(sidecar.get("fingerprint"), dict):
            return checkpoint_game(sidecar)
    return checkpoint_game({})


# ---- the league's promotion decisions, as the HTML table and the W&B table show them -------------
DECISION_COLUMNS = ("candidate", "decision", "champion before", "vs champion W-L-D", "vs baselines W-L-D", "why")


def decision_cells(d: dict) -> list[str]:
    """One promotion decision (promotion.Decision, as the league state file holds it) as table cells."""
    baselines = ", ".join(f"{bot} {w}-{lost}-{dr}" for bot, (w, lost, dr) in (d.get("vs_baselines") or {}).items())
    vs_champion = "-".join(str(x) for x in d["vs_champion"]) if d.get("vs_champion") else ""
    verdict = "promoted" if d["promoted"] else "rejected"
    return [d["candidate"], verdict, d.get("champion_before") or "", vs_champion, baselines, d["reason"]]
