"""`python -m tcgleague.replay CKPT [--opponent BOT|CKPT] [--games N] --out DIR [--lookahead [W]]
[--seed S] [--argmax]`: plays a checkpoint's games (Emberfront's, or Leduc / Kuhn poker hands) and
records every decision of both seats into DIR/replays.json and DIR/viewer.html, a page that
needs nothing but a browser (open it from the file system).

The games are an evaluation match exactly as `evaluate_checkpoint` plays it (the same sides,
deals, turn cap and sampler; the duplicate format, so N is rounded up to whole deals of two),
every game recorded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..checkpoint import load_checkpoint
from ..errors import ArgumentError, entry_point
from ..evaluate_checkpoint import checkpoint_of_game, evaluate_loaded, replay_names, save_replays
from ..search import add_lookahead_argument


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tcgleague.replay", description=__doc__)
    p.add_argument("checkpoint", help="a model_<run>_<epoch>.pt file: the agent")
    p.add_argument(
        "--opponent",
        help="one of the checkpoint's game's bots (Emberfront: random | greedy | lookahead_greedy; Leduc, Kuhn: "
        "random | call) or another checkpoint (default: the game's baseline, greedy or call)",
    )
    p.add_argument("--games", type=int, default=4, help="games to play and record (whole deals of 2; default 4)")
    p.add_argument("--out", type=Path, required=True, help="folder for replays.json and viewer.html (made if missing)")
    p.add_argument("--seed", type=int, default=0, help="deals and sampling (default 0)")
    p.add_argument("--argmax", action="store_true", help="the agent takes its most likely action at every stage")
    add_lookahead_argument(p, "the agent")
    args = p.parse_args(argv)
    if args.games < 1 or args.seed < 0:
        p.error("--games must be >= 1 and --seed >= 0")
    if args.out.exists() and not args.out.is_dir():
        raise ArgumentError(f"--out {args.out}: is a file, not a folder")
    return args


@entry_point("replay")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    loaded = load_checkpoint(args.checkpoint, policy_config=None, mixture_ok=True)
    game = checkpoint_of_game(loaded)
    if game.runner.recorder is None:
        raise ArgumentError(f"the replay viewer does not draw {game.name} games")
    args.opponent = args.opponent or game.runner.baseline
    games = 2 * -(-args.games // 2)
    recorder = game.runner.recorder(games, replay_names(args.checkpoint, args.opponent))
    options = dict(argmax=args.argmax, lookahead=args.lookahead, parallel=games, recorder=recorder)
    report = evaluate_loaded(loaded, args.opponent, games, args.seed, **options)
    viewer = save_replays(report, recorder, args.out)
    size = (args.out / "replays.json").stat().st_size
    print(f"wrote {viewer} ({games} games, {report['learner_decisions']} agent decisions; replays.json {size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
