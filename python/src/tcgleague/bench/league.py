"""league: learner decisions/s with league training against a pool of frozen members (plus
self-play and bot games) next to pure self-play, measured side by side in one process with
alternating epochs (the machine is shared and noisy); then what one candidate's evaluation
matches cost (vs the champion, greedy and the verification members), in seconds and in league
epochs: the league pays it every checkpoint_add_interval epochs; then the learner's epoch on
candidate epochs (a candidate every epoch) with those matches inline and in the background
([league] evaluation), side by side in alternating blocks of epochs."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator

import torch

from ..trainer import Trainer
from .common import GraphRecordings, build_trainer, epoch_split, print_table, split_rows

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--members", type=int, default=8, help="frozen members in the pool")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per mode (after one warm-up each)")
    p.add_argument(
        "--candidate-epochs",
        type=int,
        default=4,
        help="timed candidate epochs per evaluation mode, inline and background, in alternating blocks of 2",
    )


def fill_pool(trainer, members: int) -> None:
    """Ingests `members` perturbed copies of the learner as frozen members (no matches played)."""
    league = trainer.opponents
    generator = torch.Generator().manual_seed(7)
    for k in range(members):
        state = {
            name: t + 0.01 * torch.randn(t.shape, generator=generator).to(t.device) if t.is_floating_point() else t
            for name, t in trainer.policy.state_dict().items()
        }
        league.manager.ingest(
            f"bench{k}", state, trainer.policy.config.to_dict(), trainer.sampler.get_sampling_params()
        )
    league.sync_pool()


def timed_candidate(trainer) -> tuple[float, int]:
    """Seconds of one candidate's evaluation matches - the learner, ingested as a candidate,
    plays the champion (the oldest filler member: a running league has one), the baselines and
    [league] verification_members members - and the games its promotion decision rests on."""
    league, module = trainer.opponents, trainer.policy
    league.manager.champion = league.manager.pool_ids()[0]
    league.manager.ingest(
        "bench_candidate", module.state_dict(), module.config.to_dict(), trainer.sampler.get_sampling_params()
    )
    start = time.perf_counter()
    decision = league.manager.evaluate("bench_candidate")
    seconds = time.perf_counter() - start
    played = [decision.vs_champion or (), *decision.vs_baselines.values()]
    return seconds, sum(sum(tally) for tally in played)


MODES = ("inline", "background")  # [league] evaluation, compared on candidate epochs
BLOCK = 2  # timed epochs of one mode in a row: a background epoch overlaps its predecessor's matches


def league_keys(members: int, interval: int) -> list[str]:
    """A league active from the start, bounded to `members` frozen members, a candidate every
    `interval` epochs."""
    return [
        "--league.enable",
        "true",
        "--league.activate-after-steps",
        "0",
        "--league.pool-size",
        str(members),
        "--league.keep-recent",
        "1",
        "--league.keep-old",
        "1",
        "--league.checkpoint-add-interval",
        str(interval),
    ]


def run(args: argparse.Namespace) -> dict:
    figures = throughput(args)
    if args.candidate_epochs > 0:
        figures.update(candidate_epochs(args))
    return figures


def throughput(args: argparse.Namespace) -> dict:
    """League vs self-play decisions/s, and one candidate's evaluation matches, timed alone."""
    recordings = GraphRecordings()
    selfplay = build_trainer(args.config, args.overrides)
    league = build_trainer(args.config, [*league_keys(args.members, 1_000_000_000), *args.overrides])
    fill_pool(league, args.members)
    for trainer in (selfplay, league):
        trainer.train_epoch()  # warm-up
    recorded = recordings.count
    epochs: dict[str, list[dict]] = {"selfplay": [], "league": []}
    for _ in range(args.epochs):  # alternating, so both meet the same machine
        epochs["selfplay"].append(selfplay.train_epoch())
        epochs["league"].append(league.train_epoch())
    split = {mode: epoch_split(metrics) for mode, metrics in epochs.items()}
    batch = selfplay.cfg.train.batch_size
    sps = {mode: batch / s["epoch_seconds"] for mode, s in split.items()}
    fractions = league.opponents.metrics()
    candidate_seconds, candidate_games = timed_candidate(league)
    candidate_epochs = candidate_seconds / split["league"]["epoch_seconds"]
    figures = {
        "sps_selfplay": sps["selfplay"],
        "sps_league": sps["league"],
        "ratio": sps["league"] / sps["selfplay"],
        "members": len(league.opponents.pool.ids()),
        "frozen_forwards": league.opponents.pool.forwards,
        "cudagraph_recordings_after_warmup": recordings.count - recorded if recordings.supported else None,
        "epochs": args.epochs,
        "candidate_seconds": candidate_seconds,
        "candidate_epochs": candidate_epochs,
        "candidate_games": candidate_games,
        "split": split,
        "device": str(league.device),
        **{k: v for k, v in fractions.items() if k.endswith("_fraction")},
    }
    print_table(
        f"league vs self-play throughput ({args.config}, {league.device}, {figures['members']} frozen members)",
        [
            ("self-play learner decisions/s", f"{sps['selfplay']:,.0f}", ""),
            ("league learner decisions/s", f"{sps['league']:,.0f}", ""),
            (
                "sps_league / sps_selfplay",
                f"{figures['ratio']:.2f}",
                ">= 0.80" if league.device.type == "cuda" else ">= 0.92",
            ),
            (
                "CUDA-graph recordings after warm-up (both)",
                "not reported by this torch" if not recordings.supported else str(recordings.count - recorded),
                "0",
            ),
            (
                "opponent shares (latest / frozen / bot)",
                " / ".join(
                    f"{fractions.get(f'league/{k}_fraction', 0.0):.2f}" for k in ("latest_opponent", "frozen", "bot")
                ),
                "",
            ),
            (
                "one candidate's evaluation matches (s / league epochs)",
                f"{candidate_seconds:.1f} / {candidate_epochs:.1f}",
                "",
            ),
        ],
    )
    for mode in ("selfplay", "league"):
        print_table(f"where a {mode} epoch goes", split_rows(split[mode]))
    return figures


def blocks(trainers: dict[str, Trainer], epochs: int) -> Iterator[tuple[str, dict]]:
    """(mode, metrics) of `epochs` timed epochs per mode, BLOCK at a time, modes alternating.
    A background block starts with an untimed epoch (nothing playing beside it yet) and ends by
    waiting for its last candidate's matches, so neither mode's epochs meet the other's worker."""
    for _ in range(-(-epochs // BLOCK)):
        for mode, trainer in trainers.items():
            if mode == "background":
                trainer.train_epoch()
            for _ in range(BLOCK):
                yield mode, trainer.train_epoch()
            trainer.opponents.epoch_work.wait()


def candidate_epochs(args: argparse.Namespace) -> dict:
    """The learner's epoch seconds when a candidate is due every epoch (vs the champion - a
    filler member at first - the baselines and the verification members), with its matches
    inline and in the background; the main thread's share of the matches and the join's wait."""
    trainers = {}
    for mode in MODES:
        keys = [*league_keys(args.members, 1), "--league.evaluation", mode]
        trainers[mode] = trainer = build_trainer(args.config, [*keys, *args.overrides])
        fill_pool(trainer, args.members)
        trainer.opponents.manager.champion = trainer.opponents.manager.pool_ids()[0]
        trainer.train_epoch()  # warm-up
        trainer.opponents.epoch_work.wait()
    epochs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for mode, metrics in blocks(trainers, args.candidate_epochs):
        if len(epochs[mode]) < args.candidate_epochs:
            epochs[mode].append(metrics)
    split = {mode: epoch_split(metrics) for mode, metrics in epochs.items()}
    wait = {mode: sum(m["perf/league_matches_wait_seconds"] for m in ms) / len(ms) for mode, ms in epochs.items()}
    seconds = {mode: split[mode]["epoch_seconds"] for mode in MODES}
    figures = {
        "candidate_epoch_seconds": seconds,
        "candidate_epoch_ratio": seconds["background"] / seconds["inline"],
        "candidate_matches_seconds": {mode: split[mode]["matches_seconds"] for mode in MODES},
        "candidate_wait_seconds": wait,
        "candidate_split": split,
        "candidate_epochs_timed": args.candidate_epochs,
        "candidate_decisions": {mode: len(t.opponents.manager.decisions) for mode, t in trainers.items()},
    }
    device = trainers["inline"].device
    print_table(
        f"the learner's epoch on candidate epochs: evaluation inline vs background ({args.config}, {device})",
        [
            ("epoch seconds inline / background", f"{seconds['inline']:.3f} / {seconds['background']:.3f}", ""),
            ("background / inline", f"{figures['candidate_epoch_ratio']:.2f}", "< 1"),
            (
                "main thread's candidate work inline / background (s)",
                " / ".join(f"{figures['candidate_matches_seconds'][mode]:.3f}" for mode in MODES),
                "",
            ),
            ("  of which the join's wait (background, s)", f"{wait['background']:.3f}", ""),
        ],
    )
    return figures
