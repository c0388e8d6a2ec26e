"""train: end-to-end learner decisions/s with a config, where an epoch's time goes (the
learner's step, env stepping, opponents, update) and the bytes each env step moves between host
and device, and the overhead ratio (epoch wall time / time of the same
model work - the learner's decision step and the PPO update - without the env)."""

from __future__ import annotations

import argparse
import statistics

import torch

from ..config.sections import MAGNET_KINDS
from ..transfer import ROW
from .common import build_trainer, epoch_split, print_table, split_rows, timed

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config
SPS_TARGET = {"cpu": ">= 7,500", "cuda": ">= 100,000"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")
    p.add_argument(
        "--magnet",
        choices=MAGNET_KINDS,
        help="instead: the config with and without this magnet ([train] magnet_coef 0.1), epochs alternated "
        "in one process, and the SPS ratio (the magnet's cost: one more policy pass per minibatch)",
    )
    p.add_argument(
        "--explore",
        type=float,
        metavar="SHARE",
        help="instead: the config with and without this [train] explore_share, epochs alternated in one "
        "process, and the SPS ratio (exploration's cost: per-row sampling parameters, fewer decisions trained)",
    )
    p.add_argument(
        "--own-reach-cap",
        type=float,
        metavar="CAP",
        help="instead: the config with and without this [train] own_reach_cap, epochs alternated in one process, "
        "and the SPS ratio (counterfactual weighting's cost: the reach tracked per step, the weights once an epoch)",
    )


@torch.no_grad()
def rollout_compute_seconds(trainer, steps: int) -> float:
    """The rollout's model work alone: `steps` learner decisions (the trainer's own, possibly
    compiled, step) for every game - each part's, with overlap - on the last step's uploads (the
    very tensors the rollout feeds it, so a compiled step replays rather than compiling anew)."""
    uploads = [(t.obs, t.values[ROW].long()) for t in trainer.transfers]
    params = trainer.sampler.params_tensor(trainer.device)

    def decide_every_game() -> None:
        for obs, rows in uploads:
            trainer.learner.actor.decide(obs, rows, params)

    return timed(trainer.device, decide_every_game, steps)


def variant(args: argparse.Namespace) -> tuple[str, list[str], list[str]] | None:
    """The compared variant of the config, (its name, the overrides that turn it on, those that
    turn it off), or None (plain throughput). The plain side is the config with the variant off,
    so a config that already sets it (leduc.ini's own_reach_cap) is still compared with it off."""
    if args.magnet:
        coef = ["--train.magnet-coef-initial", "0.1", "--train.magnet-coef-final", "0.1"]
        off = ["--train.magnet-coef-initial", "0", "--train.magnet-coef-final", "0"]
        return f"magnet {args.magnet}", ["--train.magnet", args.magnet, *coef], off
    if args.explore is not None:
        on = ["--train.explore-share", str(args.explore)]
        return f"explore_share {args.explore:g}", on, ["--train.explore-share", "0"]
    if args.own_reach_cap is not None:
        on = ["--train.own-reach-cap", str(args.own_reach_cap)]
        return f"own_reach_cap {args.own_reach_cap:g}", on, ["--train.own-reach-cap", "0"]
    return None


def variant_cost(args: argparse.Namespace, name: str, on: list[str], off: list[str]) -> dict:
    """SPS with the variant over SPS without, the two trainers' epochs alternated (a noisy shared
    machine slows both alike); the median epoch of each."""
    trainers = {"plain": build_trainer(args.config, [*args.overrides, *off])}
    trainers["variant"] = build_trainer(args.config, [*args.overrides, *on])
    seconds: dict[str, list[float]] = {key: [] for key in trainers}
    for k in range(args.epochs + 1):  # the first round warms up
        for key, trainer in trainers.items():
            elapsed = trainer.train_epoch()["perf/epoch_seconds"]
            if k:
                seconds[key].append(elapsed)
    batch = trainers["plain"].cfg.train.batch_size
    sps = {key: batch / statistics.median(times) for key, times in seconds.items()}
    figures = {"variant": name, "sps_plain": sps["plain"], "sps_variant": sps["variant"]}
    figures.update(ratio=sps["variant"] / sps["plain"], epochs=args.epochs, config=args.config)
    print_table(
        f"the cost of {name} ({args.config}, epochs alternated)",
        [
            (f"learner decisions/s without {name}", f"{sps['plain']:,.0f}", ""),
            ("learner decisions/s with it", f"{sps['variant']:,.0f}", ""),
            ("ratio", f"{figures['ratio']:.3f}", ">= 0.9"),
        ],
    )
    return figures


def run(args: argparse.Namespace) -> dict:
    compared = variant(args)
    if compared is not None:
        return variant_cost(args, *compared)
    trainer = build_trainer(args.config, args.overrides)
    t, device = trainer.cfg.train, trainer.device
    trainer.train_epoch()  # warm-up (allocations, thread pools, compilation)
    split = epoch_split([trainer.train_epoch() for _ in range(args.epochs)])
    rollout = rollout_compute_seconds(trainer, t.batch_size // trainer.env.num_games)
    batch = trainer.learner.buffer.pack(t.gamma, t.gae_lambda)
    params, coefs = trainer.sampler.params_tensor(device), trainer.loss_coefs()
    update = timed(device, lambda: trainer.learner.updater.update(batch, params, coefs, trainer.learner.generator))
    compiled = trainer.learner.updater.compiled
    figures = {
        "sps": t.batch_size / split["epoch_seconds"],
        **split,
        "compute_seconds": rollout + update,
        "rollout_compute_seconds": rollout,
        "update_compute_seconds": update,
        "overhead_ratio": split["epoch_seconds"] / (rollout + update),
        "batch_size": t.batch_size,
        "num_games": trainer.env.num_games,
        "env_threads": trainer.cfg.env.num_threads,
        "torch_threads": torch.get_num_threads(),
        "compiled": compiled,
        "device": str(device),
        "config": args.config,
    }
    print_table(
        f"training throughput ({args.config}, {device}, compile {'on' if compiled else 'off'})",
        [
            ("learner decisions/s (end to end)", f"{figures['sps']:,.0f}", SPS_TARGET.get(device.type, "")),
            *split_rows(split),
            ("model compute alone (rollout step + update)", f"{rollout:.3f} + {update:.3f} s", ""),
            ("overhead ratio", f"{figures['overhead_ratio']:.2f}", "<= 2.0"),
        ],
    )
    return figures
