"""Helpers shared by the benchmarks: a table printer and a trainer built from a config."""

from __future__ import annotations

import tempfile

from rich.console import Console
from rich.table import Table

from ..build import build_trainer as build
from ..config import load_config
from ..trainer import Trainer


def print_table(title: str, rows: list[tuple[str, str, str]]) -> None:
    table = Table(title=title)
    for column in ("figure", "value", "target"):
        table.add_column(column)
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
