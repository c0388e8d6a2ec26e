"""league: learner decisions/s with league training against a pool of frozen members (plus
self-play and bot games) next to pure self-play, measured side by side in one process with
alternating epochs (the machine is shared and noisy); then what one candidate's evaluation
matches cost (vs the champion, greedy and the verification members), in seconds and in league
epochs: the league pays it every checkpoint_add_interval epochs."""

from __future__ import annotations

import argparse
import time

import torch

from .common import build_trainer, epoch_split, print_table, split_rows

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--members", type=int, default=8, help="frozen members in the pool")
    p.add_argument("--epochs", type=int, default=3, help="timed epochs per mode (after one warm-up each)")


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


def run(args: argparse.Namespace) -> dict:
    league_keys = [
        "--league.enable",
        "true",
        "--league.activate-after-steps",
        "0",
        "--league.pool-size",
        str(args.members),
        "--league.keep-recent",
        "1",
        "--league.keep-old",
        "1",
        "--league.checkpoint-add-interval",
        "1000000000",
    ]
    selfplay = build_trainer(args.config, args.overrides)
    league = build_trainer(args.config, [*league_keys, *args.overrides])
    fill_pool(league, args.members)
    for trainer in (selfplay, league):
        trainer.train_epoch()  # warm-up
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
                ">= 0.90" if league.device.type == "cuda" else ">= 0.80",
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
