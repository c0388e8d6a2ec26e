"""The contract a game keeps to plug in (`Game`), and the registry of the games a run can play
(`[env] game`): the one place that names them. Everything outside `games/` reaches a game
through here, so the framework (trainer, PPO, rollout, league, checkpoints, tools) imports no game.

A game is a package under `games/` whose `game` module builds its `Game`: its env class (a
PufferLib env keeping the row contract of rows.py: two rows per game, the acting row masked, the
legal actions in the row), its policy family, its periodic evaluation, its matches and bots
(`match.Runner`), and what its tools need (a judge, a person's session, a replay recorder). The
registry maps each name to the module that builds it (`GAME_MODULES`) and imports that module
the first time the game is asked for: the games import the framework, never the other way."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .policy.family import Policy, PolicyFamily, Sampler

# name -> the module whose GAMES dict holds it (a game brought by a user is one more line here)
GAME_MODULES = {
    "emberfront": "tcgleague.games.emberfront.game",
    "leduc": "tcgleague.games.poker.game",
    "kuhn": "tcgleague.games.poker.game",
    "liars_dice": "tcgleague.games.liars_dice.game",
}
GAME_NAMES = tuple(GAME_MODULES)  # every game `[env] game` can name
DEFAULT_GAME = "emberfront"  # `[env] game` when a config or checkpoint names none (they came first)

Evaluate = Callable[[Policy, Sampler, int], dict]  # (policy, sampler, the evaluation's seed) -> eval/* metrics


@dataclass(frozen=True)
class Game:
    name: str
    env_class: type
    """its PufferLib env (`bytes_per_game`: what its buffers take per game, checked before a run)"""
    env_kwargs: Callable[[Any, int], dict]
    """(config, the rank's seed) -> the env class's arguments"""
    family: PolicyFamily
    policy_config: Callable[[Any], Any]
    """config -> the family's architecture"""
    sampler: Callable[[Any], Sampler]
    evaluation: Callable[[Any], Evaluate]
    """the trainer's periodic evaluation of its policy, for this config"""
    runner: Any
    """its matches and bots, as the league and the tools play them (`match.Runner`)"""
    obs_layout: dict
    """what its observation rows hold (offsets, sizes, rules): the checkpoint fingerprint's
    `obs_layout_hash` is its hash"""
    action_space: dict
    """what its actions mean: the fingerprint's `action_space_hash`"""
    action_width: int
    """integers in one action (the rollout's and a checkpoint's stored actions are this wide)"""
    evaluate_mixture: Callable[[Any], Callable] | None = None
    """the league's Nash mixture judged at the trainer's evaluations ([league] deliverable =
    nash_mixture): config -> (members, weights) -> eval/* metrics; None: no judge of a mixture"""
    default_config: str = "configs/default.ini"
    """the config a tool trains this game with when given none (an exploit run's)"""
    own_keys: tuple[tuple[str, str], ...] = ()
    """config keys only this game reads: another game's config that sets one is refused"""
    overlaps: bool = False
    """its native env can step half its games while the policy acts on the other half ([env] overlap)"""
    check_files: Callable[[Any], list[str]] | None = None
    """config -> what is wrong with the game data files it names (one line each)"""
    convertible_layouts: dict[str, tuple[str, Callable]] = field(default_factory=dict)
    """an earlier observation layout's hash -> (what it was, its stored rows -> today's rows):
    checkpoints `python -m tcgleague.checkpoint convert` can restamp (ValueError: not such rows)"""
    fixed_architecture: Callable[[dict], dict] | None = None
    """a stored architecture -> the same with what the code fixes (Emberfront: its card count),
    checked when a checkpoint is loaded without a run's architecture"""
    search: Callable | None = None
    """(side, seed, value weight, searchers list) -> the side deciding with a turn-ahead search
    (search.py's `--lookahead`); None: the game has no search"""
    judge: Callable[[Path], Any] | None = None
    """a checkpoint, league mixture or policy table file -> its exact exploitability; None: none"""
    judged_game: Any = None
    """what that judge knows of the game (openspiel_judge.JudgedGame: its OpenSpiel name, rows and
    actions), for the tools that walk its tree (tools/regret_map.py); None: no exact judge"""
    bench_engine: str | None = None
    """the module of `bench engine --game NAME`'s measurement (its `run(args) -> figures`,
    printed), imported when the bench runs: benches import tools a run never needs"""
    benches: dict[str, str] = field(default_factory=dict)
    """`python -m tcgleague.bench` commands only this game has: name -> the module holding its
    `add_arguments(parser)` and `run(args) -> figures` (Emberfront's `peer`)"""
    points_unit: str | None = None
    """what a game's return counts (chips), where it is more than a win or a loss"""
    play: Callable | None = None
    """(args, loaded checkpoint, console, read) -> the agent's results: a person plays it in the
    terminal (play.py)"""


class UnknownGame(ValueError):
    pass


@functools.cache
def game_named(name: str) -> Game:
    """The game `name` (a config's `[env] game`, a checkpoint's fingerprint.checkpoint_game),
    its module imported on first use."""
    if name not in GAME_MODULES:
        raise UnknownGame(f"unknown game {name!r}; valid: {', '.join(GAME_NAMES)}")
    return importlib.import_module(GAME_MODULES[name]).GAMES[name]


def game_of(cfg) -> Game:
    """The game a config plays."""
    return game_named(cfg.env.game)


def every_game() -> list[Game]:
    return [game_named(name) for name in GAME_NAMES]


def family_of(arch: dict) -> PolicyFamily:
    """The policy family of a stored architecture dict (no "family" key: the default game's,
    whose architectures were stored before families had names)."""
    families = {game.family.name: game.family for game in every_game()}
    name = arch.get("family") or game_named(DEFAULT_GAME).family.name
    if name not in families:
        raise ValueError(f"policy family {name!r} is unknown; valid: {', '.join(sorted(families))}")
    return families[name]


def family_names() -> list[str]:
    return sorted({game.family.name for game in every_game()})
