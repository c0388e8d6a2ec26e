"""The rollout buffer: one epoch of learner decisions, packed into fixed [segments, horizon]
tensors for recurrent PPO.

Only a row's *own* decisions are stored (off-turn steps and opponent rows never enter).
Rewards a seat earns while the opponent acts arrive with its next decision (or at game end)
and are credited to its previous stored step. Steps are stored in arrival order, then packed
row by row so each row's decisions are consecutive; every step also keeps the LSTM state it
was taken from, so training can restart the recurrence exactly wherever a segment, a row or
an episode begins. Data never crosses an epoch, so PPO's ratio is exactly 1 before the first
gradient step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Batch:
    """Packed epoch data; every tensor is [segments, horizon, ...]."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprob: torch.Tensor
    value: torch.Tensor
    advantage: torch.Tensor
    ret: torch.Tensor
    boundary: torch.Tensor  # 1.0 where the recurrence restarts from the stored state
    state_h: torch.Tensor
    state_c: torch.Tensor
    rows: torch.Tensor  # env row of each step (for tests and diagnostics)


class RolloutBuffer:
    def __init__(self, capacity: int, horizon: int, obs_size: int, hidden_size: int, num_rows: int):
        if capacity % horizon:
            raise ValueError(f"rollout capacity {capacity} must be a multiple of bptt_horizon {horizon}")
        self.capacity, self.horizon = capacity, horizon
        self.obs = torch.zeros(capacity, obs_size)
        self.actions = torch.zeros(capacity, 4, dtype=torch.long)
        self.logprob = torch.zeros(capacity)
        self.value = torch.zeros(capacity)
        self.state_h = torch.zeros(capacity, hidden_size)
        self.state_c = torch.zeros(capacity, hidden_size)
        self.rows = np.zeros(capacity, dtype=np.int64)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.terminal = np.zeros(capacity, dtype=bool)
        self.truncated = np.zeros(capacity, dtype=bool)
        self.episode_start = np.zeros(capacity, dtype=bool)
        self.next_value = np.zeros(capacity, dtype=np.float32)
        self.has_next = np.zeros(capacity, dtype=bool)
        self.last_index = np.full(num_rows, -1, dtype=np.int64)
        self.size = 0

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def start_epoch(self) -> None:
        self.size = 0
        self.last_index[:] = -1
        self.reward[:] = 0.0
        self.terminal[:] = False
        self.truncated[:] = False
        self.has_next[:] = False

    def credit(self, rows: np.ndarray, rewards: np.ndarray, terminals: np.ndarray, truncations: np.ndarray) -> None:
        """Adds rewards (and done flags) to each row's latest stored step of this epoch."""
        last = self.last_index[rows]
        keep = last >= 0
        last, rewards = last[keep], rewards[keep]
        np.add.at(self.reward, last, rewards)
        self.terminal[last] |= terminals[keep]
        self.truncated[last] |= truncations[keep]

    def forget(self, rows: np.ndarray) -> None:
        """Rows whose current decision was not stored: their next rewards belong to no step."""
        self.last_index[rows] = -1

    def add(
        self,
        rows: np.ndarray,
        obs: torch.Tensor,
        actions: torch.Tensor,
        logprob: torch.Tensor,
        value: torch.Tensor,
        state_h: torch.Tensor,
        state_c: torch.Tensor,
        episode_start: np.ndarray,
    ) -> None:
        """Stores one decision for each of `rows` (distinct env rows) taken from the given state."""
        n = len(rows)
        if self.size + n > self.capacity:
            raise RuntimeError(f"rollout overflow: {self.size} + {n} > capacity {self.capacity}")
        idx = slice(self.size, self.size + n)
        self.obs[idx] = obs
        self.actions[idx] = actions
        self.logprob[idx] = logprob
        self.value[idx] = value
        self.state_h[idx] = state_h
        self.state_c[idx] = state_c
        self.rows[idx] = rows
        self.episode_start[idx] = episode_start
        last = self.last_index[rows]
        linked = (last >= 0) & ~self.terminal[np.maximum(last, 0)] & ~self.truncated[np.maximum(last, 0)]
        self.next_value[last[linked]] = value.detach().numpy()[linked]
        self.has_next[last[linked]] = True
        self.last_index[rows] = np.arange(self.size, self.size + n)
        self.size += n

    def _advantages(self, order: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """GAE along each row's decisions (in packed order). Terminals stop the bootstrap;
        truncations (turn cap) and the epoch's last pending step bootstrap from the step's
        own value, the closest estimate of the unseen next state."""
        value = self.value.numpy()
        done = self.terminal | self.truncated
        next_v = np.where(self.has_next, self.next_value, value)
        next_v = np.where(self.terminal, 0.0, next_v)
        delta = (self.reward + gamma * next_v - value)[order]
        cont = (self.has_next & ~done)[order].astype(np.float32) * gamma * lam
        adv = [0.0] * len(order)
        running = 0.0
        for p, (d, c) in enumerate(zip(delta.tolist()[::-1], cont.tolist()[::-1])):
            running = d + c * running
            adv[p] = running
        adv = np.asarray(adv[::-1], dtype=np.float32)
        return adv, adv + value[order]

    def pack(self, gamma: float, lam: float) -> Batch:
        if not self.full:
            raise RuntimeError(f"pack() needs a full buffer ({self.size}/{self.capacity} steps)")
        order = np.argsort(self.rows, kind="stable")
        rows = self.rows[order]
        boundary = np.ones(len(order), dtype=bool)
        boundary[1:] = rows[1:] != rows[:-1]
        boundary |= self.episode_start[order]
        boundary[:: self.horizon] = True
        adv, ret = self._advantages(order, gamma, lam)
        index = torch.from_numpy(order)
        shape = (self.capacity // self.horizon, self.horizon)

        def take(t: torch.Tensor) -> torch.Tensor:
            return t.index_select(0, index).reshape(*shape, *t.shape[1:])

        return Batch(
            obs=take(self.obs),
            actions=take(self.actions),
            logprob=take(self.logprob),
            value=take(self.value),
            advantage=torch.from_numpy(adv).reshape(shape),
            ret=torch.from_numpy(ret).reshape(shape),
            boundary=torch.from_numpy(boundary.astype(np.float32)).reshape(shape),
            state_h=take(self.state_h),
            state_c=take(self.state_c),
            rows=torch.from_numpy(rows).reshape(shape),
        )
