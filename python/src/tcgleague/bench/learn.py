"""learn: does training learn? Trains a config (default configs/default.ini) for up to --minutes
(stopping after the epoch that crosses the time), writes the final checkpoint, then evaluates
it through evaluate_checkpoint's core (same load-and-validate path) vs random and greedy over
--episodes duplicate games each."""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path

from ..bots import BOTS
from ..build import build_trainer
from ..checkpoint import load_checkpoint
from ..config import load_config
from ..evaluate_checkpoint import evaluate_loaded
from ..logger import RunLogger
from ..train import checkpoint_writer
from .common import print_table

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--minutes", type=float, default=20.0, help="training wall-time budget (default 20)")
    p.add_argument("--episodes", type=int, default=1000, help="duplicate games per opponent (default 1000)")
    p.add_argument("--seed", type=int, default=12345, help="evaluation seed (the deals)")


def run(args: argparse.Namespace) -> dict:
    cfg = load_config(args.config, ["--train.dashboard", "false", "--wandb.enable", "false", *args.overrides])
    run_dir = Path(cfg.base.experiments_dir) / f"{cfg.base.run_name}_learn{int(time.time())}{uuid.uuid4().hex[:4]}"
    run_dir.mkdir(parents=True, exist_ok=True)
    logger = RunLogger(run_dir, cfg.to_dict(), cfg.wandb, run_dir.name)  # metrics.jsonl: the learning curve
    trainer = build_trainer(cfg, run_dir, logger)
    final: list[Path] = []
    write = checkpoint_writer(run_dir, cfg)
    start = time.perf_counter()
    trainer.train(checkpoint_fn=lambda tr: final.append(write(tr)), max_seconds=args.minutes * 60.0)
    logger.close()
    minutes = (time.perf_counter() - start) / 60.0
    print(
        f"trained {trainer.global_step:,} steps ({trainer.epoch} epochs) in {minutes:.1f} min; "
        f"final checkpoint {final[-1]}"
    )
    loaded = load_checkpoint(final[-1])
    figures = {
        "steps": trainer.global_step,
        "epochs": trainer.epoch,
        "minutes": minutes,
        "checkpoint": str(final[-1]),
        "config": args.config,
        "episodes": args.episodes,
    }
    rows = []
    for bot in BOTS:
        r = evaluate_loaded(loaded, bot, args.episodes, args.seed)
        figures.update(
            {
                f"winrate_vs_{bot}": r["winrate"],
                f"wilson_low_vs_{bot}": r["wilson_low"],
                f"wilson_high_vs_{bot}": r["wilson_high"],
                f"games_vs_{bot}": r["episodes"],
                f"draws_vs_{bot}": r["draws"],
                f"entropy_vs_{bot}": r["entropy"],
                f"noop_rate_vs_{bot}": r["noop_rate"],
            }
        )
        rows.append(
            (
                f"win rate vs {bot} ({r['episodes']} duplicate games)",
                f"{r['winrate']:.3f} [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}]",
                "",
            )
        )
    print_table(
        f"learning ({args.config}, {minutes:.1f} min, {trainer.global_step:,} steps)",
        [("training steps", f"{trainer.global_step:,}", ""), ("minutes", f"{minutes:.1f}", ""), *rows],
    )
    return figures
