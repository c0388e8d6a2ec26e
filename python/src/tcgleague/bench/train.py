"""train: end-to-end learner decisions/s with a config, and the overhead ratio (epoch wall
time / time of the same model forward+backward work without the env)."""

from __future__ import annotations

import argparse
import time

import torch

from ..layout import legal_from_obs
from .common import build_trainer, print_table

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")


@torch.no_grad()
def rollout_compute_seconds(trainer, steps: int) -> float:
    """The rollout's model work alone: `steps` batched forwards on stored observations."""
    rows = trainer.env.num_games
    obs = trainer.buffer.obs[:rows].clone()
    h = torch.zeros(rows, trainer.cfg.policy.hidden_size)
    legal, count = legal_from_obs(obs)
    start = time.perf_counter()
    for _ in range(steps):
        x, ent = trainer.policy.encode(obs)
        out, _ = trainer.policy.step(x, (h, h))
        trainer.sampler.sample(trainer.policy, out, ent, legal, count, generator=trainer.generator)
        trainer.policy.value(out)
    return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict:
    trainer = build_trainer(args.config, args.overrides)
    t = trainer.cfg.train
    trainer.total_epochs = 10**9  # the bench decides how long to run
    trainer.train_epoch()  # warm-up (allocations, thread pools)
    epoch_s = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        trainer.train_epoch()
        epoch_s.append(time.perf_counter() - start)
    epoch = sum(epoch_s) / len(epoch_s)
    rollout = rollout_compute_seconds(trainer, t.batch_size // trainer.env.num_games)
    batch = trainer.buffer.pack(t.gamma, t.gae_lambda)
    start = time.perf_counter()
    trainer.updater.update(batch, trainer.sampler.params_tensor(), trainer.loss_coefs(), trainer.generator)
    update = time.perf_counter() - start
    figures = {
        "sps": t.batch_size / epoch,
        "epoch_seconds": epoch,
        "compute_seconds": rollout + update,
        "rollout_compute_seconds": rollout,
        "update_compute_seconds": update,
        "overhead_ratio": epoch / (rollout + update),
        "batch_size": t.batch_size,
        "num_games": trainer.env.num_games,
        "torch_threads": torch.get_num_threads(),
        "config": args.config,
    }
    print_table(
        f"training throughput ({args.config}, CPU)",
        [
            ("learner decisions/s (end to end)", f"{figures['sps']:,.0f}", ">= 5,000"),
            ("epoch wall time", f"{epoch:.2f} s", ""),
            ("model compute alone (rollout fwd + update)", f"{rollout:.2f} + {update:.2f} s", ""),
            ("overhead ratio", f"{figures['overhead_ratio']:.2f}", "<= 2.0"),
        ],
    )
    return figures
