"""learn: does training learn? Trains a config (default configs/default.ini) for --steps learner
steps (or for --minutes of wall time), evaluating vs the bots every --eval-every steps on the
way (the learning curve), then evaluates the final checkpoint through evaluate_checkpoint's
core (same load-and-validate path) vs random and greedy over --episodes duplicate games each:
as the policy plays, and again searching a turn ahead (--lookahead W, search.py; figures
suffixed `_lookahead`; 0 = not).

With --league, the league (--league-config) and the self-play baseline (--config) train with
the same seed and steps, and their final checkpoints play each other (--episodes duplicate
games): does the league pay for itself? Learning is compared per step, not per minute. The two
trainings run side by side (--jobs 2, each process with half the cores' torch threads): on our
2-core CPU two one-thread trainings make about 1.7x the steps per second of one two-thread
training, whose second thread adds little to a step that is mostly the single-threaded engine.

A run cut short continues with the same command plus `--resume RUN_DIR` for each training's
run directory (learn_resume.py)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from ..average import AVERAGE_FILE
from ..build import build_trainer, policy_config
from ..checkpoint import CheckpointError, load_checkpoint
from ..config import Config, config_from_dict, load_config
from ..errors import ArgumentError
from ..evaluate_checkpoint import evaluate_loaded, evaluate_panel
from ..exploit.cli import DEFAULT_STEPS
from ..exploit.cli import execute as execute_exploit
from ..game import game_of
from ..league.mixture import MIXTURE_FILE
from ..logger import METRICS_FILE, RunLogger
from ..match import Runner
from ..report.data import read_metrics
from ..resume import ResumeOptions, apply_resume
from ..search import DEFAULT_VALUE_WEIGHT, is_value_weight
from ..train import checkpoint_writer
from .common import print_table
from .learn_exact import final_figures, head_to_head, judged_exactly, league_rows
from .learn_exact import rows_of as exact_rows
from .learn_resume import Continuation, begin, learning_differences, plan_continuations

ACCEPTS_OVERRIDES = True  # extra --section.key value arguments override the config
LOOKAHEAD_SUFFIX = "_lookahead"  # the figures of the final checkpoint searching a turn ahead
# the command line's overrides a best response keeps (where runs go, how many threads, the device)
SHARED_OVERRIDES = ("--base.experiments-dir", "--base.torch-threads", "--base.device")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.ini")
    p.add_argument("--steps", type=int, help="learner steps to train (default: the config's total_timesteps)")
    p.add_argument("--minutes", type=float, help="stop after the epoch that crosses this wall time instead")
    p.add_argument("--eval-every", type=int, default=1_000_000, help="curve point every N steps (0 = none)")
    p.add_argument("--curve-episodes", type=int, default=256, help="duplicate games per curve point and bot")
    p.add_argument("--episodes", type=int, default=1000, help="duplicate games per final evaluation (default 1000)")
    p.add_argument("--seed", type=int, default=12345, help="evaluation seed (the deals)")
    p.add_argument("--league", action="store_true", help="train the league and the self-play baseline")
    p.add_argument("--league-config", help="the league's config (default: --config with [league] enable = true)")
    p.add_argument("--jobs", type=int, default=2, help="with --league: trainings at a time (1 = one after the other)")
    p.add_argument(
        "--lookahead",
        type=float,
        default=DEFAULT_VALUE_WEIGHT,
        metavar="W",
        help=f"also evaluate the final checkpoint searching a turn ahead at value weight W (default "
        f"{DEFAULT_VALUE_WEIGHT:g}; 0 = not)",
    )
    p.add_argument(
        "--exploit-steps",
        type=int,
        default=DEFAULT_STEPS,
        help=f"with --league: a best response of this many steps against each final (tcgleague.exploit; default "
        f"{DEFAULT_STEPS:,}, about 20 minutes each on our CPU; 0 = none)",
    )
    p.add_argument("--exploit-config", default="configs/default.ini", help="the best responses' config")
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="JSON",
        help="with --league: reuse the self-play side (final, best response, panel) of this earlier --json file "
        "instead of training it again: every lever screened against one baseline trains it once (refused unless "
        "it trained this command's self-play config and was judged the same way)",
    )
    p.add_argument("--label", default="", help="what this run changes (the experiments table's first column)")
    p.add_argument(
        "--resume",
        action="append",
        default=[],
        type=Path,
        metavar="RUN_DIR",
        help="continue an interrupted run of this command from RUN_DIR's newest checkpoint, exactly; with "
        "--league give both trainings' run directories (each checkpoint's config says which it is)",
    )


def side_by_side_threads(args: argparse.Namespace) -> list[str]:
    """With --league and --jobs > 1 each process takes its share of the cores' torch threads."""
    if not (args.league and args.jobs > 1):
        return []
    return ["--base.torch-threads", str(max(1, (os.cpu_count() or 1) // args.jobs))]


def bench_config(config: str, args: argparse.Namespace, league: bool) -> Config:
    """`config` as this command trains it: the overrides, --steps, the curve's interval (in
    epochs) and games, no dashboard or W&B, and with --league each of --jobs processes its share
    of the cores (alone, a training keeps the config's torch_threads)."""
    overrides = ["--train.dashboard", "false", "--wandb.enable", "false", *side_by_side_threads(args), *args.overrides]
    overrides += ["--league.enable", "true"] if league else []
    overrides += ["--train.total-timesteps", str(args.steps)] if args.steps else []
    data = load_config(config, overrides).to_dict()
    train = data["train"]
    train["eval_interval"] = max(1, args.eval_every // train["batch_size"]) if args.eval_every else 0  # 0: no curve
    train["eval_games"] = args.curve_episodes
    return config_from_dict(data)


def train_one(
    cfg: Config, config: str, args: argparse.Namespace, tag: str, continuation: Continuation | None = None
) -> dict:
    """Trains `cfg` (`bench_config` of the file `config`; continuing an interrupted run when
    given) and returns its figures: the curve, and the final checkpoint vs the bots."""
    run_dir = Path(cfg.base.experiments_dir) / f"{cfg.base.run_name}_{tag}{int(time.time())}{uuid.uuid4().hex[:4]}"
    run_dir.mkdir(parents=True, exist_ok=True)
    if continuation is not None:
        begin(run_dir, continuation)
    logger = RunLogger(run_dir, cfg.to_dict(), cfg.wandb, run_dir.name)  # metrics.jsonl: the learning curve
    trainer = build_trainer(cfg, run_dir, logger)
    earlier_minutes = 0.0
    if continuation is not None:
        path = continuation.checkpoint
        loaded = load_checkpoint(path, policy_config(cfg), run_state=True, game=cfg.env.game)
        apply_resume(trainer, loaded, ResumeOptions(str(path), load_optimizer=True))
        earlier_minutes = continuation.minutes
    final: list[Path] = []
    write = checkpoint_writer(run_dir, cfg)
    start = time.perf_counter()
    max_seconds = max(0.0, args.minutes - earlier_minutes) * 60.0 if args.minutes else None
    trainer.train(checkpoint_fn=lambda tr: final.append(write(tr)), max_seconds=max_seconds)
    logger.close()
    minutes = (time.perf_counter() - start) / 60.0 + earlier_minutes
    print(f"{tag}: {trainer.global_step:,} steps ({trainer.epoch} epochs) in {minutes:.1f} min; {final[-1]}")
    figures = {"steps": trainer.global_step, "epochs": trainer.epoch, "minutes": minutes, "config": config}
    runner = game_of(cfg).runner
    figures.update(
        checkpoint=str(final[-1]), run_dir=str(run_dir), **run_figures(read_metrics(run_dir / METRICS_FILE), runner)
    )
    figures["resumed_from"] = str(continuation.checkpoint) if continuation else None
    delivered = deliverable_of(cfg, run_dir, final[-1])
    figures["deliverable"] = str(delivered)  # what the run hands its user: every judge below takes it
    if judged_exactly(cfg):
        mixture = delivered if delivered != final[-1] else None
        figures.update(final_figures(final[-1], read_metrics(run_dir / METRICS_FILE), mixture))
        return figures
    deliverable = load_checkpoint(figures["deliverable"], mixture_ok=True)
    for bot in runner.bots:
        figures.update(bot_figures(evaluate_loaded(deliverable, bot, args.episodes, args.seed), bot))
        if args.lookahead:
            r = evaluate_loaded(deliverable, bot, args.episodes, args.seed, lookahead=args.lookahead)
            figures.update(bot_figures(r, bot, LOOKAHEAD_SUFFIX))
    figures["lookahead"] = args.lookahead or None
    return figures


def deliverable_of(cfg: Config, run_dir: Path, final: Path) -> Path:
    """What a run hands its user: the league's Nash mixture (league_policy.pt) where [league]
    deliverable = nash_mixture, else the average policy (average_policy.pt) where [train] keeps
    one (average_snapshots > 0: CFR's and fictitious play's deliverable), else its final checkpoint."""
    for name, delivered in ((MIXTURE_FILE, delivers_mixture(cfg)), (AVERAGE_FILE, cfg.train.average_snapshots > 0)):
        if delivered and (run_dir / name).exists():
            return run_dir / name
    return final


def delivers_mixture(cfg: Config) -> bool:
    """Whether the run's deliverable is the league's Nash mixture (league_policy.pt), not its learner."""
    return cfg.league.enable and cfg.league.deliverable == "nash_mixture"


def best_response(checkpoint: str, args: argparse.Namespace) -> dict:
    """How exploitable a final is: tcgleague.exploit's best response of --exploit-steps against
    it (--exploit-config, the overrides' experiments directory and torch threads, its final match
    over --episodes games of --seed); the report without its curve's per-game detail."""
    overrides = side_by_side_threads(args)
    for key, value in zip(args.overrides, [*args.overrides[1:], ""]):
        name, equals, inline = key.partition("=")
        if name.replace("_", "-") in SHARED_OVERRIDES:
            overrides += [key] if equals else [key, value]
    ns = argparse.Namespace(
        target=checkpoint,
        steps=args.exploit_steps,
        init="scratch",
        target_argmax=False,
        target_lookahead=None,
        eval_every=max(1, args.exploit_steps // 4),
        curve_games=max(8, args.curve_episodes),
        games=args.episodes,
        seed=args.seed,
        config=args.exploit_config,
        resume=None,
        overrides=overrides,
    )
    return execute_exploit(ns)


def read_baseline(path: Path, cfg: Config, judge: dict) -> dict:
    """The self-play side of an earlier `bench learn --league --json` file, for this command's
    self-play training `cfg`: refused unless its checkpoint trained that config (steps and curve
    included) and its best response and panel were judged as this command judges (`judge`)."""
    expected = "expected the --json file of an earlier bench learn --league"
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ArgumentError(f"--baseline {path}: cannot be read ({err}); {expected}") from None
    selfplay = earlier.get("selfplay") if isinstance(earlier, dict) else None
    if not isinstance(selfplay, dict) or "checkpoint" not in selfplay:
        raise ArgumentError(f"--baseline {path}: no self-play run in it; {expected}")
    if earlier.get("judge") != judge:
        raise ArgumentError(
            f"--baseline {path}: judged with {earlier.get('judge')}, this command judges with {judge}: "
            "give the same --exploit-steps, --exploit-config, --episodes and --seed"
        )
    try:
        stored = load_checkpoint(Path(selfplay["checkpoint"]), log=lambda _: None).state.get("config") or {}
    except CheckpointError as err:
        raise ArgumentError(f"--baseline {path}: {err}") from None
    differences = learning_differences(stored, cfg)
    if differences:
        raise ArgumentError(
            f"--baseline {path}: its self-play trained another config ({', '.join(differences[:4])}); give the "
            "same --config, --steps, --eval-every, --curve-episodes and self-play overrides"
        )
    return selfplay


def judged_rows(f: dict, name: str) -> list[tuple[str, str, str]]:
    """A final's exploitability (its best response's final win rate, lower is better) and panel."""
    rows = []
    if "exploit" in f:
        br = f["exploit"]
        rows.append(
            (
                f"{name}: best response's win rate ({br['steps']:,} steps, {br['games']} games)",
                f"{br['winrate']:.3f} [{br['wilson_low']:.3f}, {br['wilson_high']:.3f}]",
                "lower is better",
            )
        )
    panel = f["panel"]
    rows.append(
        (f"{name}: held-out panel mean / worst", f"{panel['mean_winrate']:.3f} / {panel['worst_winrate']:.3f}", "")
    )
    return rows


def panel_figures(r: dict) -> dict:
    """The held-out panel's mean and worst win rates, and each opponent's (evaluate_panel)."""
    return {
        "mean_winrate": r["mean_winrate"],
        "worst_winrate": r["worst_winrate"],
        "worst_opponent": r["worst_opponent"],
        "winrates": {p["opponent"]: p["winrate"] for p in r["panel"]},
        "episodes": r["episodes"],
    }


def bot_figures(r: dict, bot: str, suffix: str = "") -> dict:
    """An evaluation report's figures under `<figure>_vs_<bot><suffix>` keys."""
    keys = ("winrate", "wilson_low", "wilson_high", "episodes", "draws", "entropy", "noop_rate")
    names = {"episodes": "games"}
    return {f"{names.get(k, k)}_vs_{bot}{suffix}": r[k] for k in keys}


def run_figures(metrics: list[dict], runner: Runner) -> dict:
    """From a run's metrics.jsonl records: its curve, the periodic evaluations against the game's
    bots in step order ([{step, winrate_vs_<bot>...}]), and its SPS, the median of the epochs' learner steps per
    second (collect + update; evaluations and checkpoints between epochs are not training):
    robust to a neighbour's burst on a shared box."""
    curve = [
        {"step": m["global_step"], **{f"winrate_vs_{b}": m[f"eval/winrate_vs_{b}"] for b in runner.bots}}
        for m in metrics
        if f"eval/winrate_vs_{runner.baseline}" in m
    ]
    return {"curve": curve, "sps": statistics.median(m["perf/sps"] for m in metrics if "perf/sps" in m)}


def interval(f: dict, bot: str, suffix: str = "") -> str:
    key = f"_vs_{bot}{suffix}"
    return f"{f['winrate' + key]:.3f} [{f['wilson_low' + key]:.3f}, {f['wilson_high' + key]:.3f}]"


def rows_of(f: dict, name: str, episodes: int, runner: Runner) -> list[tuple[str, str, str]]:
    rows = [(f"{name}: steps / minutes / SPS", f"{f['steps']:,} / {f['minutes']:.1f} / {f['sps']:,.0f}", "")]
    rows += [(f"{name}: judged {Path(f.get('deliverable', f['checkpoint'])).name}", "", "")]
    rows += [(f"{name}: vs {bot} ({episodes} duplicate games)", interval(f, bot), "") for bot in runner.bots]
    if f.get("lookahead"):
        searching = f"{name} + lookahead {f['lookahead']:g}"
        rows += [(f"{searching}: vs {bot}", interval(f, bot, LOOKAHEAD_SUFFIX), "") for bot in runner.bots]
    baseline = f"winrate_vs_{runner.baseline}"
    curve = " ".join(f"{p['step'] / 1e6:.1f}M:{p[baseline]:.2f}" for p in f["curve"])
    return [*rows, (f"{name}: curve vs {runner.baseline}", curve or "(no curve points)", "")]


def run(args: argparse.Namespace) -> dict:
    if args.lookahead != 0 and not is_value_weight(args.lookahead):
        raise ArgumentError(f"--lookahead {args.lookahead}: expected a finite value weight > 0, or 0 for none")
    if args.jobs < 1:
        raise ArgumentError(f"--jobs {args.jobs}: expected 1 or more trainings at a time")
    args.league_config = args.league_config or args.config
    trainings = [("league", args.league_config, True), ("selfplay", args.config, False)]
    trainings = trainings if args.league else [("learn", args.config, False)]
    configs = {tag: bench_config(config, args, league) for tag, config, league in trainings}
    continuations = plan_continuations(args.resume, configs)  # before anything is trained or written
    jobs = [(configs[tag], config, args, tag, continuations.get(tag)) for tag, config, _ in trainings]
    if not args.league:
        if args.baseline is not None:
            raise ArgumentError("--baseline: a self-play baseline is only compared with --league")
        figures = train_one(*jobs[0])
        figures.update(episodes=args.episodes, command=args.command, label=args.label)
        exactly, runner = judged_exactly(configs["learn"]), game_of(configs["learn"]).runner
        rows = exact_rows(figures, "final") if exactly else rows_of(figures, "final", args.episodes, runner)
        print_table(f"learning ({args.config})", rows)
        return figures
    if judged_exactly(configs["selfplay"]):
        return league_judged_exactly(args, jobs)
    if args.lookahead and delivers_mixture(configs["league"]):
        raise ArgumentError(
            f"--lookahead {args.lookahead:g}: the search takes one policy, and this league delivers its Nash mixture "
            "(league.deliverable nash_mixture); give --lookahead 0"
        )
    judge = {"exploit_steps": args.exploit_steps, "exploit_config": args.exploit_config}
    judge.update(episodes=args.episodes, seed=args.seed)
    baseline = None
    if args.baseline is not None:
        if "selfplay" in continuations:
            raise ArgumentError("--baseline: the self-play training is taken from it, so no --resume continues it")
        baseline = read_baseline(args.baseline, configs["selfplay"], judge)
        jobs = jobs[:1]
    # spawned, not forked: a forked child would inherit the parent's torch thread pool
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
        trained = list(pool.map(train_one, *zip(*jobs)))
        if args.exploit_steps > 0:  # the same budget, config and seeds for both deliverables, side by side too
            finals = [run["deliverable"] for run in trained]
            for run, br in zip(trained, pool.map(best_response, finals, [args] * len(trained))):
                run["exploit"] = br
    for run in trained:
        deliverable = load_checkpoint(run["deliverable"], mixture_ok=True)
        run["panel"] = panel_figures(evaluate_panel(deliverable, [], args.episodes, args.seed))
    league, selfplay = trained[0], baseline or trained[1]
    opponent = selfplay.get("deliverable", selfplay["checkpoint"])  # a baseline from before deliverables: its final
    r = evaluate_loaded(load_checkpoint(league["deliverable"], mixture_ok=True), opponent, args.episodes, args.seed)
    figures = {"league": league, "selfplay": selfplay, "episodes": args.episodes, "command": args.command}
    figures.update(
        jobs=args.jobs, label=args.label, judge=judge, baseline=str(args.baseline) if args.baseline else None
    )
    figures.update(
        winrate_league_vs_selfplay=r["winrate"],
        wilson_low_league_vs_selfplay=r["wilson_low"],
        wilson_high_league_vs_selfplay=r["wilson_high"],
        games_league_vs_selfplay=r["episodes"],
    )
    head = f"{r['winrate']:.3f} [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}]"
    print_table(
        f"league ({args.league_config}) vs self-play ({args.config}), same seed and steps",
        [
            *rows_of(league, "league", args.episodes, game_of(configs["league"]).runner),
            *judged_rows(league, "league"),
            *rows_of(selfplay, "self-play", args.episodes, game_of(configs["selfplay"]).runner),
            *judged_rows(selfplay, "self-play"),
            (f"league vs self-play ({r['episodes']} duplicate games)", head, "> 0.5"),
        ],
    )
    return figures


def league_judged_exactly(args: argparse.Namespace, jobs: list) -> dict:
    """--league on a game judged exactly: both trainings side by side, each final's exact
    exploitability and curve, and the deliverables head to head (learn_exact.py)."""
    if args.baseline is not None:
        raise ArgumentError("--baseline: a game judged exactly trains both sides (its judge takes seconds)")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
        league, selfplay = pool.map(train_one, *zip(*jobs))
    r = head_to_head(jobs[1][0], league["deliverable"], selfplay["deliverable"], args.episodes, args.seed)
    figures = {"league": league, "selfplay": selfplay, "episodes": args.episodes, "command": args.command}
    figures.update(jobs=args.jobs, label=args.label, judge={"exact": True, "episodes": args.episodes}, **r)
    title = f"league ({args.league_config}) vs self-play ({args.config}), same seed and steps, judged exactly"
    print_table(title, league_rows(league, selfplay, r))
    return figures
