"""What every peer trainer of `bench peer` shares: how it runs, what it writes, how it is judged.

A peer (PuffeRL, sb3-contrib's MaskablePPO) runs as its own process,
`python -m tcgleague.games.emberfront.peers.<module> train|evaluate ...`, so its library's process-wide
side effects (warning filters, signal handlers, global seeding) stay there:

- `train --steps N --seed S --out DIR` trains on `VersusBot` and saves a snapshot of the policy
  every N / --snapshots steps, at the first step past --mark-seconds of training and at the
  end, listed in DIR/snapshots.json with the steps and training seconds at which it was taken
  (the clock starts when training starts, after the set-up).
- `evaluate --snapshot FILE --episodes E --seed S --json OUT` plays the snapshot against the
  greedy bot through `match.play_match`, the runner (and deals, for the same seed) every
  checkpoint of ours is evaluated with; the peer picks an index into each row's legal list
  (`LegalIndexActor`), sampled from its masked distribution with a seeded generator.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ....rng import stream_seed
from ..layout import MAX_LEGAL, features_np, legal_actions
from ..match import bot_side, play_match

SNAPSHOTS = "snapshots.json"


@dataclass
class Snapshot:
    steps: int
    seconds: float  # training wall time when it was taken
    path: str


class SnapshotLog:
    """A training's snapshots, written as they come: one every `every` steps, one at the first
    step past `mark_seconds` of training (the wall time `bench peer` compares at), and the last."""

    def __init__(self, out: Path, every: int, mark_seconds: float | None = None):
        self.out, self.every, self.mark, self.taken = out, max(1, every), mark_seconds, []
        out.mkdir(parents=True, exist_ok=True)

    def due(self, steps: int, seconds: float) -> bool:
        previous = self.taken[-1] if self.taken else Snapshot(0, 0.0, "")
        crossed_mark = self.mark is not None and previous.seconds < self.mark <= seconds
        return crossed_mark or steps // self.every > previous.steps // self.every

    def add(self, steps: int, seconds: float, save: Callable[[Path], None]) -> None:
        path = self.out / f"snapshot_{steps:010d}.pt"
        save(path)
        self.taken.append(Snapshot(steps, seconds, str(path)))
        (self.out / SNAPSHOTS).write_text(json.dumps([asdict(s) for s in self.taken], indent=1))


def read_snapshots(out: Path) -> list[Snapshot]:
    return [Snapshot(**s) for s in json.loads((out / SNAPSHOTS).read_text())]


def legal_masks(count: np.ndarray) -> np.ndarray:
    """bool [rows, MAX_LEGAL]: which indices of each row's legal list are valid (`count`: the
    rows' legal counts, as `layout.legal_actions` returns them)."""
    return np.arange(MAX_LEGAL)[None, :] < count[:, None]


def sample_masked(logits: torch.Tensor, masks: torch.Tensor, generator: torch.Generator) -> np.ndarray:
    """One legal index per row, drawn from softmax(logits) over the valid indices."""
    probs = torch.softmax(logits.masked_fill(~masks, float("-inf")), dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0].numpy()


class LegalIndexActor:
    """A peer's policy as an `actors.Actor`: `choose(features, masks, rows)` returns an index into
    each row's legal list, which becomes that row's action tuple; `reset(rows)` forgets the
    rows' recurrent state (for a stateless policy, nothing)."""

    def __init__(self, choose: Callable, reset: Callable | None = None, name: str = "peer"):
        self.choose, self.reset, self.name = choose, reset, name

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        mine = obs[rows]
        legal, count = legal_actions(mine)
        index = np.asarray(self.choose(features_np(mine), legal_masks(count), rows))
        if ((index < 0) | (index >= count)).any():
            raise RuntimeError(f"{self.name} chose an index outside the legal list")
        return legal[np.arange(len(rows)), index]

    def reset_rows(self, rows: np.ndarray) -> None:
        if self.reset:
            self.reset(rows)


def evaluate_vs_greedy(make_actor: Callable[[int], LegalIndexActor], episodes: int, seed: int) -> dict:
    """The snapshot's duplicate-format match against greedy: the same call (seeds, deals, bot
    seed) as `evaluate_checkpoint.evaluate_loaded` makes for our checkpoints."""
    report = play_match(
        lambda env: make_actor(env.num_agents), bot_side("greedy", stream_seed(seed, "second_side")), episodes, seed
    )
    low, high = report.wilson
    return {"winrate": report.winrate, "wilson_low": low, "wilson_high": high, "episodes": report.games}


def command_line(train: Callable[[int, int, SnapshotLog], None], load: Callable, argv: list[str] | None = None) -> int:
    """A peer module's command line. `train(steps, seed, log)` trains and writes the
    snapshots; `load(path, seed)` returns `make_actor(num_rows)` for one snapshot. Errors are
    left as tracebacks: they are the peer library's, and `bench peer` shows their last lines."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--snapshots", type=int, default=8)
    t.add_argument("--mark-seconds", type=float)
    t.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--snapshot", type=Path, required=True)
    e.add_argument("--episodes", type=int, default=1000)
    e.add_argument("--seed", type=int, default=12345)
    e.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "train":
        train(args.steps, args.seed, SnapshotLog(args.out, args.steps // args.snapshots, args.mark_seconds))
    else:
        args.json.write_text(json.dumps(evaluate_vs_greedy(load(args.snapshot, args.seed), args.episodes, args.seed)))
    return 0
