"""CheckpointError, FieldError and the type checks every checkpoint field validator is built from (fields.py,
run_state_fields.py): each raises `FieldError(field, problem)` naming the field it refuses."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ..errors import UserInputError


class CheckpointError(UserInputError, RuntimeError):
    """A checkpoint cannot be used: missing, unreadable, corrupted or incompatible. The message
    names the file and what is wrong."""

    label = "checkpoint refused"


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


def _text(v: Any, field: str) -> None:
    _require(isinstance(v, str), field, f"expected a string, got {type(v).__name__}")
