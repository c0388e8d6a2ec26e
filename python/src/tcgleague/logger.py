"""Run logging: a local `metrics.jsonl` always, Weights & Biases when enabled
(offline unless an API key is configured), and a live terminal dashboard.

Metric names are namespaced: each must start with one of `METRIC_NAMESPACES`.
"""

from __future__ import annotations

import json
import math
import netrc
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlparse

from .config.sections import WandbSection

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


# --------------------------------------------------------------------------------------------
# W&B mode
# --------------------------------------------------------------------------------------------


def wandb_host() -> str:
    base = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
    return urlparse(base).hostname or "api.wandb.ai"


def wandb_api_key_configured() -> bool:
    """True when WANDB_API_KEY is set or a netrc entry exists for the W&B API host."""
    if os.environ.get("WANDB_API_KEY", "").strip():
        return True
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        auth = netrc.netrc(path).authenticators(wandb_host())
    except (OSError, netrc.NetrcParseError):
        return False
    return bool(auth and auth[2])


def resolve_wandb_mode(mode: str) -> str:
    """ "auto" -> "online" when an API key is configured, else "offline"; others unchanged."""
    if mode == "auto":
        return "online" if wandb_api_key_configured() else "offline"
    if mode not in ("online", "offline", "disabled"):
        raise ValueError(f"[wandb] mode = {mode!r}: must be auto, online, offline or disabled")
    return mode


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
        self._file: TextIO | None = open(self.metrics_path, "a", encoding="utf-8")
        self.wandb_run = None
        self.wandb_mode: str | None = None
        if wandb_cfg is not None and wandb_cfg.enable:
            mode = resolve_wandb_mode(wandb_cfg.mode)
            if mode != "disabled":
                self._init_wandb(config_dict, wandb_cfg, mode)

    def _init_wandb(self, config_dict: dict, wandb_cfg: WandbSection, mode: str) -> None:
        import wandb

        self.wandb_mode = mode
        self.wandb_run = wandb.init(
            project=wandb_cfg.project or None,
            group=wandb_cfg.group or None,
            tags=wandb_cfg.tag_list() or None,
            name=wandb_cfg.name or self.run_dir.name,
            config=config_dict,
            dir=str(self.run_dir),
            mode=mode,
            id=self.run_id,
            resume="allow",
        )

    def log(self, metrics: Mapping[str, Any], step: int) -> None:
        """One JSON line {metrics..., "global_step", "wall_time"}; the same metrics to W&B."""
        check_metric_names(metrics)
        if self._file is None:
            raise RuntimeError("RunLogger.log called after close()")
        row = {name: _plain(value) for name, value in metrics.items()}
        row["global_step"] = int(step)
        row["wall_time"] = time.time()
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        if self.wandb_run is not None:
            self.wandb_run.log(dict(metrics), step=int(step))

    def log_panels(self, panels: Mapping[str, Any], step: int) -> None:
        """W&B media (images, tables, custom charts) at `step`; metrics.jsonl holds scalars only,
        so without W&B this does nothing."""
        check_metric_names(panels)
        if self.wandb_run is not None:
            self.wandb_run.log(dict(panels), step=int(step))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.wandb_run is not None:
            run, self.wandb_run = self.wandb_run, None
            run.finish()

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
