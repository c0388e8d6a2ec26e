"""Weights & Biases for a run: the mode (`auto`: online when an API key is configured, else
offline) and a start that never stops training: online failing (a wrong key, a service that
refuses, hangs or drops the connection) falls back to offline with one line, offline failing
leaves the run without W&B. Its metrics are always in metrics.jsonl (logger.py)."""

from __future__ import annotations

import netrc
import os
import sys
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlparse

from .config.sections import WandbSection

# How long wandb.init may wait for the service before the run logs offline instead (W&B's own
# WANDB_INIT_TIMEOUT variable sets it), and how long run.finish() may upload at the end (the rest
# stays on disk for `wandb sync`): an unreachable server never holds training, nor a preempted
# run's grace period, for longer.
WANDB_INIT_TIMEOUT = float(os.environ.get("WANDB_INIT_TIMEOUT", "60"))
WANDB_FINISH_TIMEOUT = 60.0


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


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200]}" if text else type(err).__name__


def warn(message: str) -> None:
    print(f"[wandb] WARNING: {message}", file=sys.stderr, flush=True)


def _wandb_gone(wandb) -> None:
    """After a failed online start: the service forgets the half-made run (so the same id can
    start offline) and W&B's own error telemetry, bound for the same unreachable server, stays quiet."""
    with suppress(Exception):
        wandb.teardown()
    with suppress(Exception):
        from wandb.analytics.opentelemetry.opentelemetry_proxy import disable

        disable()


def start_wandb(
    run_dir: Path, run_id: str, config_dict: dict, wandb_cfg: WandbSection, mode: str
) -> tuple[object, str | None]:
    """(the W&B run, its mode): in `mode`; if that fails, offline (one line says so); if that
    fails too, (None, None) with one more line."""
    import wandb

    def start(mode: str) -> tuple[object, str]:
        run = wandb.init(
            project=wandb_cfg.project or None,
            group=wandb_cfg.group or None,
            tags=wandb_cfg.tag_list() or None,
            name=wandb_cfg.name or run_dir.name,
            config=config_dict,
            dir=str(run_dir),
            mode=mode,
            id=run_id,
            resume="allow",
            settings=wandb.Settings(init_timeout=WANDB_INIT_TIMEOUT, finish_timeout=WANDB_FINISH_TIMEOUT),
        )
        return run, mode

    try:
        return start(mode)
    except Exception as err:  # noqa: BLE001 - W&B never stops training
        if mode == "offline":
            warn(f"W&B could not start ({one_line(err)}); W&B is off, metrics go to {run_dir / 'metrics.jsonl'}")
            return None, None
        warn(
            f"W&B {mode} could not start ({one_line(err)}): logging offline under {run_dir / 'wandb'} "
            "(upload it later with `wandb sync <its offline-run-* folder>`)"
        )
        _wandb_gone(wandb)
    try:
        return start("offline")
    except Exception as err:  # noqa: BLE001
        warn(
            f"W&B offline could not start either ({one_line(err)}); W&B is off, metrics go to {run_dir / 'metrics.jsonl'}"
        )
        return None, None
