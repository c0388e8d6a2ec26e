"""`python -m tcgleague.evaluate_checkpoint CHECKPOINT [--opponent BOT|PATH] ...`: plays a
checkpoint in the duplicate format in its own game's matches (game.py's Runner: Emberfront's, or
Leduc / Kuhn poker's) and reports W/L/D, the win rate with a Wilson interval, mean length,
entropy and per-seat / turn-order tables: on Emberfront also the noop rate and per-deck tables;
on poker the chips per game and OpenSpiel's exact exploitability of the checkpoint.

The checkpoint is loaded through checkpoint.load_checkpoint, the very function resume uses, so
it is accepted or refused exactly as `train.py --resume-checkpoint` would (same messages). The
sampler is set to the checkpoint's annealed values (its primary temperature, and the
subaction temperature and smoothing at its step), unless --argmax or --temperature T is given.
Games are played at the checkpoint's own [env] turn_cap, as its training evaluation was.
With --lookahead [W] an Emberfront checkpoint searches a turn ahead before each move (search.py).

With --panel it plays a held-out panel instead of one opponent: its game's bots (Emberfront:
random, greedy and lookahead_greedy, the greedy heuristic judging each move a turn ahead, which
no training meets; poker: random and call) and every --panel-member checkpoint, each exactly as
`--opponent X` alone would play it (same seed, same games), and reports each win rate with the
panel's mean and worst.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from .checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint
from .checkpoint.deployed import checkpoint_sampler, checkpoint_turn_cap
from .errors import ArgumentError, entry_point, output_file, write_report
from .fingerprint import checkpoint_game
from .game import Game, game_named
from .league.mixture import deployed_side, is_mixture
from .match import ActorFactory, MatchRecorder
from .replay import replay_document, write_replays
from .replay.viewer import RUN_REPLAYS
from .report.panels import log_evaluation
from .rng import stream_seed
from .search import add_lookahead_argument


def evaluate_loaded(
    loaded: LoadedCheckpoint,
    opponent: str,
    episodes: int,
    seed: int,
    argmax: bool = False,
    temperature: float | None = None,
    parallel: int = 256,
    strict: bool = False,
    log=print,
    lookahead: float | None = None,
    recorder: MatchRecorder | None = None,
) -> dict:
    """Evaluates a loaded checkpoint in its game's matches; returns the JSON-ready report
    (match.MatchReport.summary plus what was evaluated). `opponent` is one of the game's bots
    (Runner.panel) or a checkpoint path; with `lookahead` (a value weight) the checkpoint
    searches a turn ahead. A `recorder` (the game's: Game.recorder) records games of the very
    match played."""
    game = checkpoint_of_game(loaded)
    if lookahead is not None and game.search is None:
        raise ArgumentError(
            f"--lookahead searches a turn ahead where the game has a search (Game.search); {game.name} has no lookahead"
        )
    if recorder is not None and game.runner.recorder is None:
        raise ArgumentError(f"--replays: the replay viewer does not draw {game.name} games yet")
    if is_mixture(loaded.state) and (lookahead is not None or temperature is not None):
        raise ArgumentError("--lookahead and --temperature take one policy, not a league mixture")
    sampler = checkpoint_sampler(loaded, temperature)
    learner = deployed_side(loaded, seed, argmax, sampler, log=log)
    searchers: list = []  # the search actors made, to read their counters after the match
    if lookahead is not None:
        learner = game.search(learner, seed, lookahead, searchers)
    opp, opp_info = opponent_side(game, opponent, stream_seed(seed, "second_side"), strict, log)
    turn_cap = checkpoint_turn_cap(loaded)
    start = time.perf_counter()
    recording = {} if recorder is None else {"recorder": recorder}
    report = game.runner.play(learner, opp, episodes, seed, parallel=parallel, turn_cap=turn_cap, **recording)
    out = report.summary()
    out.update(opp_info)
    out.update(
        checkpoint=str(loaded.path),
        game=game.name,
        global_step=loaded.global_step,
        epoch=int(loaded.state["epoch"]),
        seed=seed,
        turn_cap=turn_cap,
        points_per_game=report.reward_per_game,
        argmax=argmax,
        lookahead=lookahead,
        lookahead_searched=sum(a.searched for a in searchers),
        lookahead_overridden=sum(a.overridden for a in searchers),
        sampling_params=sampler.get_sampling_params(),
        warnings=list(loaded.warnings),
        seconds=time.perf_counter() - start,
    )
    return out


def checkpoint_of_game(loaded: LoadedCheckpoint) -> Game:
    """The game a loaded checkpoint plays (its fingerprint's)."""
    return game_named(checkpoint_game(loaded.state))


def opponent_side(game: Game, opponent: str, seed: int, strict: bool = False, log=print) -> tuple[ActorFactory, dict]:
    """The match side of `opponent` (one of `game`'s bots, or a checkpoint path of the same
    game played with its annealed sampler), sampling from `seed`, and what the report says."""
    info = {"opponent": opponent}
    if opponent in game.runner.panel:
        return game.runner.bot_side(opponent, seed), info
    if not Path(opponent).is_file():
        raise CheckpointError(
            f"--opponent {opponent}: neither a bot of {game.name} ({', '.join(game.runner.panel)}) nor a checkpoint file"
        )
    other = load_checkpoint(opponent, policy_config=None, strict=strict, log=log, game=game.name)
    side = deployed_side(other, seed, name=str(other.path), log=log)
    info.update(opponent_global_step=other.global_step, opponent_epoch=int(other.state["epoch"]))
    return side, info


def replay_names(checkpoint: str | Path, opponent: str) -> tuple[str, str]:
    """The learner's and the opponent's names in a replay: file stems, or the bot's name."""
    learner, opponent = Path(checkpoint).stem, Path(opponent).stem
    return learner, opponent if opponent != learner else f"{opponent} (opponent)"


def replays_dir(args: argparse.Namespace, loaded: LoadedCheckpoint) -> Path:
    """--replays-out, or `<the checkpoint's folder>/replays/<checkpoint>_vs_<opponent>_seed<S>`
    (where the run report finds a run's recordings: replay.viewer.RUN_REPLAYS)."""
    if args.replays_out is not None:
        return args.replays_out
    name = f"{loaded.path.stem}_vs_{Path(args.opponent).stem}_seed{args.seed}"
    return loaded.path.resolve().parent / RUN_REPLAYS / name


def save_replays(report: dict, recorder: MatchRecorder, out: Path) -> Path:
    """The games `recorder` recorded during the evaluation `report` as `out/replays.json` and
    `out/viewer.html`; the viewer's path."""
    about = {k: report[k] for k in ("checkpoint", "opponent", "global_step", "seed", "turn_cap", "lookahead")}
    learner, opponent = recorder.names
    title = f"{learner} vs {opponent}: {report['episodes']} games, win rate {report['winrate']:.3f}"
    return write_replays(out, replay_document(recorder.games(), title=title, **about))


def evaluate_panel(loaded: LoadedCheckpoint, members: list[str], episodes: int, seed: int, **options) -> dict:
    """The checkpoint vs the held-out panel: every bot of its game (Runner.panel), then each of `members`
    (checkpoint paths), each match by `evaluate_loaded` with the same `seed`, `episodes` and
    `options`, so each entry is the report `--opponent X` alone gives. Adds the panel's mean
    and worst win rate."""
    bots = checkpoint_of_game(loaded).runner.panel
    reports = [evaluate_loaded(loaded, opponent, episodes, seed, **options) for opponent in (*bots, *members)]
    worst = min(reports, key=lambda r: r["winrate"])
    return {
        "checkpoint": str(loaded.path),
        "global_step": loaded.global_step,
        "epoch": int(loaded.state["epoch"]),
        "seed": seed,
        "episodes": episodes,
        "panel": reports,
        "mean_winrate": sum(r["winrate"] for r in reports) / len(reports),
        "worst_winrate": worst["winrate"],
        "worst_opponent": worst["opponent"],
        "seconds": sum(r["seconds"] for r in reports),
    }


def tally_cells(row: dict, games: int) -> list[str]:
    """A report row's games, W, L, D, win rate and Wilson interval, as table cells."""
    interval = f"[{row['wilson_low']:.3f}, {row['wilson_high']:.3f}]"
    return [str(games), str(row["wins"]), str(row["losses"]), str(row["draws"]), f"{row['winrate']:.3f}", interval]


def print_panel(r: dict, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(
        title=f"{r['checkpoint']} (epoch {r['epoch']}, global_step {r['global_step']:,}) vs the held-out panel"
    )
    unit = game_named(r["panel"][0]["game"]).points_unit
    table.add_column("opponent", overflow="fold")  # a member's whole path
    for col in ("games", "W", "L", "D", "win rate", "Wilson 95%", *([f"{unit}/game"] if unit else [])):
        table.add_column(col, justify="right")
    points = (lambda v: [f"{v['points_per_game']:+.3f}"]) if unit else (lambda v: [])
    for v in r["panel"]:
        table.add_row(v["opponent"], *tally_cells(v, v["episodes"]), *points(v))
    table.add_row("panel mean", "", "", "", "", f"{r['mean_winrate']:.3f}", "")
    table.add_row(f"panel worst ({r['worst_opponent']})", "", "", "", "", f"{r['worst_winrate']:.3f}", "")
    console.print(table)


def print_report(r: dict, console: Console | None = None) -> None:
    console = console or Console()
    mode = "argmax" if r["argmax"] else ", ".join(f"{k} {v:.3g}" for k, v in r["sampling_params"].items())
    if r.get("lookahead") is not None:
        mode += (
            f"; lookahead {r['lookahead']:g} (searched {r['lookahead_searched']:,} decisions, "
            f"changed {r['lookahead_overridden']:,})"
        )
    console.print(
        f"[bold]{r['checkpoint']}[/bold] (epoch {r['epoch']}, global_step {r['global_step']:,}) "
        f"vs [bold]{r['opponent']}[/bold]; sampler: {mode}"
    )
    console.print(
        f"{r['episodes']} games: W {r['wins']} / L {r['losses']} / D {r['draws']}   win rate "
        f"[bold]{r['winrate']:.3f}[/bold]  (95% Wilson [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}])"
    )
    unit = game_named(r["game"]).points_unit
    if unit is not None:  # a game scored in points: no decks, turns or noops, one line
        console.print(
            f"{r['points_per_game']:+.3f} {unit} per game; mean length {r['mean_length']:.1f} decisions, "
            f"entropy {r['entropy']:.3f}"
        )
    else:
        console.print(
            f"mean length {r['mean_length']:.1f} decisions ({r['mean_turns']:.1f} turns), truncated "
            f"{r['truncation_rate']:.1%}, entropy {r['entropy']:.3f}, noop rate {r['noop_rate']:.3f}"
        )
    tables = (
        ("per deck (the learner's)", "per_deck"),
        ("per seat (the learner's)", "per_seat"),
        ("per turn order", "per_turn_order"),
    )
    for title, key in tables[1:] if unit is not None else tables:
        table = Table(title=title)
        for col in ("", "games", "W", "L", "D", "win rate", "Wilson 95%"):
            table.add_column(col, justify="right" if col else "left")
        for name, v in r[key].items():
            table.add_row(str(name), *tally_cells(v, v["games"]))
        console.print(table)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python evaluate_checkpoint.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("checkpoint", nargs="?", help="a model_<run>_<epoch>.pt file (or give it as --checkpoint)")
    p.add_argument("--checkpoint", dest="checkpoint_flag", metavar="PATH", help="the same, as a flag")
    p.add_argument(
        "--opponent",
        help="one of the checkpoint's game's bots (Emberfront: random | greedy | lookahead_greedy; Leduc, Kuhn: "
        "random | call) or another checkpoint's path (default: the game's baseline, greedy or call)",
    )
    p.add_argument(
        "--panel",
        action="store_true",
        help="play the held-out panel instead of one opponent: every bot of the checkpoint's game and every "
        "--panel-member",
    )
    p.add_argument(
        "--panel-member", action="append", default=[], metavar="PATH", help="a checkpoint in the panel (repeatable)"
    )
    p.add_argument("--episodes", type=int, default=1000, help="games (rounded up to whole deals of 2; default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the pre-generated deals and the sampling (default 0)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--argmax", action="store_true", help="take the most likely action at every stage")
    mode.add_argument(
        "--temperature", type=float, metavar="T", help="sample at temperature T at every stage, without smoothing"
    )
    add_lookahead_argument(p, "the checkpoint")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse a checkpoint whose behaviour-defining sources changed (as --resume-strict)",
    )
    p.add_argument("--parallel", type=int, default=256, help="concurrent games (default 256)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--json", type=Path, metavar="OUT", help="write the report to this JSON file")
    p.add_argument(
        "--wandb",
        action="store_true",
        help="also log the report to W&B as an evaluation run (offline without an API key; files under the "
        "checkpoint's directory, wandb/)",
    )
    p.add_argument("--replays", type=int, default=0, metavar="K", help="record K of the games played (replay viewer)")
    p.add_argument(
        "--replays-out",
        type=Path,
        metavar="DIR",
        help="where --replays writes replays.json and viewer.html (default: <checkpoint folder>/replays/<names>)",
    )
    args = p.parse_args(argv)
    if (args.checkpoint is None) == (args.checkpoint_flag is None):
        p.error("give the checkpoint once: as the positional CHECKPOINT or as --checkpoint PATH")
    args.checkpoint = args.checkpoint or args.checkpoint_flag
    if args.episodes < 1:
        p.error("--episodes must be >= 1")
    if args.parallel < 1:
        p.error("--parallel must be >= 1")
    if args.seed < 0:
        p.error("--seed must be >= 0")
    if args.temperature is not None and not args.temperature > 0:
        p.error("--temperature must be > 0")
    if args.panel and (args.opponent is not None or args.wandb):
        p.error("--panel plays its own opponents and reports them together: not with --opponent or --wandb")
    if args.panel_member and not args.panel:
        p.error("--panel-member needs --panel")
    if not 0 <= args.replays <= 2 * math.ceil(args.episodes / 2):
        p.error(f"--replays K must be between 0 and the games played ({2 * math.ceil(args.episodes / 2)})")
    if args.replays and args.panel:
        p.error("--replays records one match: not with --panel")
    if args.replays_out is not None and (not args.replays or args.replays_out.is_file()):
        p.error("--replays-out DIR needs --replays K, and DIR must not be a file")
    return args


@entry_point("evaluate_checkpoint")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    output_file(args.json, "--json")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    loaded = load_checkpoint(args.checkpoint, policy_config=None, strict=args.strict, mixture_ok=True)
    game = checkpoint_of_game(loaded)
    args.opponent = args.opponent or game.runner.baseline
    if args.wandb and not os.access(loaded.path.resolve().parent, os.W_OK):
        raise ArgumentError(f"--wandb: the checkpoint's directory {loaded.path.parent} is not writable")
    options = dict(
        argmax=args.argmax,
        temperature=args.temperature,
        parallel=args.parallel,
        strict=args.strict,
        lookahead=args.lookahead,
    )
    if args.panel:
        for member in args.panel_member:  # every input checked before the first game
            if not Path(member).is_file():
                raise ArgumentError(f"--panel-member {member}: not a checkpoint file")
        report = evaluate_panel(loaded, args.panel_member, args.episodes, args.seed, **options)
        print_panel(report)
    else:
        names = replay_names(args.checkpoint, args.opponent)
        recorder = game.runner.recorder(args.replays, names) if args.replays and game.runner.recorder else None
        report = evaluate_loaded(loaded, args.opponent, args.episodes, args.seed, recorder=recorder, **options)
        print_report(report)
        if args.replays:
            print(f"wrote {save_replays(report, recorder, replays_dir(args, loaded))} ({args.replays} games)")
    if game.judge is not None:
        report["exact"] = asdict(game.judge(loaded.path))
        print(
            f"exact exploitability {report['exact']['exploitability']:.4f} {game.points_unit} per game "
            f"(OpenSpiel's best response; NashConv {report['exact']['nash_conv']:.4f})"
        )
    write_report(args.json, report)
    if args.wandb:
        print(f"logged to W&B: {log_evaluation(report, Path(args.checkpoint).resolve().parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
