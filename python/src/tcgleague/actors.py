"""Who picks the actions of a set of env rows: the one interface every player implements.

An Actor is anything with

    act(obs, rows) -> int32 [len(rows), 4]   actions for env rows `rows` of the full obs array
    reset_rows(rows)                          those rows' games ended: forget their state

The learner, a loaded checkpoint and a league member are a `PolicyActor` (a recurrent policy with
its LSTM state per env row); the bots are `bots.RandomBot` / `bots.GreedyBot`; the league's
opponent side dispatches to bots and to the frozen pool (`league.frozen_pool`). The game runner
(`match.play_match`) and the trainer only ever talk to this interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from .layout import legal_from_obs
from .policy.tcg_policy import TCGPolicy
from .policy.tcg_sampler import TCGSampler
from .recurrent import RowState


@runtime_checkable
class Actor(Protocol):
    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray: ...

    def reset_rows(self, rows: np.ndarray) -> None: ...


@dataclass
class Decision:
    """One batched policy decision, with what PPO stores about it."""

    actions: torch.Tensor  # long [n, 4]
    logprob: torch.Tensor  # [n]
    entropy: torch.Tensor  # [n]
    value: torch.Tensor  # [n]
    state_h: torch.Tensor  # [n, hidden]: the state the decision was taken from
    state_c: torch.Tensor


class PolicyActor:
    """A recurrent policy acting for a subset of env rows; its LSTM state lives per row.

    `decide` is the batched step the trainer's rollout uses (it also needs log-probs, values
    and the pre-step state); `act` is the Actor interface on top of it, which also sums the
    entropy of its decisions on the device (read once, when a match ends)."""

    def __init__(
        self,
        policy: TCGPolicy,
        sampler: TCGSampler,
        num_rows: int,
        generator: torch.Generator | None = None,
        argmax: bool = False,
        name: str = "policy",
    ):
        self.policy, self.sampler, self.generator, self.argmax, self.name = policy, sampler, generator, argmax, name
        self.device = next(policy.parameters()).device
        self.state = RowState(num_rows, policy.hidden_size, self.device)
        self.entropy_sum = torch.zeros((), dtype=torch.float64, device=self.device)

    @torch.no_grad()
    def decide(self, obs: torch.Tensor, rows: np.ndarray, params: torch.Tensor | None = None) -> Decision:
        """Acts for `rows` from their observations `obs` [len(rows), obs_size] and advances
        their LSTM state."""
        idx = torch.from_numpy(rows).to(self.device)
        h, c = self.state.h[idx], self.state.c[idx]
        x, ent = self.policy.encode(obs)
        out, (h2, c2) = self.policy.step(x, (h, c))
        legal, count = legal_from_obs(obs)
        actions, logprob, entropy = self.sampler.sample(
            self.policy, out, ent, legal, count, params=params, generator=self.generator, argmax=self.argmax
        )
        self.state.h[idx], self.state.c[idx] = h2, c2
        return Decision(actions, logprob, entropy, self.policy.value(out), h, c)

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        d = self.decide(torch.from_numpy(obs[rows]).to(self.device), rows)
        self.entropy_sum += d.entropy.sum()
        return d.actions.cpu().numpy().astype(np.int32)

    def reset_rows(self, rows: np.ndarray) -> None:
        self.state.reset_rows(rows)
