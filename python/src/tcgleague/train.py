"""`python -m tcgleague.train [--config PATH] [--section.key value ...]`: PPO on Emberfront,
self-play by default, league training with --league-enable (see [league]).

The same command runs under `torchrun --nproc_per_node N train.py ...` as N data-parallel
ranks (dist.py): rank 0 picks the run directory and the checkpoint to resume and tells the
others, and alone writes files.

Exit codes: 0 done; 2 bad input (or training stopped on a NaN); `PREEMPTED_EXIT` (75) stopped by
SIGTERM / SIGUSR1 after writing that epoch's checkpoint (preemption.py: requeue with
`--resume-checkpoint latest --resume-load-optimizer`), 128 + the signal for a second signal;
`STORAGE_EXIT` (74) a file could not be written (the line names it and the last good checkpoint)."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import torch

from .atomic import remove_leftover_temp_files
from .build import build_trainer, check_env_fits, policy_config
from .checkpoint import (
    CheckpointError,
    LoadedCheckpoint,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from .config import Config, load_config
from .devices import resolve_device
from .dist import SINGLE, Dist, init_distributed, leave_finished, shutdown, torchrun_local_rank
from .errors import PREEMPTED_EXIT, ArgumentError, UserInputError, WriteError, entry_point
from .game import game_of
from .league.mixture import write_mixture
from .logger import Dashboard, RunLogger
from .policy.family import unwrap
from .preemption import StopSignals
from .report import load_run, write_report
from .report.panels import league_panels
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
    parser.add_argument(
        "--report-every",
        type=int,
        default=0,
        metavar="N",
        help="also write the run's report (report/report.html) every N epochs; it is always written at the end",
    )
    r = parser.add_argument_group("resume")
    r.add_argument(
        "--resume-checkpoint",
        metavar="PATH|latest",
        help="start from a checkpoint; 'latest' = the newest one of this run_name under [base] "
        "experiments_dir, or a fresh start when there is none (safe for torchrun --max-restarts). "
        "The resumed run writes into a new run directory",
    )
    r.add_argument(
        "--resume-load-optimizer",
        action="store_true",
        help="also restore optimizer, LR scheduler, global_step and the full run state (RNGs, games, "
        "LSTM state): an exact continuation. Without it: weights only, global_step from 0, "
        "anneals continue from the checkpoint's step (anneal offset)",
    )
    r.add_argument(
        "--resume-accept-fresh-deals",
        action="store_true",
        help="with --resume-load-optimizer: running games whose engine state is rejected (damaged) restart "
        "from fresh deals, a continuation that is not exact (default: refuse the checkpoint)",
    )
    r.add_argument(
        "--league-allow-missing-members",
        action="store_true",
        help="league members whose files are gone from the checkpoint's run directory leave the pool (warned) "
        "and their running games continue as self-play (default: refuse the checkpoint, naming them)",
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


def make_run_dir(cfg: Config, dist: Dist = SINGLE) -> tuple[Path, str]:
    """A new run directory `<experiments_dir>/<run_name>_<id>` and its id (rank 0's, told to
    every rank); rank 0 creates it, after removing the temp files killed writers of earlier
    runs of this name left behind."""
    run_id = dist.broadcast(f"{int(time.time())}{uuid.uuid4().hex[:4]}")
    run_dir = Path(cfg.base.experiments_dir) / f"{cfg.base.run_name}_{run_id}"
    if dist.is_main:
        removed = remove_leftover_temp_files(Path(cfg.base.experiments_dir).glob(f"{cfg.base.run_name}_*"))
        if removed:
            print(f"removed {len(removed)} temp file(s) left by interrupted writes of earlier runs", file=sys.stderr)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise WriteError(run_dir, err) from None
    return run_dir, run_id


def checkpoint_writer(run_dir: Path, cfg: Config) -> Callable[[Trainer], Path | None]:
    """The trainer's checkpoint_fn: its state_dict() as model_<run_name>_<epoch>.pt, with
    retention. Every rank calls it (the state is gathered); rank 0 writes."""

    def write(trainer: Trainer) -> Path | None:
        state = trainer.state_dict()
        if state is None:
            return None
        path = save_checkpoint(run_dir, cfg.base.run_name, state, cfg.to_dict(), cfg.train.max_checkpoints)
        if cfg.league.enable and cfg.league.deliverable == "nash_mixture":
            write_mixture(run_dir, trainer.opponents.manager, trainer.global_step, trainer.epoch)
        arch = unwrap(trainer.policy).config.to_dict()
        trainer.average.write(run_dir, arch, game_of(cfg).name, trainer.global_step, trainer.epoch)
        trainer.opponents.checkpointed()
        return path

    return write


def epoch_end_writer(
    run_dir: Path, report_every: int, logger: RunLogger, candidates: float | None
) -> Callable[[Trainer, bool], None]:
    """The trainer's epoch_end_fn on rank 0: the run's report at the end (and every
    `report_every` epochs), and with W&B the league panels after each candidate evaluation
    (`candidates`: the league's count when training starts, a resumed run's included). Both
    are drawn from the run directory; one that fails is a warning, never the end of the run."""
    seen = {"candidates": candidates}

    def after_epoch(trainer: Trainer, last: bool) -> None:
        count = trainer.last_metrics.get("league/candidates")
        evaluated = count is not None and count != seen["candidates"]
        seen["candidates"] = count
        report_due = last or (report_every > 0 and trainer.epoch % report_every == 0)
        panels_due = evaluated and logger.wandb_run is not None
        if not (report_due or panels_due):
            return
        what = "report" if report_due else "W&B league panels"
        try:
            run = load_run(run_dir)
            if report_due:
                write_report(run, run_dir / "report")
            what = "W&B league panels"
            if panels_due:
                logger.log_panels(league_panels(run), trainer.global_step)
        except Exception as err:  # a plotting failure must not lose the run
            print(f"[report] WARNING: the {what} could not be written: {type(err).__name__}: {err}", file=sys.stderr)

    return after_epoch


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
        args.resume_checkpoint,
        args.resume_load_optimizer,
        args.resume_strict,
        args.resume_auto_reset_critic,
        args.resume_accept_fresh_deals,
        args.league_allow_missing_members,
    )
    path = Path(args.resume_checkpoint)
    if args.resume_checkpoint == "latest":
        path = latest_checkpoint(Path(cfg.base.experiments_dir), cfg.base.run_name)
        if path is None:
            print(
                f"note: --resume-checkpoint latest: no checkpoint model_{cfg.base.run_name}_NNNNNN.pt under "
                f"{cfg.base.experiments_dir}/{cfg.base.run_name}_*/: starting fresh",
                file=sys.stderr,
            )
            return None, None
    loaded = load_checkpoint(
        path,
        policy_config=policy_config(cfg),
        game=cfg.env.game,
        strict=args.resume_strict,
        run_state=args.resume_load_optimizer,
    )
    return loaded, options


@entry_point("train")
def main(argv: list[str] | None = None) -> int:
    args, overrides = parse_args(argv)
    if args.report_every < 0:
        raise ArgumentError(f"--report-every {args.report_every}: expected N >= 0 epochs (0 = only at the end)")
    if args.wandb:
        overrides += ["--wandb.enable", "true"]
    if args.league_enable:
        overrides += ["--league.enable", "true"]
    cfg = load_config(args.config, overrides, log=lambda msg: print(msg, file=sys.stderr))
    device = resolve_device(cfg.base.device, torchrun_local_rank())  # this rank's, resolved once
    dist = init_distributed(cfg.dist, device)
    finished = False
    try:
        with StopSignals() as stop:  # SIGTERM / SIGUSR1: finish the epoch, checkpoint, exit PREEMPTED_EXIT
            code = run(args, cfg, dist, device, stop)
        finished = True
    finally:
        shutdown(dist, finished)
    if dist.enabled:
        leave_finished(code)
    return code


def rank_log(dist: Dist) -> Callable[[str], None]:
    """Rank 0 reports everything; the other ranks only their own warnings (the rest is the same)."""
    if dist.is_main:
        return print

    def log(msg: str) -> None:
        if "WARNING" in msg:
            print(f"[rank {dist.rank}] {msg}", file=sys.stderr)

    return log


def run(args: argparse.Namespace, cfg: Config, dist: Dist, device: torch.device, stop: StopSignals) -> int:
    # Rank 0 resolves and validates the checkpoint; a refusal stops every rank with its one line.
    loaded, options = dist.from_main(lambda: load_resume(args, cfg), refusals=(UserInputError,))
    check_env_fits(cfg)
    # Every input is valid: only now is anything created on disk (by rank 0 alone).
    run_dir, run_id = make_run_dir(cfg, dist)
    logger = dashboard = None
    if dist.is_main:
        logger = RunLogger(run_dir, cfg.to_dict(), cfg.wandb, run_id)
        dashboard = Dashboard(cfg.base.run_name, cfg.train.total_timesteps, enabled=cfg.train.dashboard)
    started = refused = False
    try:
        trainer = build_trainer(cfg, run_dir, logger, dashboard, dist, device)
        if dist.is_main:
            print(f"run directory: {run_dir}")
            if dist.enabled:
                print(global_batch_note(cfg, dist, trainer.device))
        if loaded is not None:
            apply_resume(trainer, loaded, options, log=rank_log(dist))
        started = True
        after_epoch = None
        if dist.is_main:
            candidates = trainer.opponents.metrics().get("league/candidates")
            after_epoch = epoch_end_writer(run_dir, args.report_every, logger, candidates)
        trainer.train(
            checkpoint_fn=checkpoint_writer(run_dir, cfg), epoch_end_fn=after_epoch, stop_requested=stop.requested
        )
    except WriteError as err:
        kept = f"{err.path.name} keeps its previous version; " if err.path.is_file() else ""
        raise err.noting(kept + last_good(cfg)) from None
    except UserInputError:
        refused = not started
        raise
    finally:
        if dashboard is not None:
            dashboard.close()
        if logger is not None:
            logger.close()
        if dist.is_main and refused and not list_checkpoints(run_dir, cfg.base.run_name):
            # Refused while the run was set up (a league state in the checkpoint that does not
            # parse): the directory holds nothing of value yet, so it does not stay behind.
            shutil.rmtree(run_dir, ignore_errors=True)
    if trainer.epoch < trainer.total_epochs:  # stopped by a signal (on this rank or another)
        if dist.is_main:
            print(
                f"train: stopped at epoch {trainer.epoch} ({stop.received or 'another rank was signalled'}): "
                f"{last_good(cfg)}; exit {PREEMPTED_EXIT}",
                file=sys.stderr,
            )
        return PREEMPTED_EXIT
    if dist.is_main:
        print(f"done: {run_dir}")
    return 0


def last_good(cfg: Config) -> str:
    """Where the run can go on from: what `--resume-checkpoint latest` picks now."""
    path = latest_checkpoint(Path(cfg.base.experiments_dir), cfg.base.run_name)
    if path is None:
        return "no checkpoint of this run_name has been written yet"
    return f"the last good checkpoint is {path} (resume: --resume-checkpoint latest --resume-load-optimizer)"


def global_batch_note(cfg: Config, dist: Dist, device) -> str:
    """What one epoch and one optimizer step are across the job ([env] and [train] sizes are per rank)."""
    n, t = dist.world_size, cfg.train
    return (
        f"[dist] {n} ranks ({dist.backend}, rank 0 on {device}): {n} x {cfg.env.num_games} games; global batch "
        f"{n} x {t.batch_size} = {n * t.batch_size} decisions per epoch, minibatch {n} x {t.minibatch_size} = "
        f"{n * t.minibatch_size} per optimizer step"
    )


if __name__ == "__main__":
    sys.exit(main())
