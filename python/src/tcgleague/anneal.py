"""Linear anneals keyed on `global_step`.

Five anneals exist: `subaction_temperature` and `smoothing_eps` (keys in [policy]), `ent_coef`,
`magnet_coef` and `lr_scale` (a factor on the scheduled learning rate; keys in [train]), each
configured by `<name>_initial`, `<name>_final`, `<name>_anneal_start_frac`, `<name>_anneal_end_frac`
and optional absolute `<name>_anneal_start_step` / `<name>_anneal_end_step` (which override the
matching frac).

The trainer evaluates them at the start of every epoch at the current `global_step` (restored
exactly on resume). When a run resumes weights without restoring the optimizer/global_step,
pass the checkpoint's step as `step_offset` so the anneals continue where they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import ANNEALS, anneal_settings

# Metric names under which each anneal's value is logged.
METRIC_NAMES = {
    "subaction_temperature": "sampler/subaction_temperature",
    "smoothing_eps": "sampler/smoothing_eps",
    "ent_coef": "anneal/ent_coef",
}


@dataclass
class LinearAnneal:
    initial: float
    final: float
    start_frac: float = 0.0
    end_frac: float = 1.0
    start_step: int | None = None
    end_step: int | None = None

    def bounds(self, total_timesteps: int) -> tuple[float, float]:
        """(start, end) in steps: an absolute *_step overrides the matching *_frac."""
        start = self.start_step if self.start_step is not None else self.start_frac * total_timesteps
        end = self.end_step if self.end_step is not None else self.end_frac * total_timesteps
        if end < start:
            raise ValueError(
                f"anneal end ({end:g}) precedes its start ({start:g}) with total_timesteps = {total_timesteps}"
            )
        return float(start), float(end)

    def value(self, global_step: int, total_timesteps: int, step_offset: int = 0) -> float:
        """initial before the start, final from the end on, linear in between.

        With start == end the value steps from initial to final at that step.
        """
        if self.initial == self.final:
            return float(self.initial)
        step = global_step + step_offset
        start, end = self.bounds(total_timesteps)
        if step >= end:
            return float(self.final)
        if step <= start:
            return float(self.initial)
        t = (step - start) / (end - start)
        return float(self.initial + (self.final - self.initial) * t)


def anneals_from_config(cfg: Any) -> dict[str, LinearAnneal]:
    """{"subaction_temperature", "smoothing_eps", "ent_coef", "magnet_coef", "lr_scale"} -> LinearAnneal."""
    return {name: LinearAnneal(**anneal_settings(getattr(cfg, section), name)) for name, section in ANNEALS.items()}


def anneal_values(anneals: dict[str, LinearAnneal], global_step: int, total: int, offset: int = 0) -> dict[str, float]:
    """{"sampler/subaction_temperature": .., "sampler/smoothing_eps": .., "anneal/ent_coef": .., ...}."""
    return {
        METRIC_NAMES.get(name, f"anneal/{name}"): anneal.value(global_step, total, offset)
        for name, anneal in anneals.items()
    }
