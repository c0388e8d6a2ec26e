"""What the learning stack asks of a policy family, whatever the game: the contract a game's
policy and sampler keep (Emberfront's: `TCGPolicy`, `TCGSampler`), and the few module helpers
every family shares.

A `Policy` is a recurrent network over observation rows: `encode` a batch of rows, advance the
LSTM a `step`, read the `value`. A `Sampler` turns the network's outputs at those rows into
actions and their log-probabilities; it alone reads what the row says is legal (the game is a
plug-in), so the actors, the PPO loss and the frozen pool hold the two through this
contract and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

import torch
from torch import nn


@dataclass(frozen=True)
class PolicyFamily:
    """A policy family as a checkpoint names it (its `policy_config`'s "family"): what the
    checkpoint files, the league's member store and the tools need to rebuild a policy and its
    sampler without knowing the game."""

    name: str
    config_from_dict: Callable[[dict], Any]
    """a stored architecture dict -> the family's config dataclass (ValueError on unknown keys)"""
    build: Callable[[Any, int], nn.Module]
    """(config, seed) -> a freshly initialised policy (the global RNG untouched)"""
    from_state: Callable[[dict, Any], nn.Module]
    """(weights, config) -> a policy holding them (compile prefixes stripped; raises on a mismatch)"""
    sampler_from_params: Callable[[dict | None], Sampler]
    """a `get_sampling_params()` dict (or None: the defaults) -> a sampler set to it"""
    optional_widths: tuple[str, ...] = ()
    """architecture fields where 0 means "off" (every other width is at least 1)"""


COMPILE_PREFIX = "_orig_mod."  # what torch.compile inserts into a wrapped module's state-dict keys


class Policy(Protocol):
    hidden_size: int
    config: Any  # its architecture (a dataclass): members of one frozen pool share it

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Observation rows [n, ...] -> (the LSTM's input [n, d], what the sampler reads of each row)."""

    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]) -> tuple:
        """One LSTM step: (out [n, hidden], (h, c))."""

    def value(self, out: torch.Tensor) -> torch.Tensor:
        """V [n] from the LSTM's output."""


class Sampler(Protocol):
    def params_tensor(self, device: torch.device | None = None) -> torch.Tensor:
        """The sampling parameters (temperatures, smoothing) as a tensor a rollout stores per step."""

    def get_sampling_params(self) -> dict: ...

    def set_sampling_params(self, **params: float) -> None: ...

    def draw(self, n: int, generator: torch.Generator, out: torch.Tensor | None = None) -> torch.Tensor:
        """The uniform draws of n decisions (no RNG inside the compiled or vmapped step)."""

    def draws_buffer(self, n: int, device: torch.device) -> torch.Tensor: ...

    def sample_rows(self, policy, out, ent, obs, params=None, argmax: bool = False, uniforms=None) -> tuple:
        """(actions [n, action_width], logprob [n], entropy [n]) at observation rows `obs`."""

    def log_prob_entropy_rows(self, policy, out, ent, obs, actions, params=None) -> tuple:
        """(logprob [n], entropy [n]) of `actions` taken at `obs`, under the math of `sample_rows`."""

    def log_prob_entropy_stages_rows(self, policy, out, ent, obs, actions, params=None) -> tuple:
        """(logprob [n], entropy [n], stages): each sampling stage's log p [n, size] along
        `actions`, illegal values ~-1e9 (the regularizer's KL per decision, magnet.py)."""

    def listed_log_probs(self, policy, out, ent, obs, params=None) -> torch.Tensor:
        """log pi of every legal action of each row: [n, legal actions listed], -inf past its count."""


def unwrap(module: nn.Module) -> nn.Module:
    """The module itself when torch.compile wrapped it (OptimizedModule._orig_mod)."""
    return getattr(module, "_orig_mod", module)


def strip_compile_prefix(state_dict: dict) -> dict:
    """A state dict with torch.compile's prefixes removed, wherever they occur in a key."""
    return {k.replace(COMPILE_PREFIX, ""): v for k, v in state_dict.items()}


def freeze(policy: nn.Module) -> nn.Module:
    """Eval mode, no parameter gradients: a frozen league member or opponent never trains."""
    policy.eval()
    policy.requires_grad_(False)
    return policy


def seeded(make: Callable[[], nn.Module], seed: int) -> nn.Module:
    """`make()` initialised from `seed` without touching the global torch RNG (building a policy,
    e.g. loading a league member, must not move anybody else's random stream)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def with_weights(policy: nn.Module, state_dict: dict) -> nn.Module:
    """`policy` holding `state_dict` (compiled or not); raises on a mismatch."""
    policy.load_state_dict(strip_compile_prefix(state_dict), strict=True)
    return policy


def config_from_dict(cls: type, d: dict):
    """An architecture dataclass from its stored dict, refusing keys it does not have."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(f"{cls.__name__}.from_dict: unknown keys {unknown}; valid keys: {sorted(known)}")
    return cls(**d)
