"""Whether a checkpoint fits this code: its game, observation layout and action space (always
refused when they differ), its architecture against the run's (refused, naming each field),
its behaviour-defining sources (a warning, refused under strict) and its library versions (a
note). `load_checkpoint` (files.py) asks these before it builds the policy."""

from __future__ import annotations

from pathlib import Path

from ..fingerprint import action_space_hash, checkpoint_game, obs_layout_hash, short, versions
from ..game import GAME_NAMES, game_named
from .field_types import CheckpointError


def architecture_differences(stored: dict, expected: dict) -> list[str]:
    return [
        f"{k} {stored.get(k)!r} vs {expected.get(k)!r}"
        for k in sorted(set(stored) | set(expected))
        if stored.get(k) != expected.get(k)
    ]


def unverifiable_warning(path: Path, state: dict, strict: bool) -> str:
    """The warning for a checkpoint without a fingerprint; under strict, a refusal."""
    if strict:
        raise CheckpointError(
            f"checkpoint {path}: refusing under --resume-strict: it has no fingerprint (written "
            "before checkpoints carried one), so its layout and sources cannot be verified"
        )
    return (
        f"WARNING: checkpoint {path} has no fingerprint (written before checkpoints carried one): its "
        "observation layout and sources cannot be verified"
        + ("" if "run_state" in state else ", and it holds no run state to resume exactly")
    )


def check_compatible(path: Path, state: dict, fp: dict, policy_config, run_game: str | None = None) -> dict:
    """Refuses another game than `run_game` (a resume's, or the Emberfront tools'), a different
    observation layout, action space or architecture; returns the stored architecture
    (`policy_config` None: the stored one, checked against what the code fixes in it:
    Game.fixed_architecture, Emberfront's card count)."""
    where = f"checkpoint {path} is incompatible with this code"
    game = checkpoint_game(state)
    if game not in GAME_NAMES:
        raise CheckpointError(f"{where}: it plays {game!r}; this code plays {', '.join(GAME_NAMES)}")
    if run_game is not None and game != run_game:
        judged = game_named(game).judge is not None and game_named(run_game).judge is None
        judge = f" (a {game} checkpoint is judged by `python -m tcgleague.exact CKPT`)" if judged else ""
        raise CheckpointError(f"checkpoint {path} plays {game}, not {run_game}{judge}")
    for key, current, what in (
        ("obs_layout_hash", obs_layout_hash(game), "observation layout hash"),
        ("action_space_hash", action_space_hash(game), "action space hash"),
    ):
        if fp and fp.get(key) in game_named(game).convertible_layouts and key == "obs_layout_hash":
            raise CheckpointError(
                f"{where}: it was written for {game_named(game).convertible_layouts[fp[key]][0]}; its policy reads "
                "the same features, "
                f"so `python -m tcgleague.checkpoint convert {path}` rewrites it for this code"
            )
        if fp and fp.get(key) != current:
            raise CheckpointError(f"{where}: {what} differs: checkpoint {short(fp.get(key))}, code {short(current)}")
    stored_arch = dict(state["policy_config"])
    if policy_config is not None:
        expected, label = policy_config.to_dict(), "(checkpoint vs this run's config)"
    elif game_named(game).fixed_architecture is not None:  # Emberfront's policy embeds the code's card table
        expected, label = game_named(game).fixed_architecture(stored_arch), "(checkpoint vs what the code fixes)"
    else:
        return stored_arch  # nothing the code fixes: the stored architecture is the one to build
    diffs = architecture_differences(stored_arch, expected)
    if diffs:
        raise CheckpointError(f"{where}: architecture differs: {'; '.join(diffs)} {label}")
    return stored_arch


def changed_sources_warning(path: Path, changed: list[str], strict: bool) -> str:
    """The warning for changed behaviour-defining sources; under strict, a refusal."""
    if strict:
        raise CheckpointError(
            f"checkpoint {path}: refusing under --resume-strict: behaviour-defining source "
            f"changed since it was written: {', '.join(changed)}"
        )
    return (
        f"WARNING: checkpoint {path}: behaviour-defining source changed since it was written: "
        f"{', '.join(changed)} (the policy may not behave as it did; --resume-strict refuses this)"
    )


def version_notes(fp: dict) -> list[str]:
    notes = []
    stored_versions, now = fp.get("versions") or {}, versions()
    for name in sorted(set(stored_versions) | set(now)) if fp else ():
        if stored_versions.get(name) != now.get(name):
            notes.append(f"{name} version {stored_versions.get(name)} in the checkpoint, {now.get(name)} here")
    return notes
