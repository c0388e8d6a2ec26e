"""The policy families a checkpoint can hold, by the name its `policy_config` carries: what the
checkpoint files, the league's member store and the deployed tools need to rebuild a policy and
its sampler without knowing the game (a game brings its own policy family).

Emberfront's `TCGPolicy` came first and its stored architecture names no family, so a
`policy_config` without a "family" key is Emberfront's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from ..games.emberfront.policy import PolicyConfig, build_policy, policy_from_state
from ..games.emberfront.sampler import TCGSampler
from .family import Sampler
from .flat import FAMILY as FLAT
from .flat import FlatPolicyConfig, FlatSampler, build_flat_policy, flat_policy_from_state

TCG = "tcg"


@dataclass(frozen=True)
class PolicyFamily:
    name: str
    config_from_dict: Callable[[dict], Any]
    """a stored architecture dict -> the family's config dataclass (ValueError on unknown keys)"""
    build: Callable[[Any, int], nn.Module]
    """(config, seed) -> a freshly initialised policy (the global RNG untouched)"""
    from_state: Callable[[dict, Any], nn.Module]
    """(weights, config) -> a policy holding them (compile prefixes stripped; raises on a mismatch)"""
    sampler_from_params: Callable[[dict | None], Sampler]
    """a `get_sampling_params()` dict (or None: the defaults) -> a sampler set to it"""


FAMILIES = {
    TCG: PolicyFamily(TCG, PolicyConfig.from_dict, build_policy, policy_from_state, TCGSampler.from_params),
    FLAT: PolicyFamily(
        FLAT, FlatPolicyConfig.from_dict, build_flat_policy, flat_policy_from_state, FlatSampler.from_params
    ),
}


def family_of(arch: dict) -> PolicyFamily:
    """The family of a stored architecture dict (no "family" key: Emberfront's)."""
    name = arch.get("family", TCG)
    if name not in FAMILIES:
        raise ValueError(f"policy family {name!r} is unknown; valid: {', '.join(sorted(FAMILIES))}")
    return FAMILIES[name]
