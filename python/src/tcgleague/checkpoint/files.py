"""Checkpoint files: `experiments/<run_name>_<run_id>/model_<run_name>_<epoch:06d>.pt` plus a
JSON sidecar, written atomically (temp file, fsync, rename) so a crash never leaves a
half-written file where a complete one is expected; `max_checkpoints` retention keeps the newest.

A checkpoint is a plain `torch.save` dict (readable with `torch.load(path, weights_only=True)`):

    format, format_version     "tcgleague-checkpoint", 1
    policy, policy_config      weights (uncompiled keys) and the family's config `to_dict()` (game.family_of)
    optimizer, scheduler       Adam and LR-scheduler state
    global_step, epoch         where training stood
    anneal_offset, anneal      anneal step offset and the values in force (sampler/..., anneal/...)
    sampling_params            the sampler's parameters when saved
    rng                        python random, numpy global, torch CPU, the trainer's Generator
    run_state                  engine state of every game, env buffers, per-row LSTM state,
                               episode-start flags (resume.py: exact continuation)
    metrics, health            last epoch's metrics; rollout entropy and noop rate (health probe)
    league                     league manager state + running matchups (None without a league)
    normalizer                 None: there is no observation or reward normaliser (observations
                               are scaled by fixed constants inside the policy)
    fingerprint                fingerprint.py: source hashes, layout/action-space/config hashes,
                               versions
    config, run_name, resumed_from

Integrity: torch's zip container stores a CRC-32 per member; `load_checkpoint` verifies them
(torch.load alone silently returns corrupted tensors) before unpickling anything.

Safety: files are read with `weights_only=True` (no code runs), then every field is checked for
type, shape and finite values (fields.py). A file whose pickle needs more - an older
checkpoint holding numpy objects, or a crafted one - is refused with the command that converts
it, `python -m tcgleague.checkpoint convert OLD.pt [NEW.pt]`, for files the user trusts.

A legacy checkpoint (no `format`, written before fingerprints; or a league member file from
before members were checkpoint-format files) loads with a warning - nothing can be verified -
and is refused under strict.

`load_checkpoint` is THE load-and-validate path: train.py's resume and evaluate_checkpoint both
call it, so they accept and refuse exactly the same files with the same messages.
"""

from __future__ import annotations

import json
import pickle
import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..atomic import atomic_write
from ..errors import WriteError
from ..fingerprint import (
    changed_sources,
    compute_fingerprint,
    source_hashes,
)
from ..game import family_of
from .compatible import changed_sources_warning, check_compatible, unverifiable_warning, version_notes
from .field_types import CheckpointError, FieldError
from .fields import check_against_policy, check_fields, check_resume_fields

FORMAT = "tcgleague-checkpoint"
FORMAT_VERSION = 1
REQUIRED_KEYS = ("policy", "policy_config", "global_step", "epoch", "fingerprint")


# ---- files --------------------------------------------------------------------------------
def checkpoint_due(train: Any, global_step: int, epoch: int) -> bool:
    """After this epoch (`global_step` reached), by [train] checkpoint_interval (+ _unit epochs or steps)."""
    if train.checkpoint_interval_unit == "steps":
        every = train.checkpoint_interval
        return global_step // every != (global_step - train.batch_size) // every
    return epoch % train.checkpoint_interval == 0


def checkpoint_path(run_dir: Path, run_name: str, epoch: int) -> Path:
    return Path(run_dir) / f"model_{run_name}_{epoch:06d}.pt"


def _epoch_of(path: Path) -> int:
    return int(path.stem.rsplit("_", 1)[1])


def list_checkpoints(run_dir: Path, run_name: str) -> list[Path]:
    """Complete checkpoints of one run directory, oldest first (by epoch, then mtime)."""
    found = Path(run_dir).glob(f"model_{run_name}_[0-9][0-9][0-9][0-9][0-9][0-9].pt")
    return sorted(found, key=lambda p: (_epoch_of(p), p.stat().st_mtime))


def prune_checkpoints(run_dir: Path, run_name: str, keep: int) -> None:
    for old in list_checkpoints(run_dir, run_name)[:-keep]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)


def latest_checkpoint(experiments_dir: Path, run_name: str) -> Path | None:
    """The newest checkpoint of `run_name` under `experiments_dir` (every `<run_name>_<id>`
    run directory): newest by modification time, then by epoch. None if there is none."""
    found = []
    for run_dir in Path(experiments_dir).glob(f"{run_name}_*"):
        if run_dir.is_dir():
            found.extend(list_checkpoints(run_dir, run_name))
    return max(found, key=lambda p: (p.stat().st_mtime_ns, _epoch_of(p))) if found else None


# ---- saving -------------------------------------------------------------------------------
SIDECAR_KEYS = (
    "run_name",
    "epoch",
    "global_step",
    "anneal_offset",
    "anneal",
    "sampling_params",
    "policy_config",
    "health",
    "metrics",
    "fingerprint",
    "resumed_from",
    "league",
    "normalizer",
    "created",
)


def write_checkpoint(path: Path, state: dict, config: dict | None = None, game: str | None = None) -> Path:
    """Writes `state` (a trainer's or a member's state dict: tensors and plain values only) as
    a checkpoint at `path` with its format, fingerprint and JSON sidecar, atomically; a file
    that cannot be written raises WriteError and leaves neither (the older checkpoints as they were)."""
    path = Path(path)
    state = dict(
        state,
        format=FORMAT,
        format_version=FORMAT_VERSION,
        fingerprint=compute_fingerprint(config, game),
        created=time.time(),
    )
    try:
        check_fields(state)  # what is written must load: never a NaN weight or a malformed field
    except FieldError as err:
        raise ValueError(f"refusing to write checkpoint {path}: {err}") from None
    atomic_write(path, lambda f: torch.save(state, f))
    sidecar = {k: state.get(k) for k in SIDECAR_KEYS}
    sidecar.update(file=path.name, bytes=path.stat().st_size, format=FORMAT, format_version=FORMAT_VERSION)
    try:
        atomic_write(path.with_suffix(".json"), lambda f: f.write(json.dumps(sidecar, indent=2, default=str).encode()))
    except WriteError:
        path.unlink(missing_ok=True)  # all or nothing: `latest` never picks a checkpoint without its sidecar
        raise
    return path


def save_checkpoint(run_dir: Path, run_name: str, state: dict, config: dict, max_checkpoints: int) -> Path:
    """A run checkpoint `model_<run_name>_<epoch>.pt` from a trainer's `state_dict()`, then
    retention (the newest `max_checkpoints` kept)."""
    path = write_checkpoint(
        checkpoint_path(run_dir, run_name, int(state["epoch"])), dict(state, run_name=run_name), config
    )
    prune_checkpoints(run_dir, run_name, max_checkpoints)
    return path


def save_policy(
    path: Path, weights: dict, policy_config: dict, sampling_params: dict, step: int, epoch: int, game: str
) -> Path:
    """A policy-only checkpoint (a league member of a `game` run): weights, architecture and
    sampler, loadable by `load_checkpoint` like any checkpoint."""
    return write_checkpoint(
        path,
        {
            "policy": weights,
            "policy_config": dict(policy_config),
            "sampling_params": dict(sampling_params),
            "global_step": int(step),
            "epoch": int(epoch),
        },
        game=game,
    )


# ---- loading and validation ------------------------------------------------------------------
@dataclass
class LoadedCheckpoint:
    path: Path
    state: dict
    policy_config: Any  # the policy family's config dataclass (game.family_of)
    policy: nn.Module
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def global_step(self) -> int:
        return int(self.state["global_step"])

    @property
    def anneal_step(self) -> int:
        """The step the anneals stood at (global_step plus the run's own anneal offset)."""
        return int(self.state["global_step"]) + int(self.state.get("anneal_offset") or 0)


UNSAFE_HINT = (
    "it is refused because unpickling it could run arbitrary code. If it is an older tcgleague checkpoint "
    "holding numpy values, convert it once (this runs no code either): python -m tcgleague.checkpoint convert {path}"
)


def read_state(path: Path, allowed: list | tuple = ()) -> dict:
    """The checkpoint's dict, by torch.load with weights_only=True: tensors and plain containers
    only (plus the `allowed` globals), so no code runs."""
    try:
        with torch.serialization.safe_globals(list(allowed)):
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        named = re.search(r"GLOBAL ([\w.]+)", str(err))
        needs = f"it names {named[1]}" if named else str(err).splitlines()[0][:200]
        hint = (
            "convert reads numpy values only: no code runs from a checkpoint"
            if allowed
            else UNSAFE_HINT.format(path=path)
        )
        raise CheckpointError(f"checkpoint {path} holds more than tensors and plain values ({needs}); {hint}") from None
    except Exception as err:  # noqa: BLE001 - any other unpickling failure means an unusable file
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(err).__name__}: {err})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} is not a tcgleague checkpoint (it holds a {type(state).__name__})")
    return state


def verify_archive(path: Path) -> None:
    """The file exists and is a complete zip whose members all match their CRC-32."""
    if not path.is_file():
        what = "is a directory, not a checkpoint file" if path.is_dir() else "not found"
        raise CheckpointError(f"checkpoint {path} {what}")
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, UnicodeDecodeError, ValueError) as err:
        raise CheckpointError(
            f"checkpoint {path} is truncated or corrupted (not a complete torch zip archive: {err})"
        ) from None
    if bad is not None:
        raise CheckpointError(f"checkpoint {path} is corrupted: CRC mismatch in member {bad!r}")


def _read(path: Path) -> dict:
    verify_archive(path)
    state = read_state(path)
    try:
        check_fields(state)
    except FieldError as err:
        raise CheckpointError(f"checkpoint {path} is damaged: {err}") from None
    if state.get("format") != FORMAT:
        if "format" not in state and "step" in state and "global_step" not in state:
            state["global_step"] = state["step"]  # a league member file written before members were checkpoints
        if all(k in state for k in REQUIRED_KEYS if k != "fingerprint") and "format" not in state:
            state["fingerprint"] = None  # legacy: written before checkpoints carried fingerprints
            return state
        raise CheckpointError(
            f"checkpoint {path} is not a tcgleague checkpoint (format {state.get('format')!r}, expected {FORMAT!r})"
        )
    if state.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {state['format_version']}; this code reads up to {FORMAT_VERSION}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"checkpoint {path} is incomplete: missing {', '.join(missing)}")
    return state


def load_checkpoint(
    path,
    policy_config=None,
    strict: bool = False,
    log=print,
    run_state: bool = False,
    game: str | None = None,
    mixture_ok: bool = False,
) -> LoadedCheckpoint:
    """Reads, verifies and validates a checkpoint, and builds its policy with the weights.

    - unreadable, truncated or corrupted file, or one whose pickle needs more than tensors and
      plain values: CheckpointError naming the file;
    - a field of the wrong type or shape, or non-finite weights: refused, naming the field;
    - `run_state` (--resume-load-optimizer): the optimizer, scheduler, RNG and run state must
      be there too;
    - observation layout or action space differs from the code's: refused, saying what differs;
    - `game` given (resume: the run's) and another than the checkpoint's: refused;
    - `policy_config` given (resume: the run's architecture) and different from the stored one:
      refused, naming each field ("architecture differs: hidden_size 32 vs 128"); when None
      (evaluation) the stored architecture is used, but its card count must match the code's;
    - behaviour-defining source changed: a warning naming the files, or with `strict`
      (--resume-strict) a refusal naming them;
    - a league mixture (league_policy.pt) unless `mixture_ok`: its caller plays one policy.
    """
    path = Path(path)
    state = _read(path)
    if "mixture" in state and not mixture_ok:
        raise CheckpointError(
            f"{path} is a league mixture (league_policy.pt: one member drawn per game); this command plays one "
            "policy: give it a member (<run>/league/members/<id>.pt), or judge the mixture with evaluate_checkpoint "
            "or python -m tcgleague.exact"
        )
    if run_state:
        try:
            check_resume_fields(state)
        except FieldError as err:
            raise CheckpointError(f"checkpoint {path} cannot be resumed exactly: {err}") from None
    loaded_warnings = []
    fp = state["fingerprint"] or {}
    if state["fingerprint"] is None:
        loaded_warnings.append(unverifiable_warning(path, state, strict))
        log(loaded_warnings[-1])
    stored_arch = check_compatible(path, state, fp, policy_config, game)
    changed = changed_sources(fp.get("source_hashes") or {}, source_hashes()) if fp else []
    if changed:
        loaded_warnings.append(changed_sources_warning(path, changed, strict))
        log(loaded_warnings[-1])
    notes = version_notes(fp)
    arch, policy = _policy_of(path, state, stored_arch)
    return LoadedCheckpoint(path, state, arch, policy, loaded_warnings, notes)


def _policy_of(path: Path, state: dict, stored_arch: dict) -> tuple[Any, nn.Module]:
    """The stored architecture and a policy holding the stored weights, checked against the
    fields whose shapes follow it."""
    try:
        family = family_of(stored_arch)
        arch = family.config_from_dict(stored_arch)
        policy = family.from_state(state["policy"], arch)
    except (RuntimeError, ValueError, TypeError) as err:
        raise CheckpointError(f"checkpoint {path}: weights do not fit the architecture: {err}") from None
    try:
        check_against_policy(state, policy)
    except FieldError as err:
        raise CheckpointError(f"checkpoint {path} is damaged: {err}") from None
    return arch, policy
