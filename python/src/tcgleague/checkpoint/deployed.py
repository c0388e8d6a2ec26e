"""A loaded checkpoint as it plays once deployed (evaluation, play, benches): the sampler at its
annealed values, and the turn cap its run played with."""

from __future__ import annotations

from ..config.sections import EnvSection
from ..game import family_of
from ..policy.family import Sampler
from .files import CheckpointError, LoadedCheckpoint


def checkpoint_sampler(loaded: LoadedCheckpoint, temperature: float | None = None) -> Sampler:
    """A sampler at the checkpoint's annealed values, or at temperature T (both stages, no smoothing)."""
    state = loaded.state
    params = dict(state.get("sampling_params") or {})
    anneal = state.get("anneal") or {}
    if "sampler/subaction_temperature" in anneal:
        params["subaction_temperature"] = anneal["sampler/subaction_temperature"]
    if "sampler/smoothing_eps" in anneal:
        params["smoothing_eps"] = anneal["sampler/smoothing_eps"]
    if temperature is not None:
        params.update(primary_temperature=temperature, subaction_temperature=temperature, smoothing_eps=0.0)
    return family_of(loaded.policy_config.to_dict()).sampler_from_params(params)


def checkpoint_turn_cap(loaded: LoadedCheckpoint) -> int:
    """The turn cap the checkpoint's run played with (its games are judged at the same cap; a
    config that names none ran the default)."""
    turn_cap = ((loaded.state.get("config") or {}).get("env") or {}).get("turn_cap", EnvSection.turn_cap)
    if isinstance(turn_cap, bool) or not isinstance(turn_cap, int) or turn_cap < 1:
        raise CheckpointError(f"checkpoint {loaded.path} is damaged: field config.env.turn_cap: {turn_cap!r}")
    return turn_cap
