"""Structural validation of a checkpoint's fields, before any of them is used.

A checkpoint comes from a file someone may have damaged or crafted. `torch.load(weights_only=
True)` guarantees it holds only tensors and plain containers; this module checks that each
field the code reads has the type, shape and (finite) values it expects, so a bad file is
refused with `FieldError(field, problem)` naming the field (`run_state.state_h`,
`policy.core.weight_ih`) rather than failing somewhere inside the trainer.

    check_fields(state)                    every field present (a policy file or a run checkpoint)
    check_resume_fields(state)             + the run state --resume-load-optimizer restores
    check_against_policy(state, policy)    tensors whose shapes follow the architecture
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ..config.validate import MAX_ATTENTION_LAYERS, MAX_WIDTH
from ..layout import ACTION_WIDTH
from ..policy.tcg_policy import OPTIONAL_WIDTHS
from ..policy.tcg_sampler import TCGSampler
from ..vecenv import VecEnv

RESUME_FIELDS = ("optimizer", "scheduler", "rng", "run_state")
MT19937_WORDS = 624  # python `random` and numpy's legacy generator both use MT19937


class FieldError(ValueError):
    def __init__(self, field: str, problem: str):
        super().__init__(f"field {field}: {problem}")
        self.field, self.problem = field, problem

    def __reduce__(self):  # pickled whole: under torchrun a refusal travels from rank 0 to the others
        return FieldError, (self.field, self.problem)


def _require(ok: bool, field: str, problem: str) -> None:
    if not ok:
        raise FieldError(field, problem)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: Any, field: str) -> None:
    _require(_is_int(v) and v >= 0, field, f"expected an integer >= 0, got {v!r}")


def _dict(v: Any, field: str) -> dict:
    _require(isinstance(v, dict), field, f"expected a dict, got {type(v).__name__}")
    return v


def _optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], None]:
    def run(v: Any, field: str) -> None:
        if v is not None:
            check(v, field)

    return run


def _tensor(v: Any, field: str, kind: str, shape: tuple | None = None) -> torch.Tensor:
    """`kind`: float (finite values), int, bool or uint8."""
    _require(isinstance(v, torch.Tensor), field, f"expected a tensor, got {type(v).__name__}")
    ok_dtype = {
        "float": v.is_floating_point(),
        "int": not v.is_floating_point() and not v.is_complex() and v.dtype != torch.bool,
        "bool": v.dtype == torch.bool,
        "uint8": v.dtype == torch.uint8,
    }[kind]
    _require(ok_dtype, field, f"expected a {kind} tensor, got dtype {v.dtype}")
    if shape is not None:
        _require(tuple(v.shape) == tuple(shape), field, f"expected shape {list(shape)}, got {list(v.shape)}")
    if kind == "float":
        bad = int((~torch.isfinite(v)).sum())
        _require(bad == 0, field, f"{bad} of {v.numel()} values are NaN or infinite")
    return v


def _tensors(v: Any, field: str) -> None:
    """Every tensor anywhere inside `v` (dicts, lists, tuples) is finite where it is floating."""
    if isinstance(v, torch.Tensor):
        if v.is_floating_point():
            _tensor(v, field, "float")
    elif isinstance(v, dict):
        for k, item in v.items():
            _tensors(item, f"{field}[{k}]" if _is_int(k) else f"{field}.{k}")
    elif isinstance(v, (list, tuple)):
        for i, item in enumerate(v):
            _tensors(item, f"{field}[{i}]")
    elif isinstance(v, float):
        _require(math.isfinite(v), field, f"{v!r} is not finite")


def _str_map(v: Any, field: str, values: Callable[[Any], bool], what: str) -> None:
    for k, item in _dict(v, field).items():
        _require(isinstance(k, str) and values(item), f"{field}.{k}", f"expected {what}, got {item!r}")


def _policy(v: Any, field: str) -> None:
    _require(len(_dict(v, field)) > 0, field, "holds no weights")
    for k, item in v.items():
        _require(isinstance(k, str), field, f"weight names must be strings, got {k!r}")
        _tensor(item, f"{field}.{k}", "float")


def _policy_config(v: Any, field: str) -> None:
    """Bounded too: a loader allocates whatever a crafted architecture asks for."""
    for k, x in _dict(v, field).items():
        low = 0 if k in OPTIONAL_WIDTHS else 1
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
        TCGSampler.from_params(params)
    except ValueError as err:
        raise FieldError(field, str(err)) from None


def _optional_numbers(v: Any, field: str) -> None:
    _str_map(v, field, lambda x: x is None or _is_number(x), "a finite number or none")


def _config(v: Any, field: str) -> None:
    _str_map(v, field, lambda x: isinstance(x, dict), "a section dict")


def _text(v: Any, field: str) -> None:
    _require(isinstance(v, str), field, f"expected a string, got {type(v).__name__}")


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
    "league": _optional(lambda v, f: _league(v, f)),  # defined below, with the optimizer it holds
    "dist": _optional(lambda v, f: _dist(v, f)),  # defined below, with the run state it repeats per rank
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


# ---- the run state (--resume-load-optimizer) -------------------------------------------------
MAX_HYPERPARAMETER = 1e6  # past it Adam's float32 arithmetic overflows
ADAM_GROUP = {  # Adam's hyperparameters per parameter group, as the trainer builds it
    "lr": lambda x: _is_number(x) and 0 <= x <= MAX_HYPERPARAMETER,
    "eps": lambda x: _is_number(x) and 0 < x <= MAX_HYPERPARAMETER,
    "weight_decay": lambda x: _is_number(x) and 0 <= x <= MAX_HYPERPARAMETER,
    "betas": lambda x: isinstance(x, (tuple, list)) and len(x) == 2 and all(_is_number(b) and 0 <= b < 1 for b in x),
}
ADAM_STATE = ("step", "exp_avg", "exp_avg_sq")


def _optimizer(v: Any, field: str) -> None:
    _dict(v, field)
    groups = v.get("param_groups")
    _require(isinstance(groups, list) and len(groups) > 0, f"{field}.param_groups", "expected a non-empty list")
    for i, group in enumerate(groups):
        where = f"{field}.param_groups[{i}]"
        params = _dict(group, where).get("params")
        _require(
            isinstance(params, list) and all(_is_int(p) for p in params),
            f"{where}.params",
            "expected a list of parameter indices",
        )
        for key, ok in ADAM_GROUP.items():
            _require(key in group and ok(group[key]), f"{where}.{key}", f"invalid value {group.get(key)!r}")
        for key, value in group.items():
            _require(
                key in ADAM_GROUP
                or key == "params"
                or value is None
                or isinstance(value, (bool, str))
                or _is_number(value),
                f"{where}.{key}",
                f"expected a flag or a number, got {value!r}",
            )
    state = _dict(v.get("state"), f"{field}.state")
    for k, entry in state.items():
        _require(_is_int(k), f"{field}.state", f"keys must be parameter indices, got {k!r}")
        _dict(entry, f"{field}.state[{k}]")
        for key in ADAM_STATE:
            _require(isinstance(entry.get(key), torch.Tensor), f"{field}.state[{k}].{key}", "expected a tensor")
        step = _tensor(entry["step"], f"{field}.state[{k}].step", "float", ())
        _require(float(step) >= 0, f"{field}.state[{k}].step", f"expected a count >= 0, got {float(step)}")
    _tensors(state, f"{field}.state")


def _scheduler(v: Any, field: str) -> None:
    """LambdaLR's state: the LR schedule itself is rebuilt from the config."""
    _dict(v, field)
    for key in ("last_epoch", "_step_count"):
        _require(_is_int(v.get(key)) and v[key] >= -1, f"{field}.{key}", f"expected an integer, got {v.get(key)!r}")
    for key in ("base_lrs", "_last_lr"):
        lrs = v.get(key)
        _require(
            isinstance(lrs, list) and len(lrs) > 0 and all(_is_number(x) for x in lrs),
            f"{field}.{key}",
            "expected a list of finite learning rates",
        )
    lambdas = v.get("lr_lambdas")
    _require(
        isinstance(lambdas, list) and all(x is None or isinstance(x, dict) for x in lambdas),
        f"{field}.lr_lambdas",
        "expected a list of none or dicts",
    )


def _scheduler_fits_optimizer(state: dict) -> None:
    """One learning rate and one schedule entry per parameter group."""
    groups = len(state["optimizer"]["param_groups"])
    for key in ("base_lrs", "_last_lr", "lr_lambdas"):
        n = len(state["scheduler"][key])
        _require(n == groups, f"scheduler.{key}", f"has {n} entries; the optimizer has {groups} parameter groups")


def _generator(v, field: str) -> None:
    """A torch.Generator's state: a 1-d uint8 tensor."""
    _require(_tensor(v, field, "uint8").dim() == 1, field, "expected a 1-d state")


def _rng(v: Any, field: str) -> None:
    _dict(v, field)
    py = v.get("python")
    _require(
        isinstance(py, (tuple, list))
        and len(py) == 3
        and _is_int(py[0])
        and isinstance(py[1], (tuple, list))
        and len(py[1]) == MT19937_WORDS + 1
        and all(_is_int(x) and 0 <= x < 2**32 for x in py[1][:-1])
        and _is_int(py[1][-1])
        and 0 <= py[1][-1] <= MT19937_WORDS,
        f"{field}.python",
        "expected python random's state (version, 625 words, gauss)",
    )
    np_state = _dict(v.get("numpy"), f"{field}.numpy")
    _require(np_state.get("kind") == "MT19937", f"{field}.numpy.kind", "expected 'MT19937'")
    keys = _tensor(np_state.get("keys"), f"{field}.numpy.keys", "int", (MT19937_WORDS,)).to(torch.int64)
    _require(bool(((keys >= 0) & (keys < 2**32)).all()), f"{field}.numpy.keys", "words must be in [0, 2**32)")
    pos = np_state.get("pos")
    _require(_is_int(pos) and 0 <= pos <= MT19937_WORDS, f"{field}.numpy.pos", f"expected 0 .. {MT19937_WORDS}")
    _require(np_state.get("has_gauss") in (0, 1), f"{field}.numpy.has_gauss", "expected 0 or 1")
    _require(_is_number(np_state.get("cached_gaussian")), f"{field}.numpy.cached_gaussian", "expected a number")
    _tensor(v.get("torch"), f"{field}.torch", "uint8", tuple(torch.get_rng_state().shape))
    _generator(v.get("generator"), f"{field}.generator")
    cuda = v.get("cuda")
    _require(
        cuda is None
        or (isinstance(cuda, list) and all(isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda)),
        f"{field}.cuda",
        "expected none or a list of uint8 tensors",
    )


def _run_state(v: Any, field: str) -> None:
    _dict(v, field)
    n = v.get("num_agents")
    _require(_is_int(n) and n >= 2 and n % 2 == 0, f"{field}.num_agents", f"expected an even integer >= 2, got {n!r}")
    env = v.get("env")
    if env is not None:
        _dict(env, f"{field}.env")
        _text(env.get("backend"), f"{field}.env.backend")
        engines = env.get("engines")
        _require(
            isinstance(engines, list) and all(isinstance(b, bytes) for b in engines),
            f"{field}.env.engines",
            "expected a list of engine state bytes",
        )
        buffers = env.get("buffers")
        _str_map(buffers, f"{field}.env.buffers", lambda x: isinstance(x, torch.Tensor), "a tensor")
        missing = [k for k in VecEnv.BUFFER_NAMES if k not in buffers]
        _require(not missing, f"{field}.env.buffers", f"missing {', '.join(missing)}")
    h = _tensor(v.get("state_h"), f"{field}.state_h", "float")
    _require(h.dim() == 2 and h.shape[0] == n, f"{field}.state_h", f"expected shape [{n}, hidden], got {list(h.shape)}")
    _tensor(v.get("state_c"), f"{field}.state_c", "float", tuple(h.shape))
    _tensor(v.get("episode_start"), f"{field}.episode_start", "bool", (n,))
    _tensor(v.get("actions"), f"{field}.actions", "int", (n, ACTION_WIDTH))


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


RESUME_CHECKS: dict[str, Callable[[Any, str], None]] = {
    "optimizer": _optimizer,
    "scheduler": _scheduler,
    "rng": _rng,
    "run_state": _run_state,
}


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
