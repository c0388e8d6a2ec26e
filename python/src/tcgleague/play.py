"""`python -m tcgleague.play CKPT [--seat 0|1] [--seed S] [--games N] [--reveal] [--opponent X]`:
play a checkpoint in the terminal, in its own game (game.py: Game.play). You see what your seat
sees at each of your decisions (Emberfront's board, a poker hand's cards, bets and pot), your
legal actions are a numbered list in words (a wrong answer is asked again), and the agent's move
is shown with its most likely alternatives (its hidden cards unnamed, unless --reveal).
`--opponent BOT|CKPT` instead watches the agent play one of its game's bots or another
checkpoint of that game, move by move. Emberfront only: `--deck NAME` deals you that deck, and
`--lookahead [W]` makes the agent search a turn ahead (search.py; Emberfront's lookahead) before each move.
Ctrl-C or the end of input leaves cleanly. The checkpoint loads through the validated path
evaluate_checkpoint uses."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from .checkpoint import CheckpointError, load_checkpoint
from .errors import ArgumentError, entry_point
from .fingerprint import checkpoint_game
from .game import game_named
from .search import add_lookahead_argument


def play(args: argparse.Namespace, console: Console, read: Callable[[str], str]) -> list[int]:
    """Plays args.games games of the checkpoint's game; the agent's results: +1 win, 0 draw, -1 loss."""
    loaded = load_checkpoint(args.checkpoint, policy_config=None)
    game = game_named(checkpoint_game(loaded.state))
    bots = game.runner.bots
    if args.opponent is not None and args.opponent not in bots and not Path(args.opponent).is_file():
        raise CheckpointError(
            f"--opponent {args.opponent}: neither a bot ({', '.join(bots)}) of {game.name} nor a checkpoint file"
        )
    if args.lookahead is not None and game.search is None:
        raise ArgumentError(
            f"--lookahead searches a turn ahead where the game has a search (Game.search); {game.name} has no lookahead"
        )
    return game.play(args, loaded, console, read)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python play.py", description=__doc__)
    p.add_argument("checkpoint", help="a model_<run>_<epoch>.pt file: the agent")
    p.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat (default 0)")
    p.add_argument("--deck", help="Emberfront: your deck (default: dealt at random)")
    p.add_argument("--seed", type=int, default=0, help="deals and the agent's sampling (default 0)")
    p.add_argument("--games", type=int, default=1, help="games to play (default 1)")
    p.add_argument("--reveal", action="store_true", help="show the agent's hand")
    p.add_argument(
        "--opponent", help="watch the agent play one of its game's bots (e.g. greedy, call) or another checkpoint"
    )
    add_lookahead_argument(p, "the agent (Emberfront)")
    args = p.parse_args(argv)
    if args.games < 1 or args.seed < 0:
        p.error("--games must be >= 1 and --seed >= 0")
    return args


@entry_point("play")
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    try:
        results = play(args, console, input)
    except (EOFError, KeyboardInterrupt):
        console.print("\nleft the game")
        return 0
    wins, draws, losses = results.count(1), results.count(0), results.count(-1)
    who = "you" if args.opponent is None else args.opponent
    console.print(f"{len(results)} game(s): the agent won {wins}, {who} won {losses}, {draws} drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
