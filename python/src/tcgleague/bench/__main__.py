"""Entry point: python -m tcgleague.bench {engine,train,compile,learn,league,scale,exploit,replay,peer} [options]
(`peer`: Emberfront's, a bench a game brings: Game.benches)."""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
from pathlib import Path

from ..errors import entry_point, output_file, write_report
from ..game import every_game
from . import compile as compile_bench
from . import engine, exploit, league, learn, replay, scale, train

BENCHES = {
    "engine": engine,
    "train": train,
    "compile": compile_bench,
    "learn": learn,
    "league": league,
    "scale": scale,
    "exploit": exploit,
    "replay": replay,
}


def benches() -> dict:
    """The framework's benches and those the games bring (`Game.benches`)."""
    brought = {name: importlib.import_module(module) for game in every_game() for name, module in game.benches.items()}
    return {**BENCHES, **brought}


@entry_point("bench")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcgleague.bench", description=__doc__)
    sub = parser.add_subparsers(dest="bench", required=True)
    commands = benches()
    for name, module in commands.items():
        p = sub.add_parser(name, help=module.__doc__.splitlines()[0])
        module.add_arguments(p)
        p.add_argument("--json", type=Path, help="write the figures to this JSON file")
        if hasattr(module, "ACCEPTS_OVERRIDES"):
            p.add_argument("--device", help="auto | cpu | cuda | cuda:N (default: the config's [base] device)")
    args, extra = parser.parse_known_args(argv)
    if extra and not hasattr(commands[args.bench], "ACCEPTS_OVERRIDES"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = shlex.join(["python", "-m", "tcgleague.bench", *(sys.argv[1:] if argv is None else argv)])
    args.overrides = extra + (["--base.device", args.device] if getattr(args, "device", None) else [])
    output_file(args.json, "--json")
    figures = commands[args.bench].run(args)
    write_report(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
