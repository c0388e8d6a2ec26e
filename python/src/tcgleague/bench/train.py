"""train: end-to-end learner decisions/s with a config, where an epoch's time goes (rollout,
of which env stepping, and update), and the overhead ratio (epoch wall time / time of the same
model work - the learner's decision step and the PPO update - without the env)."""

from __future__ import annotations

import argparse
import time

import torch

from ..transfer import ROW
from .common import build_trainer, print_table, timed

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config
SPS_TARGET = {"cpu": ">= 7,500", "cuda": ">= 100,000"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")


def time_env_steps(trainer) -> dict:
    """Wraps the env's step so the seconds spent in it accumulate in the returned dict."""
    clock = {"env_seconds": 0.0}
    step = trainer.env.step

    def timed_step(actions):
        start = time.perf_counter()
        out = step(actions)
        clock["env_seconds"] += time.perf_counter() - start
        return out

    trainer.env.step = timed_step
    return clock


@torch.no_grad()
def rollout_compute_seconds(trainer, steps: int) -> float:
    """The rollout's model work alone: `steps` learner decisions (the trainer's own, possibly
    compiled, step) for every game, on the last step's upload (the very tensors the rollout
    feeds it, so a compiled step replays rather than compiling anew)."""
    obs, rows = trainer.transfer.obs, trainer.transfer.values[ROW].long()
    params = trainer.sampler.params_tensor(trainer.device)
    return timed(trainer.device, lambda: trainer.learner.actor.decide(obs, rows, params), steps)


def run(args: argparse.Namespace) -> dict:
    trainer = build_trainer(args.config, args.overrides)
    t, device = trainer.cfg.train, trainer.device
    trainer.train_epoch()  # warm-up (allocations, thread pools, compilation)
    clock = time_env_steps(trainer)
    totals = {"epoch": 0.0, "rollout": 0.0, "update": 0.0}
    for _ in range(args.epochs):
        metrics = trainer.train_epoch()
        totals["epoch"] += metrics["perf/epoch_seconds"]
        totals["rollout"] += metrics["perf/rollout_seconds"]
        totals["update"] += metrics["perf/update_seconds"]
    epoch, rollout_s, update_s = (totals[k] / args.epochs for k in ("epoch", "rollout", "update"))
    env_s = clock["env_seconds"] / args.epochs
    rollout = rollout_compute_seconds(trainer, t.batch_size // trainer.env.num_games)
    batch = trainer.learner.buffer.pack(t.gamma, t.gae_lambda)
    params, coefs = trainer.sampler.params_tensor(device), trainer.loss_coefs()
    update = timed(device, lambda: trainer.learner.updater.update(batch, params, coefs, trainer.learner.generator))
    figures = {
        "sps": t.batch_size / epoch,
        "epoch_seconds": epoch,
        "rollout_seconds": rollout_s,
        "env_seconds": env_s,
        "update_seconds": update_s,
        "compute_seconds": rollout + update,
        "rollout_compute_seconds": rollout,
        "update_compute_seconds": update,
        "overhead_ratio": epoch / (rollout + update),
        "batch_size": t.batch_size,
        "num_games": trainer.env.num_games,
        "env_threads": trainer.cfg.env.num_threads,
        "torch_threads": torch.get_num_threads(),
        "compiled": trainer.learner.updater.compiled,
        "device": str(device),
        "config": args.config,
    }
    print_table(
        f"training throughput ({args.config}, {device}, compile {'on' if trainer.learner.updater.compiled else 'off'})",
        [
            ("learner decisions/s (end to end)", f"{figures['sps']:,.0f}", SPS_TARGET.get(device.type, "")),
            ("epoch wall time", f"{epoch:.3f} s", ""),
            ("  rollout (of which env step)", f"{rollout_s:.3f} s ({env_s:.3f} s)", ""),
            ("  update", f"{update_s:.3f} s", ""),
            ("model compute alone (rollout step + update)", f"{rollout:.3f} + {update:.3f} s", ""),
            ("overhead ratio", f"{figures['overhead_ratio']:.2f}", "<= 2.0"),
        ],
    )
    return figures
