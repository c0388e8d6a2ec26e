"""scale: learner decisions/s of the same training run with 1, 2, ... torchrun ranks, and the
scaling efficiency (SPS with n ranks / (n x SPS with 1 rank)).

Each rank count is a real `torchrun --standalone --nproc_per_node n -m tcgleague.train` job
(each rank: its own env shard, one torch thread and one engine thread unless overridden), run
one after the other. SPS is wall-clock: all ranks' decisions per second between consecutive
epochs' metrics lines, so the epoch's exchange between ranks (gradients, metrics, weight check)
is inside it; the median over the epochs after the warm-up ones. With CUDA each rank takes its
own GPU (--device cuda), so `--nproc` can go up to the GPUs there are."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ..config import load_config
from ..errors import ArgumentError
from .common import print_table

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config
EFFICIENCY_TARGET = 0.75  # 2 ranks >= 1.5x the SPS of 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--nproc", default="1,2", help="comma-separated rank counts (default: 1,2)")
    p.add_argument("--epochs", type=int, default=4, help="timed epochs per rank count (after the warm-up ones)")
    p.add_argument("--warmup-epochs", type=int, default=2, help="epochs not timed (start-up, allocations)")


def rank_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or any(n < 1 for n in counts):
        raise ArgumentError(f"--nproc {text!r}: expected comma-separated rank counts >= 1, e.g. 1,2")
    return counts


def job_sps(config: str, overrides: list[str], nproc: int, epochs: int, warmup: int) -> dict:
    """Runs one torchrun job of warmup + epochs epochs; its wall-clock SPS per timed epoch."""
    cfg = load_config(config, overrides)
    batch = cfg.train.batch_size
    with tempfile.TemporaryDirectory(prefix="tcgleague-scale-") as tmp:
        cmd = [
            *(sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"),
            *("-m", "tcgleague.train", "--config", config),
            *("--base.torch-threads", "1", "--env.num-threads", "1"),
            *overrides,
            *("--base.experiments-dir", tmp, "--base.run-name", "scale"),
            *("--train.eval-interval", "0", "--train.dashboard", "false", "--wandb.enable", "false"),
            *("--train.checkpoint-interval", str(10**9), "--train.total-timesteps", str((warmup + epochs) * batch)),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"torchrun with {nproc} rank(s) failed:\n{proc.stderr[-4000:]}")
        (metrics,) = Path(tmp).glob("scale_*/metrics.jsonl")
        walls = [json.loads(line)["wall_time"] for line in metrics.read_text().splitlines()]
    per_epoch = [nproc * batch / (b - a) for a, b in zip(walls[warmup - 1 :], walls[warmup:])]
    return {"sps": statistics.median(per_epoch), "sps_per_epoch": per_epoch, "batch_size_per_rank": batch}


def run(args: argparse.Namespace) -> dict:
    counts = rank_counts(args.nproc)
    if args.epochs < 1 or args.warmup_epochs < 1:
        raise ArgumentError("--epochs and --warmup-epochs must be >= 1")
    jobs = {n: job_sps(args.config, args.overrides, n, args.epochs, args.warmup_epochs) for n in counts}
    base = jobs[1]["sps"] if 1 in jobs else None
    efficiency = {str(n): job["sps"] / (n * base) for n, job in jobs.items()} if base else {}
    figures = {
        "sps_by_nproc": {str(n): job["sps"] for n, job in jobs.items()},
        "sps_per_epoch_by_nproc": {str(n): job["sps_per_epoch"] for n, job in jobs.items()},
        "efficiency_by_nproc": efficiency,
        "batch_size_per_rank": jobs[counts[0]]["batch_size_per_rank"],
        "config": args.config,
        "overrides": args.overrides,
    }
    rows = []
    for n, job in jobs.items():
        eff = efficiency.get(str(n))
        target = f">= {EFFICIENCY_TARGET:.2f}" if n > 1 else ""
        rows.append((f"{n} rank(s): decisions/s", f"{job['sps']:,.0f}", ""))
        if eff is not None and n > 1:
            rows.append(("  speedup over 1 rank (efficiency)", f"{eff * n:.2f}x ({eff:.2f})", target))
    print_table(f"scaling over torchrun ranks ({args.config}, wall-clock, median of {args.epochs} epochs)", rows)
    return figures
