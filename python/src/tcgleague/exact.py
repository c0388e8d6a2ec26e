"""`python -m tcgleague.exact CKPT|TABLE.pt [--game NAME] [--json OUT]`: the exact NashConv and
exploitability of a policy, by its game's judge (`Game.judge`: Leduc's, Kuhn's and Liar's Dice's
are OpenSpiel's best responses, openspiel_judge.py; the `[exact]` extra), in the game's points
(chips) per game.

CKPT is a checkpoint (train.py's, a league member's) or a league mixture (league_policy.pt: its
members' reach-weighted average policy is judged); TABLE.pt a policy table,
{information-state string: [probability per action id]}, of the game `--game` names."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from .checkpoint.files import read_state, verify_archive
from .errors import UserInputError, entry_point, output_file, write_report
from .fingerprint import checkpoint_game
from .game import every_game, game_named
from .league.mixture import is_mixture


def judged_games() -> list[str]:
    return [game.name for game in every_game() if game.judge is not None]


def played_game(path: Path) -> str | None:
    """The game a checkpoint or a league mixture file says it plays; None for a policy table."""
    verify_archive(path)
    state = read_state(path)
    return checkpoint_game(state) if is_mixture(state) or "policy_config" in state else None


@entry_point("exact")
def main(argv: list[str] | None = None) -> int:
    judged = judged_games()
    p = argparse.ArgumentParser(prog="python -m tcgleague.exact", description=__doc__.split("\n\n")[0])
    p.add_argument("policy", type=Path, help="a checkpoint, a league mixture (league_policy.pt) or a policy table")
    p.add_argument("--game", choices=judged, help=f"the game a table plays (default: {judged[0]}; a checkpoint says)")
    p.add_argument("--json", type=Path, metavar="OUT", help="write the figures to this JSON file")
    args = p.parse_args(argv)
    output_file(args.json, "--json")
    name = args.game or played_game(args.policy) or judged[0]
    if game_named(name).judge is None:
        raise UserInputError(f"{args.policy} plays {name}; the exact judge takes {' or '.join(judged)} policies")
    game = game_named(name)
    result = game.judge(args.policy)
    print(
        f"{result.game}: NashConv {result.nash_conv:.6f}, exploitability {result.exploitability:.6f} "
        f"({game.points_unit} per game)"
    )
    write_report(args.json, asdict(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
