"""Structural validation of a checkpoint's fields, before any of them is used.

A checkpoint comes from a file someone may have damaged or crafted. `torch.load(weights_only=
True)` guarantees it holds only tensors and plain containers; this module checks that each
field the code reads has the type, shape and (finite) values it expects, so a bad file is
refused with `FieldError(field, problem)` naming the field (`run_state.state_h`,
`policy.core.weight_ih`) rather than failing somewhere inside the trainer.

    check_fields(state)                    every field present (a policy file or a run checkpoint)
    check_resume_fields(state)             + the run state --resume-load-optimizer restores
    check_against_policy(state, policy)    tensors whose shapes follow the architecture

The type checks they are built from (and FieldError) are in field_types.py; the validators of
the run state (optimizer, scheduler, RNG, run_state) in run_state_fields.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..config.sections import MAGNET_KINDS
from ..config.validate import MAX_ATTENTION_LAYERS, MAX_WIDTH
from ..fingerprint import checkpoint_game
from ..game import GAME_NAMES, every_game, family_names, game_named
from ..policy.family import strip_compile_prefix
from ..policy.sampling import SamplingParameters
from .field_types import (
    FieldError,
    _count,
    _dict,
    _is_int,
    _is_number,
    _optional,
    _require,
    _str_map,
    _tensor,
    _text,
)
from .run_state_fields import (
    RESUME_CHECKS,
    RESUME_FIELDS,
    _generator,
    _optimizer,
    _run_state,
    _scheduler_fits_optimizer,
)


def _policy(v: Any, field: str) -> None:
    _require(len(_dict(v, field)) > 0, field, "holds no weights")
    for k, item in v.items():
        _require(isinstance(k, str), field, f"weight names must be strings, got {k!r}")
        _tensor(item, f"{field}.{k}", "float")


def _policy_config(v: Any, field: str) -> None:
    """Bounded too: a loader allocates whatever a crafted architecture asks for."""
    optional_widths = {name for game in every_game() for name in game.family.optional_widths}
    for k, x in _dict(v, field).items():
        if k == "family":
            _require(x in family_names(), f"{field}.{k}", f"expected one of {', '.join(family_names())}, got {x!r}")
            continue
        low = 0 if k in optional_widths else 1
        high = MAX_ATTENTION_LAYERS if k == "entity_attention_layers" else MAX_WIDTH
        ok = isinstance(k, str) and _is_int(x) and low <= x <= high
        _require(ok, f"{field}.{k}", f"expected an integer in [{low}, {high}], got {x!r}")


def _fingerprint(v: Any, field: str) -> None:
    _dict(v, field)
    for key in ("obs_layout_hash", "action_space_hash", "config_hash"):
        _require(v.get(key) is None or isinstance(v.get(key), str), f"{field}.{key}", "expected a hash string")
    _str_map(v.get("source_hashes") or {}, f"{field}.source_hashes", lambda x: isinstance(x, str), "a hash string")
    _str_map(v.get("versions") or {}, f"{field}.versions", lambda x: x is None or isinstance(x, str), "a string")


def _numbers(v: Any, field: str) -> None:
    _str_map(v, field, _is_number, "a finite number")


def _sampling(v: Any, field: str, prefix: str = "") -> None:
    """Sampler parameters (`prefix`: as the anneal values name them) the sampler accepts."""
    _numbers(v, field)
    params = {k[len(prefix) :]: x for k, x in v.items() if k.startswith(prefix)}
    try:
        SamplingParameters.from_params(params)
    except ValueError as err:
        raise FieldError(field, str(err)) from None


def _optional_numbers(v: Any, field: str) -> None:
    _str_map(v, field, lambda x: x is None or _is_number(x), "a finite number or none")


def _config(v: Any, field: str) -> None:
    _str_map(v, field, lambda x: isinstance(x, dict), "a section dict")


TOP_FIELDS: dict[str, Callable[[Any, str], Any]] = {
    "format": _text,
    "format_version": lambda v, f: _require(_is_int(v) and v >= 1, f, f"expected an integer >= 1, got {v!r}"),
    "fingerprint": _optional(_fingerprint),
    "policy": _policy,
    "policy_config": _policy_config,
    "sampling_params": _optional(_sampling),
    "global_step": _count,
    "epoch": _count,
    "anneal_offset": _optional(_count),
    "anneal": _optional(lambda v, f: _sampling(v, f, prefix="sampler/")),
    "health": _optional(_optional_numbers),
    "metrics": _optional(_numbers),
    "config": _optional(_config),
    "run_name": _optional(_text),
    "resumed_from": _optional(_text),
    "magnet": _optional(lambda v, f: _magnet(v, f)),  # defined below
    "average": _optional(lambda v, f: _average(v, f)),
    "league": _optional(lambda v, f: _league(v, f)),
    "dist": _optional(lambda v, f: _dist(v, f)),  # defined below
    "normalizer": lambda v, f: _require(v is None, f, "expected none (there is no normaliser)"),
}


def check_fields(state: dict) -> None:
    """Every known field present in `state` has its expected type and finite values."""
    for key, check in TOP_FIELDS.items():
        if key in state:
            check(state[key], key)
    for key in RESUME_FIELDS:
        if key in state:
            RESUME_CHECKS[key](state[key], key)
    if "optimizer" in state and "scheduler" in state:
        _scheduler_fits_optimizer(state)
    _actions_fit_the_game(state)


def _actions_fit_the_game(state: dict) -> None:
    """The running games' last actions are as wide as an action of the checkpoint's game (its
    fingerprint's), on every rank's part."""
    game = checkpoint_game(state)
    width = game_named(game).action_width if game in GAME_NAMES else None
    ranks = ((state.get("dist") or {}).get("ranks") or {}).items()
    parts = [("run_state", state.get("run_state"))]
    parts += [(f"dist.ranks.{rank}.run_state", part.get("run_state")) for rank, part in ranks]
    for field, run in parts:
        if width is not None and run is not None:
            n = run["actions"].shape[0]
            _require(run["actions"].shape == (n, width), f"{field}.actions", f"expected shape [{n}, {width}]")


MAX_WORLD_SIZE = 1 << 16


def _dist(v: Any, field: str) -> None:
    """The ranks of the job that wrote the checkpoint: rank 0's state is at the top level, each
    other rank's run state, sampling stream and league side under `ranks["<rank>"]`."""
    _dict(v, field)
    world = v.get("world_size")
    _require(
        _is_int(world) and 1 <= world <= MAX_WORLD_SIZE,
        f"{field}.world_size",
        f"expected an integer in [1, {MAX_WORLD_SIZE}], got {world!r}",
    )
    ranks = _dict(v.get("ranks"), f"{field}.ranks")
    expected = [str(r) for r in range(1, world)]
    _require(sorted(ranks) == sorted(expected), f"{field}.ranks", f"expected ranks {expected}, got {sorted(ranks)}")
    for rank, part in ranks.items():
        where = f"{field}.ranks.{rank}"
        _dict(part, where)
        _optional(_run_state)(part.get("run_state"), f"{where}.run_state")
        _generator(part.get("generator"), f"{where}.generator")
        _text(part.get("generator_device"), f"{where}.generator_device")
        _optional(_league)(part.get("league"), f"{where}.league")
    digests = v.get("weight_digests")
    _require(
        isinstance(digests, list) and len(digests) == world and all(isinstance(d, str) for d in digests),
        f"{field}.weight_digests",
        f"expected {world} digest strings",
    )


def _magnet(v: Any, field: str) -> None:
    """The regularizer's magnet (magnet.py): its kind, when it was last replaced, its weights."""
    kind = _dict(v, field).get("kind")
    _require(kind in MAGNET_KINDS, f"{field}.kind", f"expected one of {', '.join(MAGNET_KINDS)}, got {kind!r}")
    _count(v.get("replaced_at"), f"{field}.replaced_at")
    _optional(_policy)(v.get("policy"), f"{field}.policy")


def _average(v: Any, field: str) -> None:
    """The run's average policy (average.py): when the last snapshot was taken, and each snapshot."""
    _count(_dict(v, field).get("taken_at"), f"{field}.taken_at")
    snapshots = v.get("snapshots")
    _require(isinstance(snapshots, list), f"{field}.snapshots", f"expected a list, got {type(snapshots).__name__}")
    for k, snapshot in enumerate(snapshots):
        where = f"{field}.snapshots[{k}]"
        _count(_dict(snapshot, where).get("global_step"), f"{where}.global_step")
        _policy(snapshot.get("policy"), f"{where}.policy")
        _sampling(snapshot.get("sampling_params"), f"{where}.sampling_params")


def _learner_copies(state: dict) -> dict[str, dict]:
    """The copies of the learner's weights a run checkpoint keeps beside it, by field: the magnet's
    and the average's snapshots (their tensors must have the learner's names and shapes)."""
    copies = {"magnet.policy": (state.get("magnet") or {}).get("policy")}
    for k, snapshot in enumerate((state.get("average") or {}).get("snapshots") or []):
        copies[f"average.snapshots[{k}].policy"] = snapshot.get("policy")
    return {where: weights for where, weights in copies.items() if weights is not None}


def _league(v: Any, field: str) -> None:
    """The league side's state. The tensors of its main exploiter (a second learner) are checked
    like the learner's; the rest (matchmaker, manager, frozen pool) is checked where it is read."""
    exploiter = _dict(v, field).get("exploiter")
    if exploiter is None:
        return
    where = f"{field}.exploiter"
    _dict(exploiter, where)
    _policy(exploiter.get("policy"), f"{where}.policy")
    _optimizer(exploiter.get("optimizer"), f"{where}.optimizer")
    for key in ("state_h", "state_c"):
        _tensor(exploiter.get(key), f"{where}.{key}", "float")
    snapshot = exploiter.get("snapshot")  # its frozen copy of the learner (exploiter_opponent = snapshot)
    if snapshot is not None:
        _dict(snapshot, f"{where}.snapshot")
        _policy(snapshot.get("policy"), f"{where}.snapshot.policy")
        for key in ("state_h", "state_c"):
            _tensor(snapshot.get(key), f"{where}.snapshot.{key}", "float")


def check_resume_fields(state: dict) -> None:
    """The fields an exact continuation restores must all be there (check_fields checked them)."""
    missing = [k for k in RESUME_FIELDS if k not in state]
    _require(
        not missing,
        ", ".join(missing),
        "missing: this file holds no run state (a league member or a policy-only file); resume it without "
        "--resume-load-optimizer to load the weights only",
    )


def check_against_policy(state: dict, policy: torch.nn.Module) -> None:
    """Shapes that follow the architecture: the optimizer's per-parameter state and the LSTM state."""
    params = list(policy.parameters())
    if "optimizer" in state:
        indices = [i for g in state["optimizer"]["param_groups"] for i in g["params"]]
        _require(
            sorted(indices) == list(range(len(params))),
            "optimizer.param_groups",
            f"must name each of the policy's {len(params)} parameters once (it names {len(indices)}, "
            f"{len(set(indices))} distinct)",
        )
        for i, entry in state["optimizer"]["state"].items():
            _require(0 <= i < len(params), "optimizer.state", f"parameter index {i} is out of range")
            for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                value = entry.get(key)
                if value is not None:
                    _require(
                        value.shape == params[i].shape,
                        f"optimizer.state[{i}].{key}",
                        f"shape {list(value.shape)} does not fit parameter shape {list(params[i].shape)}",
                    )
    shapes = {k: v.shape for k, v in strip_compile_prefix(policy.state_dict()).items()}
    for where, weights in _learner_copies(state).items():
        _require(set(weights) == set(shapes), where, "its weight names are not the policy's")
        for k, tensor in weights.items():
            _require(
                tensor.shape == shapes[k],
                f"{where}.{k}",
                f"shape {list(tensor.shape)} does not fit the policy's {list(shapes[k])}",
            )
    hidden = getattr(getattr(policy, "config", None), "hidden_size", None)
    runs = {"run_state": state.get("run_state")}
    for rank, part in ((state.get("dist") or {}).get("ranks") or {}).items():
        runs[f"dist.ranks.{rank}.run_state"] = part.get("run_state")
    for where, run in runs.items():
        if run is not None and hidden is not None:
            _require(
                run["state_h"].shape[1] == hidden,
                f"{where}.state_h",
                f"hidden size {run['state_h'].shape[1]}, the policy's is {hidden}",
            )
