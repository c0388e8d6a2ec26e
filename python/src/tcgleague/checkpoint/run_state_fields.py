"""Validators of the run state a checkpoint holds for an exact continuation (--resume-load-
optimizer): the optimizer, the LR scheduler, the random generators and the run state (engine
states, env buffers, LSTM state). fields.py's `check_fields` runs them on whichever is present."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..vecenv import VecEnv
from .field_types import _dict, _is_int, _is_number, _require, _str_map, _tensor, _tensors, _text

RESUME_FIELDS = ("optimizer", "scheduler", "rng", "run_state")
MT19937_WORDS = 624  # python `random` and numpy's legacy generator both use MT19937

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
    if v.get("own_log_reach") is not None:  # absent in checkpoints from before counterfactual.py
        _tensor(v.get("own_log_reach"), f"{field}.own_log_reach", "float", (n,))
    a = _tensor(v.get("actions"), f"{field}.actions", "int")  # [rows, the game's action width]
    _require(a.dim() == 2 and a.shape[0] == n, f"{field}.actions", f"expected shape [{n}, width], got {list(a.shape)}")


RESUME_CHECKS: dict[str, Callable[[Any, str], None]] = {
    "optimizer": _optimizer,
    "scheduler": _scheduler,
    "rng": _rng,
    "run_state": _run_state,
}
