"""replay: what recording costs the game runner - the same match played without a replay
recorder, with one taking K of its games (as `evaluate_checkpoint --replays K` and a league's
promotion match do) and with one taking every game, side by side.

The kinds of run alternate (their order rotates each round, so a machine warming up or a
neighbour's load falls on all alike), on the same deals and seeds; the figures are the ratios
of their summed times to the plain runs' (target for K games: at most 1.20). A recorded run's
time includes writing its games up (Emberfront's `ReplayRecorder.games()`: one batched policy pass over the
recorded decisions for the probabilities of every alternative, and each game re-played from its
deal to draw its boards), so recording every game costs what that pass and those re-plays do.
A checkpoint's policy plays, or without one a fresh policy of the config's architecture (the
cost of a decision does not depend on its weights), against its game's baseline bot (greedy), on the CPU as
evaluate_checkpoint plays."""

from __future__ import annotations

import argparse
import time

import torch

from ..build import build_policy
from ..checkpoint import load_checkpoint
from ..checkpoint.deployed import checkpoint_sampler
from ..config import load_config
from ..errors import ArgumentError
from ..fingerprint import checkpoint_game
from ..game import Game, game_named, game_of
from ..match import policy_side
from .common import print_table

TARGET_RATIO = 1.20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", help="a checkpoint to play (default: a fresh policy of --config)")
    p.add_argument("--config", default="configs/default.ini", help="the architecture without --checkpoint")
    p.add_argument("--opponent", help="the bot it plays (default: the game's baseline, Emberfront's greedy)")
    p.add_argument("--games", type=int, default=64, help="games per match (default 64)")
    p.add_argument("--record", type=int, default=4, metavar="K", help="games recorded in the K-game runs (default 4)")
    p.add_argument("--rounds", type=int, default=3, help="matches of each kind, alternated (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default, as evaluate_checkpoint)")


def policy_and_sampler(args: argparse.Namespace) -> tuple[Game, object, object]:
    """The game, the policy and its sampler: the checkpoint's, or a fresh one of the config's."""
    if args.checkpoint:
        loaded = load_checkpoint(args.checkpoint, policy_config=None)
        return game_named(checkpoint_game(loaded.state)), loaded.policy.eval(), checkpoint_sampler(loaded)
    cfg = load_config(args.config, [])
    return game_of(cfg), build_policy(cfg, args.seed).eval(), game_of(cfg).sampler(cfg)


def run(args: argparse.Namespace) -> dict:
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    game, policy, sampler = policy_and_sampler(args)
    runner = game.runner
    if runner.recorder is None:
        raise ArgumentError(f"bench replay: {game.name}'s games are not recorded (no Runner.recorder)")
    args.opponent = args.opponent or runner.baseline
    if args.opponent not in runner.panel:
        raise ArgumentError(f"--opponent {args.opponent}: {game.name}'s bots are {' | '.join(runner.panel)}")
    kinds = {"plain": 0, "k_games": min(args.record, args.games), "all_games": args.games}

    def match(recorded: int) -> tuple[float, list]:
        recorder = runner.recorder(recorded, ("policy", args.opponent)) if recorded else None
        start = time.perf_counter()
        report = runner.play(
            policy_side(policy, sampler, args.seed), runner.bot_side(args.opponent, args.seed), args.games, args.seed,
            recorder=recorder,
        )  # fmt: skip
        if recorder is not None:
            recorder.games()  # the write-up is part of what recording costs
        return time.perf_counter() - start, report.records

    _, plain_records = match(0)  # warm-up: allocator, caches, lazy imports
    seconds = dict.fromkeys(kinds, 0.0)
    names = list(kinds)
    for k in range(args.rounds):
        for name in names[k % 3 :] + names[: k % 3]:
            took, records = match(kinds[name])
            seconds[name] += took
            if records != plain_records:
                raise RuntimeError(f"a recorded match ({name}) played differently from the plain one")
    figures = {
        "threads": torch.get_num_threads(),
        "games": args.games,
        "recorded_k": kinds["k_games"],
        "rounds": args.rounds,
        "target_ratio": TARGET_RATIO,
    }
    figures.update({f"seconds_{name}": seconds[name] / args.rounds for name in kinds})
    figures.update({f"ratio_{name}": seconds[name] / seconds["plain"] for name in ("k_games", "all_games")})
    print_table(
        f"replay: a {args.games}-game match vs {args.opponent}, recorded or not ({args.rounds} rounds, alternated)",
        [
            ("seconds per match, plain", f"{figures['seconds_plain']:.2f}", ""),
            (f"seconds per match, {kinds['k_games']} games recorded", f"{figures['seconds_k_games']:.2f}", ""),
            ("seconds per match, every game recorded", f"{figures['seconds_all_games']:.2f}", ""),
            (
                f"ratio {kinds['k_games']} games recorded / plain",
                f"{figures['ratio_k_games']:.3f}",
                f"<= {TARGET_RATIO:.2f}",
            ),
            ("ratio every game recorded / plain", f"{figures['ratio_all_games']:.3f}", ""),
        ],
    )
    return figures
