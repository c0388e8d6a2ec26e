"""Who picks the actions of a set of env rows: the one interface every player implements.

An Actor is anything with

    act(obs, rows) -> int32 [len(rows), 4]   actions for env rows `rows` of the full obs array
    reset_rows(rows)                          those rows' games ended: forget their state

The learner, a loaded checkpoint and a league member are a `PolicyActor` (a recurrent policy with
its LSTM state per env row); the bots are `bots.RandomBot` / `bots.GreedyBot`; the league's
opponent side dispatches to bots and to the frozen pool (`league.frozen_pool`). The game runner
(a game's `Runner.play`) and the trainer only ever talk to this interface."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from .devices import mark_static
from .policy.family import Policy, Sampler
from .recurrent import RowState


@runtime_checkable
class Actor(Protocol):
    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray: ...

    def reset_rows(self, rows: np.ndarray) -> None: ...


class Companion(Protocol):
    """Deciders that run inside a PolicyActor's own device step (the league's frozen pool): its
    `steps(obs, actions, rows, *inputs) -> (actions with theirs merged, *outputs)` is called in
    the same function as the policy's step (JointStep: one compiled call); `inputs(n)` are its
    device tensors for a batch of n rows, `settle(played, *outputs, obs, rows, inputs)` writes
    back its state after the call and returns the actions the env gets."""

    steps: Callable

    def inputs(self, n: int) -> tuple: ...

    def settle(self, *args) -> torch.Tensor: ...


@dataclass
class Decision:
    """One batched policy decision, with what PPO stores about it. With a CUDA-graph compiled
    step these are the graph's static outputs: valid until the actor's next `decide` (copy
    what you keep, as the trainer does by storing them in the rollout buffer)."""

    actions: torch.Tensor  # long [n, 4]
    logprob: torch.Tensor  # [n]
    entropy: torch.Tensor  # [n]
    value: torch.Tensor  # [n]
    state_h: torch.Tensor  # [n, hidden]: the state the decision was taken from
    state_c: torch.Tensor
    played: torch.Tensor  # long [n, 4]: what the env gets (`actions`, a companion's in its rows)


class PolicyStep(nn.Module):
    """One batched decision as a pure function of tensors: observations, LSTM state, sampling
    parameters and uniform draws in; actions, log-probs, entropies, values and the next state
    out. No RNG, no host reads, no data-dependent shapes: this is what gets compiled (a CUDA
    graph with `reduce-overhead`) and what the frozen pool vmaps over its members."""

    def __init__(self, policy: Policy, sampler: Sampler, argmax: bool = False):
        super().__init__()
        self.policy, self.sampler, self.argmax = policy, sampler, argmax

    def forward(self, obs, h, c, params, uniforms):
        x, ent = self.policy.encode(obs)
        out, (h, c) = self.policy.step(x, (h, c))
        actions, logprob, entropy = self.sampler.sample_rows(
            self.policy, out, ent, obs, params=params, argmax=self.argmax, uniforms=uniforms
        )
        return actions, logprob, entropy, self.policy.value(out), h, c


class JointStep(nn.Module):
    """A PolicyStep and its companion's step as ONE function, so on CUDA the learner and the
    frozen pool decide in one compiled call (one CUDA graph replay per env step): the companion
    reads the same uploaded observations and merges its rows' actions into the policy's."""

    def __init__(self, step: PolicyStep, companion_steps: Callable):
        super().__init__()
        self.step, self.companion_steps = step, companion_steps

    def forward(self, obs, h, c, params, uniforms, rows, companion_inputs):
        actions, logprob, entropy, value, h, c = self.step(obs, h, c, params, uniforms)
        played, *companion_out = self.companion_steps(obs, actions, rows, *companion_inputs)
        return actions, logprob, entropy, value, h, c, played, companion_out


class PolicyActor:
    """A recurrent policy acting for a subset of env rows; its LSTM state lives per row on the
    policy's device.

    `decide` is the batched step the trainer's rollout uses (it also needs log-probs, values
    and the pre-step state); `act` is the Actor interface on top of it, which also sums the
    entropy of its decisions on the device (read once, when a match ends).

    With `compile_mode` the step is torch.compile'd. Its inputs are then gathered into static
    buffers, one set per batch size, filled in place (eager calls use fresh tensors):
    `reduce-overhead` replays one CUDA graph only while every input keeps its address and shape
    (the trainer always decides for exactly one row per game, so it has one size)."""

    def __init__(
        self,
        policy: Policy,
        sampler: Sampler,
        num_rows: int,
        generator: torch.Generator,
        argmax: bool = False,
        name: str = "policy",
        compile_mode: str | None = None,
    ):
        self.policy, self.sampler, self.generator, self.argmax, self.name = policy, sampler, generator, argmax, name
        self.device = next(policy.parameters()).device
        if generator.device.type != self.device.type:
            raise ValueError(f"{name}: the sampling generator is on {generator.device}, the policy on {self.device}")
        self.state = RowState(num_rows, policy.hidden_size, self.device)
        self.entropy_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        self.step = PolicyStep(policy, sampler, argmax)
        self.forward = torch.compile(self.step, mode=compile_mode) if compile_mode else self.step
        self.compiled, self.compile_mode = compile_mode is not None, compile_mode
        self.joint: tuple[Callable, Callable] | None = None  # (companion steps, the JointStep running both)
        self.default_params = sampler.params_tensor(self.device)  # the sampler's, as this actor was made
        self.inputs: dict[int, dict[str, torch.Tensor]] = {}  # static input buffers by batch size
        self.last_decision: Decision | None = None  # `act`'s latest, for a match recorder (replay.record)

    def _static_inputs(self, n: int) -> dict[str, torch.Tensor]:
        if n not in self.inputs:
            hidden, dev = self.policy.hidden_size, self.device
            buffers = {
                "h": torch.zeros(n, hidden, device=dev),
                "c": torch.zeros(n, hidden, device=dev),
                "uniforms": self.sampler.draws_buffer(n, dev),
            }
            mark_static(*buffers.values())
            self.inputs[n] = buffers
        return self.inputs[n]

    @torch.no_grad()
    def decide(
        self,
        obs: torch.Tensor,
        rows: torch.Tensor,
        params: torch.Tensor | None = None,
        episode_start: torch.Tensor | None = None,
        companion: Companion | None = None,
    ) -> Decision:
        """Acts for env rows `rows` (long, on the device) from their observations `obs`
        [len(rows), obs_size] and advances their LSTM state. Rows flagged in `episode_start`
        start from a zero state (their game is new), so a caller need not reset rows itself.
        A `companion` (planned for this batch) decides for its rows in the same call."""
        n = len(rows)
        buf = self._static_inputs(n) if self.compiled else {"h": None, "c": None, "uniforms": None}
        h = torch.index_select(self.state.h, 0, rows, out=buf["h"])
        c = torch.index_select(self.state.c, 0, rows, out=buf["c"])
        if episode_start is not None:
            keep = (~episode_start).to(h.dtype)[:, None]
            h.mul_(keep)
            c.mul_(keep)
        uniforms = self.sampler.draw(n, self.generator, out=buf["uniforms"])
        if params is None:
            params = self.default_params
        if self.compiled:
            torch.compiler.cudagraph_mark_step_begin()
        if companion is None:
            actions, logprob, entropy, value, h2, c2 = self.forward(obs, h, c, params, uniforms)
            played = actions
        else:
            inputs = companion.inputs(n)
            out = self.joint_step(companion.steps)(obs, h, c, params, uniforms, rows, inputs)
            actions, logprob, entropy, value, h2, c2, played, companion_out = out
            played = companion.settle(played, *companion_out, obs, rows, inputs)
        self.state.h.index_copy_(0, rows, h2)
        self.state.c.index_copy_(0, rows, c2)
        return Decision(actions, logprob, entropy, value, h, c, played)

    def joint_step(self, companion_steps: Callable) -> Callable:
        """The JointStep of this actor's step and `companion_steps`, compiled like the step."""
        if self.joint is None or self.joint[0] is not companion_steps:
            joint = JointStep(self.step, companion_steps)
            self.joint = (companion_steps, torch.compile(joint, mode=self.compile_mode) if self.compiled else joint)
        return self.joint[1]

    @torch.no_grad()
    def values(self, obs: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """V of rows `rows` at observations `obs` from their current LSTM state, which is left
        as it is: the value their next `decide` will see (the rollout's bootstrap at an epoch's
        end). Rows must be mid-game: a row about to start a game would start from zeros."""
        h, c = self.state.h.index_select(0, rows), self.state.c.index_select(0, rows)
        x, _ = self.policy.encode(obs)
        out, _ = self.policy.step(x, (h, c))
        return self.policy.value(out)

    @torch.no_grad()
    def legal_log_probs(self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """log pi of every legal action of observations `obs` [n, obs_size] from LSTM states
        (h, c) [n, hidden] (the states their decisions are taken from): [n, MAX_LEGAL], -inf
        past each row's legal count: the sampler's own math (`listed_log_probs`) at this actor's
        sampling parameters."""
        x, ent = self.policy.encode(obs)
        out, _ = self.policy.step(x, (h, c))
        return self.sampler.listed_log_probs(self.policy, out, ent, obs, self.default_params)

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        rows_dev = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(self.device)
        d = self.decide(torch.from_numpy(obs[rows]).to(self.device), rows_dev)
        self.entropy_sum += d.entropy.sum()
        self.last_decision = d
        return d.actions.cpu().numpy().astype(np.int32)

    def reset_rows(self, rows: np.ndarray) -> None:
        self.state.reset_rows(rows)
