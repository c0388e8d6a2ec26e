"""Run logging: a local `metrics.jsonl` always, Weights & Biases when enabled
(offline unless an API key is configured), and a live terminal dashboard.

Metric names are namespaced: each must start with one of `METRIC_NAMESPACES`.

metrics.jsonl is the run's record: a line is written whole or not at all (a full disk stops the
run with `errors.WriteError`). W&B is a copy and never stops training: an init that fails (a
wrong key, an unreachable or broken service) prints one line and logs offline instead (`wandb
sync` uploads it later), and a W&B call that raises mid-run prints one line and turns W&B off
for the rest of the run.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, TextIO

from .config.sections import WandbSection
from .errors import WriteError
from .wandb_link import one_line, resolve_wandb_mode, start_wandb, warn

METRIC_NAMESPACES = (
    "train/",
    "losses/",
    "environment/",
    "league/",
    "exploiter/",
    "sampler/",
    "anneal/",
    "perf/",
    "eval/",
    "resume/",
    "dist/",
)
METRICS_FILE = "metrics.jsonl"


def check_metric_names(metrics: Mapping[str, Any]) -> None:
    for name in metrics:
        if not isinstance(name, str) or not name.startswith(METRIC_NAMESPACES):
            raise ValueError(
                f"metric {name!r} is not namespaced: names must start with one of {', '.join(METRIC_NAMESPACES)}"
            )


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy/torch scalars via .item(); non-finite floats -> None."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def open_for_append(path: Path) -> int:
    """An O_APPEND descriptor on `path` (created if needed); WriteError if it cannot be opened."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as err:
        raise WriteError(path, err) from None


def append_line(fd: int, path: Path, line: str) -> None:
    """Appends one whole line or nothing: a write that fails part-way (a full disk) truncates the
    file back to where the line began, then raises WriteError. A reader never sees half a line."""
    start = os.lseek(fd, 0, os.SEEK_END)
    rest = memoryview(line.encode("utf-8"))
    try:
        while rest:
            written = os.write(fd, rest)
            if written == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            rest = rest[written:]
    except OSError as err:
        with suppress(OSError):
            os.ftruncate(fd, start)
        raise WriteError(path, err) from None


# --------------------------------------------------------------------------------------------
# RunLogger
# --------------------------------------------------------------------------------------------


class RunLogger:
    """Appends metrics to `run_dir/metrics.jsonl` and, when `wandb_cfg.enable`, to W&B.

    `wandb_cfg` is the run's [wandb] section (None: no W&B). W&B data goes under `run_dir/wandb/`.
    """

    def __init__(self, run_dir: Path, config_dict: dict, wandb_cfg: WandbSection | None, run_id: str):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.metrics_path = self.run_dir / METRICS_FILE
        self._fd: int | None = open_for_append(self.metrics_path)
        self.wandb_run = None
        self.wandb_mode: str | None = None
        if wandb_cfg is not None and wandb_cfg.enable:
            mode = resolve_wandb_mode(wandb_cfg.mode)
            if mode != "disabled":
                self.wandb_run, self.wandb_mode = start_wandb(self.run_dir, run_id, config_dict, wandb_cfg, mode)

    def _to_wandb(self, what: str, call: Callable[[object], object]) -> None:
        """`call(run)`; a W&B failure turns W&B off for the rest of the run, with one line."""
        try:
            call(self.wandb_run)
        except Exception as err:  # noqa: BLE001 - W&B never stops training
            run, self.wandb_run = self.wandb_run, None
            warn(
                f"W&B {what} failed ({one_line(err)}): W&B is off for the rest of this run, metrics go on in "
                f"{self.metrics_path}; what W&B holds so far uploads with `wandb sync {self.run_dir / 'wandb'}/<run folder>`"
            )
            if what != "finish":
                with suppress(Exception):
                    run.finish()

    def log(self, metrics: Mapping[str, Any], step: int) -> None:
        """One JSON line {metrics..., "global_step", "wall_time"} (whole or not at all); the same
        metrics to W&B."""
        check_metric_names(metrics)
        if self._fd is None:
            raise RuntimeError("RunLogger.log called after close()")
        row = {name: _plain(value) for name, value in metrics.items()}
        row["global_step"] = int(step)
        row["wall_time"] = time.time()
        append_line(self._fd, self.metrics_path, json.dumps(row) + "\n")
        if self.wandb_run is not None:
            self._to_wandb("log", lambda run: run.log(dict(metrics), step=int(step)))

    def log_panels(self, panels: Mapping[str, Any], step: int) -> None:
        """W&B media (images, tables, custom charts) at `step`; metrics.jsonl holds scalars only,
        so without W&B this does nothing."""
        check_metric_names(panels)
        if self.wandb_run is not None:
            self._to_wandb("log", lambda run: run.log(dict(panels), step=int(step)))

    def close(self) -> None:
        """Closes metrics.jsonl and finishes the W&B run (uploading for at most WANDB_FINISH_TIMEOUT s)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.wandb_run is not None:
            self._to_wandb("finish", lambda run: run.finish())
            self.wandb_run = None

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Dashboard
# --------------------------------------------------------------------------------------------

DEFAULT_KEY_METRICS = (
    "environment/win_rate",
    "environment/episode_length",
    "environment/episode_return",
    "losses/policy_loss",
    "losses/value_loss",
    "losses/entropy",
    "losses/approx_kl",
    "losses/clipfrac",
    "train/learning_rate",
    "anneal/ent_coef",
    "sampler/subaction_temperature",
    "sampler/smoothing_eps",
)
_PREFERRED_NAMESPACES = ("losses/", "environment/", "eval/", "league/", "train/", "sampler/", "anneal/", "resume/")


def _fmt(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4f}"
    return str(value)


def _fmt_seconds(s: float) -> str:
    if not math.isfinite(s) or s < 0:
        return "--"
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class Dashboard:
    """Live terminal view of a run: name, progress of global_step/total_timesteps, SPS, epoch,
    elapsed/ETA and a few key metrics (the latest value of each, kept across updates).

    With `enabled=False`, or when the output is not a terminal, each `update` prints one plain
    line instead. SPS is `perf/sps` when given, else measured between updates. The epoch is the
    `epoch` argument, else `train/epoch`, else the number of updates so far.
    """

    def __init__(
        self,
        run_name: str,
        total_timesteps: int,
        enabled: bool = True,
        key_metrics: Iterable[str] | None = None,
        max_metrics: int = 14,
        file: TextIO | None = None,
    ):
        self.run_name = run_name
        self.total_timesteps = max(int(total_timesteps), 1)
        self.key_metrics = tuple(key_metrics) if key_metrics is not None else None
        self.max_metrics = max_metrics
        self.file = file if file is not None else sys.stdout
        self.latest: dict[str, Any] = {}
        self.updates = 0
        self.start_time = time.perf_counter()
        self._last_time = self.start_time
        self._last_step: int | None = None
        self._first_step: int | None = None
        self.sps = 0.0
        self.global_step = 0
        self.epoch = 0
        self._live = None
        self._console = None
        isatty = getattr(self.file, "isatty", None)
        self.live_mode = bool(enabled and callable(isatty) and isatty())

    # -- state ---------------------------------------------------------------------------

    def _advance(self, metrics: Mapping[str, Any], global_step: int, epoch: int | None) -> None:
        now = time.perf_counter()
        self.updates += 1
        self.latest.update(metrics)
        if self._first_step is None:
            self._first_step = global_step
        if "perf/sps" in metrics and _plain(metrics["perf/sps"]) is not None:
            self.sps = float(_plain(metrics["perf/sps"]))
        elif self._last_step is not None and now > self._last_time:
            self.sps = (global_step - self._last_step) / (now - self._last_time)
        self._last_step, self._last_time = global_step, now
        self.global_step = int(global_step)
        if epoch is not None:
            self.epoch = int(epoch)
        elif "train/epoch" in metrics:
            self.epoch = int(_plain(metrics["train/epoch"]))
        else:
            self.epoch = self.updates

    def shown_metrics(self) -> list[tuple[str, Any]]:
        if self.key_metrics is not None:
            names = [k for k in self.key_metrics if k in self.latest]
        else:
            names = [k for k in DEFAULT_KEY_METRICS if k in self.latest]
            if len(names) < self.max_metrics:
                rest = sorted(
                    (k for k in self.latest if k not in names and not k.startswith("perf/")),
                    key=lambda k: (
                        next(
                            (i for i, p in enumerate(_PREFERRED_NAMESPACES) if k.startswith(p)),
                            len(_PREFERRED_NAMESPACES),
                        ),
                        k,
                    ),
                )
                names += rest[: self.max_metrics - len(names)]
        return [(k, self.latest[k]) for k in names[: self.max_metrics]]

    def _eta(self) -> float:
        remaining = self.total_timesteps - self.global_step
        return remaining / self.sps if self.sps > 0 else math.nan

    def summary_line(self) -> str:
        frac = min(self.global_step / self.total_timesteps, 1.0)
        parts = [
            f"[{self.run_name}] step {self.global_step:,}/{self.total_timesteps:,} ({100 * frac:.1f}%)",
            f"epoch {self.epoch}",
            f"sps {self.sps:,.0f}",
            f"elapsed {_fmt_seconds(time.perf_counter() - self.start_time)}",
            f"eta {_fmt_seconds(self._eta())}",
        ]
        metrics = " ".join(f"{k}={_fmt(v)}" for k, v in self.shown_metrics())
        return " | ".join(parts) + (f" | {metrics}" if metrics else "")

    # -- rendering -----------------------------------------------------------------------

    def _renderable(self):
        from rich.console import Group
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        head = Table.grid(padding=(0, 2))
        for _ in range(4):
            head.add_column()
        frac = min(self.global_step / self.total_timesteps, 1.0)
        head.add_row(
            f"[bold]step[/] {self.global_step:,} / {self.total_timesteps:,} ({100 * frac:.1f}%)",
            f"[bold]epoch[/] {self.epoch}",
            f"[bold]SPS[/] {self.sps:,.0f}",
            f"[bold]elapsed[/] {_fmt_seconds(time.perf_counter() - self.start_time)}"
            f"  [bold]ETA[/] {_fmt_seconds(self._eta())}",
        )
        bar = ProgressBar(total=self.total_timesteps, completed=min(self.global_step, self.total_timesteps))
        table = Table(show_header=True, header_style="bold", expand=False, box=None)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for k, v in self.shown_metrics():
            table.add_row(k, _fmt(v))
        return Panel(Group(head, bar, table), title=f"[bold cyan]{self.run_name}[/]", border_style="cyan")

    def update(self, metrics: Mapping[str, Any], global_step: int, epoch: int | None = None) -> None:
        self._advance(metrics, global_step, epoch)
        if not self.live_mode:
            print(self.summary_line(), file=self.file, flush=True)
            return
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.file)
            self._live = Live(self._renderable(), console=self._console, refresh_per_second=4, transient=False)
            self._live.start()
        else:
            self._live.update(self._renderable(), refresh=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
