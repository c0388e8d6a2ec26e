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
