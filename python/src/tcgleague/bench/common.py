"""Helpers shared by the benchmarks: a table printer, a trainer built from a config, a device
clock and a counter of CUDA-graph recordings."""

from __future__ import annotations

import tempfile
import time

import torch
from rich.console import Console
from rich.table import Table

from ..build import build_trainer as build
from ..config import load_config
from ..trainer import Trainer


def print_table(title: str, rows: list[tuple[str, str, str]]) -> None:
    table = Table(title=title)
    for column in ("figure", "value", "target"):
        table.add_column(column, no_wrap=column == "figure")  # a figure's name stays greppable in a log
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def build_trainer(config: str, overrides: list[str] | None = None) -> Trainer:
    """A trainer with evaluation, dashboard and W&B off, writing into a temp directory."""
    cfg = load_config(
        config,
        ["--train.eval-interval", "0", "--train.dashboard", "false", "--wandb.enable", "false", *(overrides or [])],
    )
    return build(cfg, tempfile.mkdtemp(prefix="tcgleague-bench-"))


def synchronize(device: torch.device) -> None:
    """Waits for the device's queued work, so a wall-clock reading covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn, repeats: int = 1) -> float:
    """Seconds for `repeats` calls of fn(), including the device work they queue."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    synchronize(device)
    return time.perf_counter() - start


class GraphRecordings:
    """Counts CUDA-graph recordings: torch's CUDA-graph trees announce each one through dynamo's
    callback handler (trigger CUDAGRAPH_RECORDING). Stays 0 on the CPU; `supported` is False in
    a torch without that trigger (then the count means nothing)."""

    def __init__(self):
        self.count = 0
        trigger = getattr(torch._dynamo.callback.CallbackTrigger, "CUDAGRAPH_RECORDING", None)
        self.supported = trigger is not None

        def on_start(args) -> None:
            if args.callback_trigger == trigger:
                self.count += 1

        torch._dynamo.callback_handler.register_start_callback(on_start)


# the epoch split: figure name -> the trainer's metric it averages (league-only metrics read 0 in self-play)
SPLIT = {
    "epoch_seconds": "perf/epoch_seconds",
    "rollout_seconds": "perf/rollout_seconds",
    "env_seconds": "perf/env_seconds",
    "opponents_seconds": "perf/opponents_act_seconds",
    "bots_seconds": "perf/opponents_bots_seconds",
    "exploiter_seconds": "perf/opponents_exploiter_seconds",
    "update_seconds": "perf/update_seconds",
    "league_epoch_seconds": "perf/opponents_seconds",
    "matches_seconds": "perf/league_matches_seconds",
}


def epoch_split(epochs: list[dict]) -> dict[str, float]:
    """Where an epoch's time goes, averaged over `epochs` (the trainer's metrics), and the bytes
    that cross the host/device boundary per env step (the learner's and the opponents')."""
    out = {name: sum(m.get(key, 0.0) for m in epochs) / len(epochs) for name, key in SPLIT.items()}
    out["learner_step_seconds"] = out["rollout_seconds"] - out["env_seconds"] - out["opponents_seconds"]
    last = epochs[-1]
    for way in ("up", "down"):
        learner, others = last[f"perf/bytes_{way}_per_step"], last.get(f"perf/opponents_bytes_{way}_per_step", 0.0)
        out[f"bytes_{way}_per_step"] = learner + others
    return out


def split_rows(split: dict[str, float]) -> list[tuple[str, str, str]]:
    """The epoch split as table rows."""
    s = split
    return [
        ("epoch wall time", f"{s['epoch_seconds']:.3f} s", ""),
        (
            "  rollout: learner step (+ frozen pool) / env / opponents",
            f"{s['learner_step_seconds']:.3f} / {s['env_seconds']:.3f} / {s['opponents_seconds']:.3f} s",
            "",
        ),
        (
            "    opponents: bots / exploiter",
            f"{s['bots_seconds']:.3f} / {s['exploiter_seconds']:.3f} s",
            "",
        ),
        ("  update", f"{s['update_seconds']:.3f} s", ""),
        (
            "  league epoch work (of which matches)",
            f"{s['league_epoch_seconds']:.3f} s ({s['matches_seconds']:.3f} s)",
            "",
        ),
        ("bytes up / down per env step", f"{s['bytes_up_per_step']:,.0f} / {s['bytes_down_per_step']:,.0f}", ""),
    ]
