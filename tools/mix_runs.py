"""Several runs' deliverables as one mixture file, each file an equal share: an ensemble of
independent runs (other seeds) that every tool taking a league mixture takes.

    python tools/mix_runs.py mixed.pt RUN_1/average_policy.pt RUN_2/average_policy.pt RUN_3/average_policy.pt
    python -m tcgleague.exact mixed.pt

Why: a run's deliverable is off the equilibrium by a part its own learner's noise put there and a
part every run of the same config shares (the regularizer's bias). Mixed, independent runs average
the first part out (one member drawn per game, so exact judges their reach-weighted average), which
is how the experiments split the two (experiments/README.md, stops 72 and 77); by the convexity of
exploitability, the mixture is never judged worse than the runs' mean.

Each file is a checkpoint (one member) or a mixture (average_policy.pt, league_policy.pt: its
members, their weights scaled by 1 / the number of files); all must play the same game."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tcgleague.checkpoint import CheckpointError, load_checkpoint
from tcgleague.checkpoint.files import read_state, verify_archive
from tcgleague.errors import UserInputError, entry_point, output_file
from tcgleague.fingerprint import checkpoint_game
from tcgleague.league.mixture import is_mixture, load_mixture, write_mixture_file


def file_members(path: Path) -> tuple[str, int, list[dict]]:
    """A file's game, global step and members (weights summing to 1), validated as every tool
    loading it would (`load_mixture`, `load_checkpoint`); a file that is neither a checkpoint nor a
    mixture is refused in one line."""
    verify_archive(path)
    state = read_state(path)
    if is_mixture(state):
        load_mixture(path, log=lambda *_: None)  # validates the members and their weights
        members = [dict(m) for m in state["mixture"]["members"]]
    elif "policy" in state and "policy_config" in state:
        load_checkpoint(path, log=lambda *_: None)  # validates its weights against its architecture
        keep = ("policy", "policy_config", "sampling_params")
        members = [{"id": path.stem, "weight": 1.0} | {key: state.get(key) for key in keep}]
    else:
        raise CheckpointError(f"{path} is neither a checkpoint nor a league mixture (no policy, no mixture members)")
    return checkpoint_game(state), int(state.get("global_step", 0)), members


def mixed_members(paths: list[Path]) -> tuple[str, int, list[dict]]:
    """Every file's members, each file weighing 1 / len(paths), their ids prefixed by the file's
    position; the game they all play and the largest global step among them."""
    games, steps, members = set(), [], []
    for k, path in enumerate(paths):
        game, step, own = file_members(path)
        games.add(game)
        steps.append(step)
        members += [m | {"id": f"{k}:{m['id']}", "weight": m["weight"] / len(paths)} for m in own]
    if len(games) > 1:
        raise UserInputError(f"the files play different games ({', '.join(sorted(games))}): mix one game's runs")
    return games.pop(), max(steps), members


@entry_point("mix_runs")
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="the mixture file to write")
    p.add_argument("files", type=Path, nargs="+", help="checkpoints or mixtures (average_policy.pt, league_policy.pt)")
    args = p.parse_args(argv)
    output_file(args.out, "the mixture file")
    if args.out in args.files:
        raise UserInputError(f"{args.out} is one of the files mixed: write the mixture elsewhere")
    game, step, members = mixed_members(args.files)
    write_mixture_file(args.out, members, game, step, epoch=0)
    print(
        f"{args.out}: {len(members)} members of {len(args.files)} files ({game}), each file {1 / len(args.files):.4g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
