"""The league's history as an append-only log: `<run>/league/events.jsonl`, one JSON line per
event, each with its kind, the epoch and global step of the league work it came from and the
wall-clock time:

    candidate        a snapshot of the learner joined the pool to be judged (id)
    match            one of its evaluation matches: candidate, opponent, role, games, wins,
                     losses, draws, score, the Wilson interval, and where its replays are
    decision         the promotion gate: candidate, promoted, reason, champion_before, lower_bound
    promotion        a new champion (champion, previous)
    retirement       members that left the pool (members, pool_size)
    exploiter_join   the main exploiter joined as a member (member, winrate, games, vs)
    exploiter_reset  it restarted from the learner (reason: joined | timeout)

Lines are appended whole or not at all (logger.append_line: O_APPEND, a failed write taken
back), and a reader skips a torn last line, so a kill at any moment leaves a readable log. Only
the pool's owner (rank 0) writes it. A resume continues the log of the run it resumes from:
that run's lines up to the checkpoint's step start the new run's log."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..atomic import atomic_write
from ..logger import append_line, open_for_append

EVENTS_FILE = "events.jsonl"


def read_events(path: Path) -> list[dict]:
    """The log's whole lines (a torn or damaged line is skipped); [] when there is none."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class LeagueEvents:
    """Appends the league's events to `path` (None: nowhere, a replica's or a test's manager).
    `at(epoch, step)` dates the events that follow."""

    def __init__(self, path: Path | None):
        self.path = Path(path) if path is not None else None
        self.epoch = self.step = 0

    def at(self, epoch: int, step: int) -> None:
        self.epoch, self.step = int(epoch), int(step)

    def write(self, kind: str, **fields) -> None:
        if self.path is None:
            return
        event = {"kind": kind, "epoch": self.epoch, "step": self.step, "time": round(time.time(), 3), **fields}
        fd = open_for_append(self.path)
        try:
            append_line(fd, self.path, json.dumps(event) + "\n")
        finally:
            os.close(fd)

    def continue_from(self, source: Path, up_to_step: int) -> None:
        """Starts this log with `source`'s events up to `up_to_step` (the resumed checkpoint's):
        what happened after it in the old run happens again here."""
        if self.path is None or Path(source).resolve() == self.path.resolve():
            return
        kept = [e for e in read_events(source) if int(e.get("step", 0)) <= up_to_step]
        text = "".join(json.dumps(e) + "\n" for e in kept)
        atomic_write(self.path, lambda f: f.write(text.encode("utf-8")))
