"""`python -m tcgleague.train [--config PATH] [--section.key value ...]`: self-play PPO on
Emberfront (league training arrives with --league-enable)."""
from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

from .checkpoint import save_checkpoint
from .config import ConfigError, load_config
from .logger import Dashboard, RunLogger
from .trainer import Trainer


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python train.py", description=__doc__,
        epilog="Any config key can be overridden: --train.learning-rate 1e-3, --env.num-games 512, ...")
    parser.add_argument("--config", default="configs/default.ini", help="an .ini file (default: configs/default.ini)")
    parser.add_argument("--wandb", action="store_true", help="log to Weights & Biases (offline when no API key)")
    parser.add_argument("--league-enable", action="store_true", help="league training (see [league])")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_args(argv)
    if args.wandb:
        overrides += ["--wandb.enable", "true"]
    if args.league_enable:
        overrides += ["--league.enable", "true"]
    try:
        cfg = load_config(args.config, overrides)
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 2
    if cfg.league.enable:
        print("config error: league training is not built yet ([league] enable = true)", file=sys.stderr)
        return 2
    run_id = f"{int(time.time())}{uuid.uuid4().hex[:4]}"
    run_dir = Path(cfg.base.experiments_dir) / f"{cfg.base.run_name}_{run_id}"
    run_dir.mkdir(parents=True, exist_ok=True)
    logger = RunLogger(run_dir, cfg.to_dict(), cfg.wandb, run_id)
    dashboard = Dashboard(cfg.base.run_name, cfg.train.total_timesteps, enabled=cfg.train.dashboard)
    try:
        trainer = Trainer(cfg, run_dir, logger, dashboard)
        print(f"run directory: {run_dir}")
        trainer.train(checkpoint_fn=lambda tr: save_checkpoint(tr, cfg.train.max_checkpoints))
    finally:
        dashboard.close()
        logger.close()
    print(f"done: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
