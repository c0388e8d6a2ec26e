"""Continuing an interrupted `bench learn` (`--resume RUN_DIR`): a 16M league pair takes hours
on a small machine, and a restart from zero loses them.

Each run directory given is matched, before anything is trained or written, to the training of
this command whose config its newest checkpoint holds (with --league: the league's or the
self-play baseline's). A checkpoint of another config is refused, naming what differs: a
different --steps would bend the learning-rate schedule mid-run, a different --eval-every the
curve's grid. The continuation resumes the whole run state (checkpoint and resume.py: exact on
the CPU) into a new run directory whose metrics.jsonl starts with the earlier part's rows up to
the checkpoint, so the curve and SPS cover the whole run; `RESUMED_FILE` there records the
minutes before it, so a chain of interruptions adds up too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from ..config import Config
from ..errors import ArgumentError
from ..logger import METRICS_FILE
from ..report.data import read_metrics
from ..resume import config_changes

RESUMED_FILE = "resumed.json"  # in a continuation's run directory: the checkpoint, its step, the minutes before
# Config differences that change nothing a run learns: threads, where files go, the terminal, W&B.
HARMLESS = ("[base] torch_threads", "[base] experiments_dir", "[train] dashboard", "[wandb]")


@dataclass(frozen=True)
class Continuation:
    checkpoint: Path
    step: int  # the checkpoint's global_step
    minutes: float  # training minutes up to it, every earlier part included


def plan_continuations(run_dirs: list[Path], configs: dict[str, Config]) -> dict[str, Continuation]:
    """Which training (tag -> its config) each run directory continues; refuses a directory
    without a checkpoint or metrics, of another config, or a second one for the same training."""
    plan: dict[str, Continuation] = {}
    for run_dir in run_dirs:
        tag, continuation = match(run_dir, configs)
        if tag in plan:
            raise ArgumentError(
                f"--resume {run_dir}: the {tag} training already continues {plan[tag].checkpoint.parent} "
                f"(give one run directory per training: {', '.join(configs)})"
            )
        plan[tag] = continuation
    return plan


def match(run_dir: Path, configs: dict[str, Config]) -> tuple[str, Continuation]:
    """The training whose config `run_dir`'s newest checkpoint was trained with."""
    if not (run_dir / METRICS_FILE).is_file():
        raise ArgumentError(f"--resume {run_dir}: no {METRICS_FILE} in it (expected a run directory of bench learn)")
    differences, loaded = {}, {}
    for tag, cfg in configs.items():
        found = list_checkpoints(run_dir, cfg.base.run_name)
        if not found:
            differences[tag] = [f"no checkpoint model_{cfg.base.run_name}_NNNNNN.pt (the run stopped before its first)"]
            continue
        if found[-1] not in loaded:  # the trainings of a pair share a run_name: read it once
            try:
                loaded[found[-1]] = load_checkpoint(found[-1], run_state=True, log=lambda _: None)
            except CheckpointError as err:
                raise ArgumentError(f"--resume {run_dir}: {err}") from None
        checkpoint = loaded[found[-1]]
        differences[tag] = learning_differences(checkpoint.state.get("config") or {}, cfg)
        if not differences[tag]:
            return tag, Continuation(found[-1], checkpoint.global_step, minutes_upto(run_dir, checkpoint.global_step))
    said = "; ".join(f"{tag}: {', '.join(d[:4])}{' ...' if len(d) > 4 else ''}" for tag, d in differences.items())
    raise ArgumentError(
        f"--resume {run_dir}: it continues none of this command's trainings ({said}); resume with the "
        "command that started it (same config, overrides, --steps, --eval-every, --curve-episodes)"
    )


def learning_differences(stored: dict, cfg: Config) -> list[str]:
    """How a checkpoint's config differs from `cfg` in what the run learns: not in `HARMLESS`
    keys, nor in the league's keys when neither has a league (self-play never reads them)."""
    unread = ("[league] ",) if not cfg.league.enable and not (stored.get("league") or {}).get("enable") else ()
    return [c for c in config_changes(stored, cfg.to_dict()) if not c.startswith(HARMLESS + unread)]


def minutes_upto(run_dir: Path, step: int) -> float:
    """Training minutes of `run_dir`'s run up to `step`: those before it (when it is itself a
    continuation) plus its own clock (perf/wall_minutes starts at 0 in each part)."""
    before, own_from = 0.0, -1
    if (run_dir / RESUMED_FILE).is_file():
        record = json.loads((run_dir / RESUMED_FILE).read_text(encoding="utf-8"))
        before, own_from = float(record["minutes"]), int(record["step"])
    own = [
        m["perf/wall_minutes"]
        for m in read_metrics(run_dir / METRICS_FILE)
        if own_from < m["global_step"] <= step and "perf/wall_minutes" in m
    ]
    return before + (own[-1] if own else 0.0)


def begin(run_dir: Path, continuation: Continuation) -> None:
    """Starts `run_dir`'s metrics.jsonl with the earlier part's rows up to the checkpoint (the
    logger appends after them) and records what it continues."""
    earlier = read_metrics(continuation.checkpoint.parent / METRICS_FILE)
    rows = [m for m in earlier if m["global_step"] <= continuation.step]
    with open(run_dir / METRICS_FILE, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(m) + "\n" for m in rows)
    record = {"checkpoint": str(continuation.checkpoint), "step": continuation.step, "minutes": continuation.minutes}
    (run_dir / RESUMED_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
