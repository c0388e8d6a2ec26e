"""Fingerprints stored in checkpoints: what defines a checkpoint's behaviour.

- `source_hashes`: SHA-256 of every behaviour-defining source file, keyed by its path inside the
  package: each game's engine or rules, layout and policy family (`games/emberfront/engine/*.c`,
  `games/poker/rules.py`, ...), the recurrence, the trainer, the rollout buffer and the PPO loss. A changed file
  means a resumed run may not behave like the one that wrote the checkpoint (a sampler or
  scheduler change can make an old checkpoint collapse on resume), so resume warns, and refuses
  under --resume-strict.
- `game` (`[env] game`; none stored: Emberfront), `obs_layout_hash` / `action_space_hash`: from
  the engine's exported LAYOUT, or a poker game's rules and row. A different game, observation
  layout or action space makes the weights meaningless: always refused.
- `config_hash`: of the whole run configuration (informational).
- `versions`: tcgleague, torch, python, numpy.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import numpy as np
import torch

from . import __version__
from .game import DEFAULT_GAME, game_named

PACKAGE_DIR = Path(__file__).resolve().parent
# Behaviour-defining sources, relative to the package directory (globs allowed).
SOURCE_PATTERNS = (
    "games/emberfront/engine/*.c",
    "games/emberfront/engine/*.h",
    "games/emberfront/engine/cards.json",
    "games/emberfront/policy.py",
    "games/emberfront/features.py",
    "games/emberfront/attention.py",
    "games/emberfront/layout.py",
    "games/emberfront/sampler.py",
    "games/*/rules.py",  # every game's rules, env and PufferLib face, by these names (docs/new_game.md)
    "games/*/env.py",
    "games/*/rows.py",
    "stepped_env.py",
    "policy/family.py",
    "policy/flat.py",
    "policy/sampling.py",
    "recurrent.py",
    "actors.py",
    "trainer.py",
    "rollout.py",
    "transfer.py",
    "ppo.py",
    "magnet.py",
)
# Where a source file lived before the games moved into games/<game>/ (2026-11-28): a checkpoint
# written before keys its hashes by the old paths, read here as the new ones, so the files that
# did not change are not reported as gone and new.
MOVED_SOURCES = {
    **{
        f"engine/{name}": f"games/emberfront/engine/{name}"
        for name in (
            "actions.c",
            "binding.c",
            "cards.json",
            "env.c",
            "greedy.c",
            "layout.c",
            "lookahead.c",
            "observe.c",
            "position.c",
            "render.c",
            "rules.c",
            "rules_internal.h",
            "tcg.h",
        )
    },
    "policy/tcg_policy.py": "games/emberfront/policy.py",
    "policy/features.py": "games/emberfront/features.py",
    "policy/attention.py": "games/emberfront/attention.py",
    "layout.py": "games/emberfront/layout.py",
    "policy/tcg_sampler.py": "games/emberfront/sampler.py",
    "games/rules.py": "games/poker/rules.py",
    "games/poker.py": "games/poker/env.py",
    "games/poker_rows.py": "games/poker/rows.py",
}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json_hash(obj) -> str:
    return _sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode())


def source_files() -> list[Path]:
    files: list[Path] = []
    for pattern in SOURCE_PATTERNS:
        files.extend(sorted(PACKAGE_DIR.glob(pattern)))
    return files


def hash_sources() -> dict[str, str]:
    """{"games/emberfront/engine/rules.c": sha256, ...} for every behaviour-defining source file, read now."""
    return {p.relative_to(PACKAGE_DIR).as_posix(): _sha256(p.read_bytes()) for p in source_files()}


# Snapshot taken when the process imports tcgleague: the code it actually runs, even if the files
# are edited on disk while a long run goes on.
_SOURCES_AT_IMPORT = hash_sources()


def source_hashes() -> dict[str, str]:
    """The behaviour-defining source hashes of the code this process runs (taken at import)."""
    return dict(_SOURCES_AT_IMPORT)


def obs_layout_hash(game: str = DEFAULT_GAME) -> str:
    """What the game's observation rows hold (`Game.obs_layout`: every offset, size and enum
    Emberfront's engine exports; a poker game's rules and the width of its row)."""
    return _json_hash(game_named(game).obs_layout)


def action_space_hash(game: str = DEFAULT_GAME) -> str:
    return _json_hash(game_named(game).action_space)


def config_hash(config_dict: dict) -> str:
    return _json_hash(config_dict)


def versions() -> dict[str, str]:
    return {
        "tcgleague": str(__version__),
        "torch": str(torch.__version__),
        "python": platform.python_version(),
        "numpy": str(np.__version__),
    }


def game_of_config(config_dict: dict | None) -> str:
    """The game a run's config dict plays (`[env] game`; an older config names none: Emberfront)."""
    return ((config_dict or {}).get("env") or {}).get("game", DEFAULT_GAME)


def checkpoint_game(state: dict) -> str:
    """The game a checkpoint plays: its fingerprint's, or (a file stripped of it, or written
    before fingerprints) its stored config's, or Emberfront (a file older than either)."""
    return (state.get("fingerprint") or {}).get("game") or game_of_config(state.get("config"))


def compute_fingerprint(config_dict: dict | None = None, game: str | None = None) -> dict:
    """`game`: the game, where no config dict says it (a league member's file)."""
    game = game or game_of_config(config_dict)
    return {
        "game": game,
        "source_hashes": source_hashes(),
        "obs_layout_hash": obs_layout_hash(game),
        "action_space_hash": action_space_hash(game),
        "config_hash": config_hash(config_dict) if config_dict is not None else None,
        "versions": versions(),
    }


def changed_sources(stored: dict[str, str], current: dict[str, str]) -> list[str]:
    """Files whose hash differs, or that exist on one side only (sorted, with a note); a stored
    path from before the games' move is read as the file's path today (MOVED_SOURCES)."""
    stored = {MOVED_SOURCES.get(name, name): digest for name, digest in stored.items()}
    out = []
    for name in sorted(set(stored) | set(current)):
        if name not in current:
            out.append(f"{name} (gone from the code)")
        elif name not in stored:
            out.append(f"{name} (new in the code)")
        elif stored[name] != current[name]:
            out.append(name)
    return out


def short(h: str | None) -> str:
    return "none" if not h else h[:12] + "…"
