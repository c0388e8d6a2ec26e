"""`python -m tcgleague.train [--config PATH] [--section.key value ...]`: PPO on Emberfront,
self-play by default, league training with --league-enable (see [league])."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from .atomic import remove_leftover_temp_files
from .build import build_trainer, policy_config
from .checkpoint import (
    CheckpointError,
    LoadedCheckpoint,
    list_checkpoints,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from .config import Config, load_config
from .engine.cards import load_card_pool
from .errors import UserInputError, entry_point
from .logger import Dashboard, RunLogger
from .resume import ResumeOptions, apply_resume
from .trainer import Trainer


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python train.py",
        description=__doc__,
        epilog="Any config key can be overridden: --train.learning-rate 1e-3, --env.num-games 512, ...",
    )
    parser.add_argument("--config", default="configs/default.ini", help="an .ini file (default: configs/default.ini)")
    parser.add_argument("--wandb", action="store_true", help="log to Weights & Biases (offline when no API key)")
    parser.add_argument("--league-enable", action="store_true", help="league training (see [league])")
    r = parser.add_argument_group("resume")
    r.add_argument(
        "--resume-checkpoint",
        metavar="PATH|latest",
        help="start from a checkpoint; 'latest' = the newest one of this run_name under [base] "
        "experiments_dir. The resumed run writes into a new run directory",
    )
    r.add_argument(
        "--resume-load-optimizer",
        action="store_true",
        help="also restore optimizer, LR scheduler, global_step and the full run state (RNGs, games, "
        "LSTM state): an exact continuation. Without it: weights only, global_step from 0, "
        "anneals continue from the checkpoint's step (anneal offset)",
    )
    r.add_argument(
        "--resume-strict",
        action="store_true",
        help="refuse a checkpoint whose behaviour-defining sources changed (default: warn)",
    )
    r.add_argument(
        "--resume-auto-reset-critic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="when loading weights without the optimizer and the reward definition changed "
        "([env] reward_shaping, [train] gamma), re-initialise the value head (default: on)",
    )
    return parser.parse_known_args(argv)


def checkpoint_writer(run_dir: Path, cfg: Config) -> Callable[[Trainer], Path]:
    """The trainer's checkpoint_fn: its state_dict() as model_<run_name>_<epoch>.pt, with retention."""

    def write(trainer: Trainer) -> Path:
        return save_checkpoint(
            run_dir, cfg.base.run_name, trainer.state_dict(), cfg.to_dict(), cfg.train.max_checkpoints
        )

    return write


def load_resume(args: argparse.Namespace, cfg: Config) -> tuple[LoadedCheckpoint | None, ResumeOptions | None]:
    """The validated checkpoint to resume from (CheckpointError if it cannot be used), or None."""
    if args.resume_checkpoint is None:
        if args.resume_load_optimizer or args.resume_strict:
            print(
                "note: --resume-load-optimizer / --resume-strict do nothing without --resume-checkpoint",
                file=sys.stderr,
            )
        return None, None
    if not args.resume_checkpoint.strip():
        raise CheckpointError("--resume-checkpoint is empty: give a checkpoint file or 'latest'")
    options = ResumeOptions(
        args.resume_checkpoint, args.resume_load_optimizer, args.resume_strict, args.resume_auto_reset_critic
    )
    path = resolve_checkpoint(args.resume_checkpoint, Path(cfg.base.experiments_dir), cfg.base.run_name)
    loaded = load_checkpoint(
        path,
        policy_config=policy_config(cfg, load_card_pool().n_cards),
        strict=args.resume_strict,
        run_state=args.resume_load_optimizer,
    )
    return loaded, options


@entry_point("train")
def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_args(argv)
    if args.wandb:
        overrides += ["--wandb.enable", "true"]
    if args.league_enable:
        overrides += ["--league.enable", "true"]
    cfg = load_config(args.config, overrides, log=lambda msg: print(msg, file=sys.stderr))
    loaded, options = load_resume(args, cfg)
    # Every input is valid: only now is anything created on disk.
    run_id = f"{int(time.time())}{uuid.uuid4().hex[:4]}"
    run_dir = Path(cfg.base.experiments_dir) / f"{cfg.base.run_name}_{run_id}"
    removed = remove_leftover_temp_files(Path(cfg.base.experiments_dir).glob(f"{cfg.base.run_name}_*"))
    if removed:
        print(f"removed {len(removed)} temp file(s) left by interrupted writes of earlier runs", file=sys.stderr)
    run_dir.mkdir(parents=True, exist_ok=True)
    logger = RunLogger(run_dir, cfg.to_dict(), cfg.wandb, run_id)
    dashboard = Dashboard(cfg.base.run_name, cfg.train.total_timesteps, enabled=cfg.train.dashboard)
    started = refused = False
    try:
        trainer = build_trainer(cfg, run_dir, logger, dashboard)
        print(f"run directory: {run_dir}")
        if loaded is not None:
            apply_resume(trainer, loaded, options)
        started = True
        trainer.train(checkpoint_fn=checkpoint_writer(run_dir, cfg))
    except UserInputError:
        refused = not started
        raise
    finally:
        dashboard.close()
        logger.close()
        if refused and not list_checkpoints(run_dir, cfg.base.run_name):
            # Refused while the run was set up (a league state in the checkpoint that does not
            # parse): the directory holds nothing of value yet, so it does not stay behind.
            shutil.rmtree(run_dir, ignore_errors=True)
    print(f"done: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
