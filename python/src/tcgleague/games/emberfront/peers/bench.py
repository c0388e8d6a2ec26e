"""peer: our trainer against what a user would pick instead, side by side in one run.

Each trainer trains a policy of about our size (398k parameters; 342k with the staged heads) for
--steps agent decisions, taking --snapshots snapshots on the way, and every snapshot that is
reported plays --episodes duplicate games against the greedy bot through the same runner, seed
and deals:

- ours: `configs/default.ini` (self-play; it never sees greedy while training), in this process;
- pufferl: PufferLib 3.0.23's PuffeRL, in a subprocess (the checkout's tools/pufferl_peer.py:
  it imports PuffeRL's module, which the package never does);
- sb3: sb3-contrib's MaskablePPO with its MLP policy, in a subprocess (peers/sb3_peer.py).

The peers train on `VersusBot`, one seat against greedy itself: the opponent they are judged
against. Figures: SPS (steps / training seconds) and the win rate vs greedy at equal steps
(each trainer's final snapshot) and at equal wall time: each peer's policy when it had trained
as long as ours took for --steps (its snapshot at the first step past that time; its final one
if it finished sooner). Without ours, the fastest trainer's time is the reference. A peer whose
packages (or script) are missing, or that fails, is reported with the reason and the others
still run. The peers are optional extras: `pip install -c constraints.txt -e ".[peer]"`."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ....build import build_trainer
from ....checkpoint import load_checkpoint
from ....config import load_config
from ....errors import ArgumentError
from ....evaluate_checkpoint import evaluate_loaded
from ....train import checkpoint_writer
from .shared import Snapshot, read_snapshots


@dataclass(frozen=True)
class Peer:
    label: str
    entry: tuple[str, ...]  # what follows the interpreter: `-m module` or a script path
    needs: tuple[str, ...]  # importable modules the peer's subprocess needs


TOOLS = Path(__file__).resolve().parents[6] / "tools"  # the checkout's tools/
PEERS = {
    "pufferl": Peer(
        "PuffeRL (pufferlib 3.0.23)", (str(TOOLS / "pufferl_peer.py"),), ("pufferlib", "rich_argparse", "pyro")
    ),
    "sb3": Peer("MaskablePPO (sb3-contrib)", ("-m", "tcgleague.games.emberfront.peers.sb3_peer"), ("sb3_contrib",)),
}
OURS = "ours"
TRAINERS = (OURS, *PEERS)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--steps",
        type=int,
        default=500_000,
        help="agent decisions each trainer trains for, rounded up to whole batches of ours (default 500,000)",
    )
    p.add_argument("--episodes", type=int, default=1000, help="duplicate games vs greedy per evaluation (default 1000)")
    p.add_argument("--seed", type=int, default=12345, help="evaluation seed (the deals)")
    p.add_argument("--train-seed", type=int, default=1, help="training seed of every trainer (default 1)")
    p.add_argument("--snapshots", type=int, default=8, help="snapshots per training (default 8)")
    p.add_argument("--trainers", default=",".join(TRAINERS), help=f"comma-separated, of {', '.join(TRAINERS)}")
    p.add_argument("--config", default="configs/default.ini", help="our trainer's config")
    p.add_argument("--out", type=Path, help="where the trainings write (default: a temporary directory)")


def train_ours(args: argparse.Namespace, out: Path) -> list[Snapshot]:
    """Our trainer on its config, a checkpoint every steps / snapshots steps."""
    every = max(1, args.steps // args.snapshots)
    cfg = load_config(
        args.config,
        [
            *("--base.seed", str(args.train_seed), "--train.total-timesteps", str(args.steps)),
            *("--train.checkpoint-interval", str(every), "--train.checkpoint-interval-unit", "steps"),
            *("--train.max-checkpoints", str(args.snapshots + 2), "--train.eval-interval", "0"),
            *("--train.dashboard", "false", "--wandb.enable", "false"),
        ],
    )
    trainer = build_trainer(cfg, out)
    write = checkpoint_writer(out, cfg)
    snapshots: list[Snapshot] = []
    start = time.perf_counter()

    def snapshot(tr) -> None:
        seconds = time.perf_counter() - start
        snapshots.append(Snapshot(tr.global_step, seconds, str(write(tr))))

    trainer.train(checkpoint_fn=snapshot)
    return snapshots


def evaluate_ours(snapshot: Snapshot, args: argparse.Namespace) -> dict:
    r = evaluate_loaded(load_checkpoint(snapshot.path), "greedy", args.episodes, args.seed)
    return {k: r[k] for k in ("winrate", "wilson_low", "wilson_high", "episodes")}


def missing(peer: Peer) -> str | None:
    """What the peer lacks to run here, said with how to get it (None: nothing)."""
    modules = [m for m in peer.needs if importlib.util.find_spec(m) is None]
    if modules:
        return f"needs {', '.join(modules)}: pip install -c constraints.txt -e '.[peer]'"
    script = next((Path(e) for e in peer.entry if e.endswith(".py")), None)
    if script and not script.is_file():
        return f"needs {script} (run bench peer from a checkout of the repository)"
    return None


def run_peer(peer: Peer, command: list[str], log: Path) -> None:
    """One peer subprocess; its output goes to `log`, and a failure raises with its last lines."""
    with log.open("a") as f:
        done = subprocess.run([sys.executable, *peer.entry, *command], stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text().strip().splitlines()[-3:]
        raise RuntimeError(f"{peer.label} exited {done.returncode}: {' | '.join(tail)}")


def train_peer(name: str, args: argparse.Namespace, out: Path, mark_seconds: float | None) -> list[Snapshot]:
    peer = PEERS[name]
    cmd = ["train", "--steps", str(args.steps), "--seed", str(args.train_seed), "--snapshots", str(args.snapshots)]
    if mark_seconds is not None:
        cmd += ["--mark-seconds", str(mark_seconds)]
    run_peer(peer, [*cmd, "--out", str(out)], out.parent / f"{name}.log")
    return read_snapshots(out)


def evaluate_peer(name: str, snapshot: Snapshot, args: argparse.Namespace, out: Path) -> dict:
    result = out / f"eval_{snapshot.steps}.json"
    cmd = ["evaluate", "--snapshot", snapshot.path, "--episodes", str(args.episodes), "--seed", str(args.seed)]
    run_peer(PEERS[name], [*cmd, "--json", str(result)], out.parent / f"{name}.log")
    return json.loads(result.read_text())


def at_time(snapshots: list[Snapshot], seconds: float) -> Snapshot:
    """The policy when it had trained `seconds`: the first snapshot taken at or after that
    time (a peer snapshots at the first step past ours' time), or the final one if it
    finished sooner."""
    return next((s for s in snapshots if s.seconds >= seconds - 1e-9), snapshots[-1])


def run(args: argparse.Namespace) -> dict:
    names = [n.strip() for n in args.trainers.split(",") if n.strip()]
    unknown = sorted(set(names) - set(TRAINERS))
    if unknown:
        raise ArgumentError(f"--trainers: unknown {', '.join(unknown)}; valid: {', '.join(TRAINERS)}")
    batch = load_config(args.config, []).train.batch_size
    args.steps = -(-args.steps // batch) * batch  # whole epochs of ours, and the peers train as many
    out = args.out or Path(tempfile.mkdtemp(prefix="tcgleague-peer-"))
    figures: dict = {"steps": args.steps, "episodes": args.episodes, "seed": args.seed, "out": str(out)}
    snapshots: dict[str, list[Snapshot]] = {}
    for name in names:
        if name != OURS and (lacking := missing(PEERS[name])):
            figures[f"skipped_{name}"] = lacking
            print(f"{name}: not run, {lacking}")
            continue
        print(f"{name}: training {args.steps:,} steps ...", flush=True)
        (out / name).mkdir(parents=True, exist_ok=True)
        try:
            if name == OURS:
                snapshots[name] = train_ours(args, out / name)
            else:
                mark = snapshots[OURS][-1].seconds if OURS in snapshots else None
                snapshots[name] = train_peer(name, args, out / name, mark)
        except (RuntimeError, OSError) as err:
            figures[f"error_{name}"] = str(err)
            print(f"{name}: failed: {err}")
    if "pufferl" in snapshots:
        figures["pufferl_advantage"] = advantage_note(out / "pufferl.log")
    if not snapshots:
        return figures
    equal_time = snapshots[OURS][-1].seconds if OURS in snapshots else min(s[-1].seconds for s in snapshots.values())
    figures["equal_wall_seconds"] = equal_time
    rows = []
    for name, taken in snapshots.items():
        final, timed = taken[-1], at_time(taken, equal_time)
        evaluate = (
            (lambda s: evaluate_ours(s, args))
            if name == OURS
            else (lambda s, n=name: evaluate_peer(n, s, args, out / n))
        )
        at_steps = evaluate(final)
        at_wall = at_steps if timed == final else evaluate(timed)
        figures.update(
            {
                f"sps_{name}": final.steps / final.seconds,
                f"steps_{name}": final.steps,
                f"seconds_{name}": final.seconds,
                f"winrate_vs_greedy_{name}": at_steps["winrate"],
                f"wilson_vs_greedy_{name}": [at_steps["wilson_low"], at_steps["wilson_high"]],
                f"steps_at_equal_wall_{name}": timed.steps,
                f"winrate_vs_greedy_at_equal_wall_{name}": at_wall["winrate"],
            }
        )
        rows.append((name, final, at_steps, timed, at_wall))
    table = Table(title=f"peer: {args.steps:,} steps each; win rate vs greedy, {args.episodes} duplicate games")
    for column in (
        "trainer",
        "steps",
        "seconds",
        "SPS",
        "win rate at equal steps",
        f"at {equal_time:.0f} s: steps",
        "win rate",
    ):
        table.add_column(column)
    for name, final, at_steps, timed, at_wall in rows:
        cells = (f"{final.steps:,}", f"{final.seconds:.0f}", f"{final.steps / final.seconds:,.0f}", fmt(at_steps))
        table.add_row(name, *cells, f"{timed.steps:,}", fmt(at_wall))
    Console(width=max(Console().width, 120)).print(table)
    return figures


def fmt(r: dict) -> str:
    return f"{r['winrate']:.3f} [{r['wilson_low']:.2f}, {r['wilson_high']:.2f}]"


def advantage_note(log: Path) -> str:
    """Whether PuffeRL ran its own advantage op or our pure-torch stand-in (its log says)."""
    text = log.read_text() if log.exists() else ""
    return "pure-torch stand-in (pufferlib._C did not load)" if "stand-in" in text else "pufferlib._C op"
