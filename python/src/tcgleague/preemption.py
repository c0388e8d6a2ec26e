"""Preemption: SIGTERM (what SLURM, Kubernetes and torchrun send before they kill) and SIGUSR1
(what SLURM sends `--signal=B:USR1@<seconds>` before the time limit) ask the run to stop.

The first signal is noted and the epoch in progress finishes: the trainer asks `requested()`
after each epoch, every rank agrees through the epoch's metrics exchange (`dist.reduce_epoch`,
so all stop at the same epoch), writes the checkpoint of that epoch, flushes metrics.jsonl and
W&B, and the CLI exits `errors.PREEMPTED_EXIT`. Finishing the epoch, not abandoning its
rollout, is what makes the stop exact: a checkpoint exists only between epochs (the rollout
buffer is not saved), so abandoning would lose every epoch since the last periodic checkpoint,
while an epoch is seconds (about 9 s on 2 CPU cores with the default config, far less on a GPU)
and a grace period is tens of seconds to minutes. The periodic evaluation is skipped at that
epoch for the same reason.

A second signal stops at once: `SystemExit(128 + signal)`, no checkpoint. An atomic write in
flight removes its temp file on the way out (atomic.py), so nothing half-written is left.

The handlers are installed by the CLI for the run only (`with StopSignals() as stop:`), never
at import, and the previous ones are back on exit."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass, field
from types import FrameType

from .errors import PREEMPTED_EXIT

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


def _say(line: str) -> None:
    """One line on stderr, by one os.write (safe inside a signal handler, never interleaved)."""
    os.write(2, (line + "\n").encode())


@dataclass
class StopSignals:
    """The run's stop request: which signal asked (None: none yet)."""

    prog: str = "train"
    received: str | None = None
    _previous: dict = field(default_factory=dict)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def requested(self) -> bool:
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is None:
            self.received = name
            _say(
                f"{self.prog}: {name}: stopping after this epoch and its checkpoint (exit {PREEMPTED_EXIT}); "
                "a second signal stops at once"
            )
            return
        _say(f"{self.prog}: {name} again: stopping now, without a checkpoint (exit {128 + signum})")
        raise SystemExit(128 + signum)
