"""The rollout buffer: one epoch of learner decisions, packed into fixed [segments, horizon]
tensors for recurrent PPO.

Only a row's *own* decisions are stored (off-turn steps and opponent rows never enter).
Rewards a seat earns while the opponent acts arrive with its next decision (or at game end)
and are credited to its previous stored step in the same game. Steps are stored in arrival
order, then packed row by row so each row's decisions are consecutive; every step also keeps
the LSTM state it was taken from, so training can restart the recurrence exactly wherever a
segment, a row or an episode begins. Data never crosses an epoch, so PPO's ratio is exactly 1
before the first gradient step (up to rounding when the loss runs in bf16: `[train] precision`).

A row's last stored step of an epoch is *pending*: its next decision falls in the next epoch.
Bootstrapping it from its own value would give it an advantage of about 0 and shrink its return
toward gamma * V(s) (one step in eight with 2,048 rows and a batch of 16,384), so the trainer
hands the buffer the exact next value where it exists (`bootstrap`): the row's decision that was
not stored, or the value of the observation it is deciding on now. A row still waiting for the
opponent's turn has no next state yet; its pending step is left out of the loss (`Batch.mask`)
and its predecessors' GAE stops at it. Steps whose return an exploring decision made off-policy
(`off_policy`, exploration.py) are left out and stop the GAE the same way.

The buffer lives in two halves so that an env step moves nothing but observations and actions
between host and device. What the env reports (rows, rewards, done flags, which step follows
which) is host bookkeeping in numpy; what the policy produces (observations, actions,
log-probs, values, LSTM state) stays on the policy's device, written by slot with
`index_copy_` (slot `capacity` is a spare row that takes the decisions not stored). `pack`
meets the halves once per epoch: GAE and the packed batch are computed on the device.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from .counterfactual import counterfactual_weights
from .rows import RowFormat, game_of, seat_of, seat_row


@dataclass
class Batch:
    """Packed epoch data; every tensor is [segments, horizon, ...] on the buffer's device."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprob: torch.Tensor
    value: torch.Tensor
    advantage: torch.Tensor
    ret: torch.Tensor
    boundary: torch.Tensor  # 1.0 where the recurrence restarts from the stored state
    state_h: torch.Tensor
    state_c: torch.Tensor
    mask: torch.Tensor  # a step's weight in the loss: 0.0 = out (a pending step with no next state, or
    # off-policy), else 1.0 or its counterfactual weight (counterfactual.py)
    rows: torch.Tensor  # env row of each step (for tests and diagnostics)

    def head(self, segments: int) -> Batch:
        """The first `segments` segments (a partial buffer's stored steps come first)."""
        return self.segments(0, segments)

    def segments(self, start: int, stop: int) -> Batch:
        """Segments [start, stop) (views, no copy)."""
        return Batch(**{f.name: getattr(self, f.name)[start:stop] for f in fields(self)})


def discounted_sums(delta: torch.Tensor, cont: torch.Tensor, grid: np.ndarray) -> torch.Tensor:
    """A[p] = delta[p] + cont[p] * A[p + 1] along each row's run of packed positions.

    `grid` [rows, longest run] holds each row's packed positions (-1 = padding), so the
    recurrence runs as `longest run` vectorised steps over all rows, on any device. The sum
    is carried in float64 (a long chain of float32 additions would drift), then rounded."""
    n = delta.shape[0]
    index = torch.from_numpy(np.where(grid < 0, n, grid)).to(delta.device)
    pad = torch.zeros(1, dtype=torch.float64, device=delta.device)
    d = torch.cat([delta.double(), pad])[index]
    c = torch.cat([cont.double(), pad])[index]
    out = torch.empty_like(d)
    running = torch.zeros(d.shape[0], dtype=torch.float64, device=delta.device)
    for j in range(d.shape[1] - 1, -1, -1):
        running = d[:, j] + c[:, j] * running
        out[:, j] = running
    result = torch.zeros(n + 1, dtype=torch.float64, device=delta.device)
    result[index.reshape(-1)] = out.reshape(-1)
    return result[:n].float()


def row_runs(rows: np.ndarray) -> np.ndarray:
    """[runs, longest] packed positions of each run of equal values in sorted `rows` (-1 pads)."""
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    lengths = np.diff(np.r_[starts, len(rows)])
    offsets = np.arange(lengths.max())
    grid = starts[:, None] + offsets[None, :]
    return np.where(offsets[None, :] < lengths[:, None], grid, -1)


class RolloutBuffer:
    def __init__(
        self,
        capacity: int,
        horizon: int,
        rows: RowFormat,
        hidden_size: int,
        device: torch.device,
    ):
        if capacity % horizon:
            raise ValueError(f"rollout capacity {capacity} must be a multiple of bptt_horizon {horizon}")
        self.capacity, self.horizon, self.device = capacity, horizon, torch.device(device)
        # device half: written by slot; row `capacity` is the spare that absorbs unstored decisions
        spare = capacity + 1
        self.obs = torch.zeros(spare, rows.obs_bytes, dtype=torch.uint8, device=self.device)  # as the env wrote them
        self.actions = torch.zeros(spare, rows.action_width, dtype=torch.long, device=self.device)
        self.logprob = torch.zeros(spare, device=self.device)
        self.value = torch.zeros(spare, device=self.device)
        self.state_h = torch.zeros(spare, hidden_size, device=self.device)
        self.state_c = torch.zeros(spare, hidden_size, device=self.device)
        self.next_value = torch.zeros(spare, device=self.device)  # a pending step's bootstrap, by slot
        self.own_log_reach = torch.zeros(spare, device=self.device)  # counterfactual.py's, by slot
        # host half: the env's bookkeeping
        self.rows = np.zeros(capacity, dtype=np.int64)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.terminal = np.zeros(capacity, dtype=bool)
        self.truncated = np.zeros(capacity, dtype=bool)
        self.episode_start = np.zeros(capacity, dtype=bool)
        self.next_index = np.full(capacity, -1, dtype=np.int64)  # the row's next stored step
        self.bootstrapped = np.zeros(capacity, dtype=bool)  # next_value holds the pending step's next value
        self.off_policy = np.zeros(capacity, dtype=bool)  # an exploring decision, or a return it changed
        self.explored_steps = 0  # stored exploring decisions this epoch
        self.last_index = np.full(rows.num_rows, -1, dtype=np.int64)
        self.num_rows = rows.num_rows  # a partial buffer's unfilled slots get row ids from here on (they sort last)
        self.size = 0

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    @property
    def has_next(self) -> np.ndarray:
        return self.next_index >= 0

    def start_epoch(self) -> None:
        self.size = 0
        self.last_index[:] = -1
        self.next_index[:] = -1
        self.reward[:] = 0.0
        self.terminal[:] = False
        self.truncated[:] = False
        self.bootstrapped[:] = False
        self.off_policy[:] = False
        self.explored_steps = 0

    def pending(self, rows: np.ndarray) -> np.ndarray:
        """Each row's pending step (its latest stored one, still in a game, not yet followed by
        another), or `capacity` (the spare slot) where it has none."""
        last = self.last_index[rows]
        open_ = self.in_game(last) & ~self.has_next[np.maximum(last, 0)]
        return np.where(open_, last, self.capacity)

    def in_game(self, last: np.ndarray) -> np.ndarray:
        """Whether each of `last` (rows' latest stored steps, -1 for none) is a step whose game
        has not ended: the one a row's next reward or next decision belongs to."""
        safe = np.maximum(last, 0)
        return (last >= 0) & ~self.terminal[safe] & ~self.truncated[safe]

    def bootstrap(self, rows: np.ndarray, values: torch.Tensor) -> None:
        """The next state's value of each row's pending step (`values` on the device, one per
        row): where the row's next decision was taken but not stored, or is being taken now.
        Rows without a pending step are ignored."""
        slots = self.pending(rows)
        self.bootstrapped[slots[slots < self.capacity]] = True
        self.next_value.index_copy_(0, torch.from_numpy(slots).to(self.device), values.to(self.next_value.dtype))

    def credit(self, rows: np.ndarray, rewards: np.ndarray, terminals: np.ndarray, truncations: np.ndarray) -> None:
        """Adds rewards (and done flags) to each row's latest stored step of this epoch, unless
        that step ended its game: a reward after it is the shaping the row's new game gave it
        before its first decision there (the opponent opened), which belongs to no stored step."""
        last = self.last_index[rows]
        keep = self.in_game(last)
        last, rewards = last[keep], rewards[keep]
        np.add.at(self.reward, last, rewards)
        self.terminal[last] |= terminals[keep]
        self.truncated[last] |= truncations[keep]

    def explored(self, rows: np.ndarray, slots: np.ndarray) -> None:
        """`rows` decide off-policy now (their `slots`, `capacity` where not stored): those
        decisions and the other seat's latest step of each game, whose return now follows an
        action its opponent's policy would not have taken, are left out of the loss and stop
        their rows' GAE (their values, taken on-policy, still bootstrap their predecessors)."""
        stored = slots[slots < self.capacity]
        self.off_policy[stored] = True
        self.explored_steps += len(stored)
        other = self.last_index[seat_row(game_of(rows), 1 - seat_of(rows))]
        self.off_policy[other[self.in_game(other)]] = True

    def reserve_fitting(self, rows: np.ndarray, episode_start: np.ndarray) -> np.ndarray:
        """`reserve` for as many of `rows` as still fit (the first ones); the others get slot
        `capacity` (not stored), for `drop_unstored` once their values are known."""
        k = min(len(rows), self.capacity - self.size)
        slots = np.full(len(rows), self.capacity)
        slots[:k] = self.reserve(rows[:k], episode_start[:k])
        return slots

    def drop_unstored(self, rows: np.ndarray, slots: np.ndarray, values: torch.Tensor, positions: np.ndarray) -> None:
        """The rows `reserve_fitting` had no room for (the epoch's last step): the decision they
        take now is the next state of their pending step, which so bootstraps from its exact value
        (`values[positions[i]]` is rows[i]'s), and their later rewards belong to no step."""
        unstored = slots == self.capacity
        if unstored.any():
            self.bootstrap(rows[unstored], values[torch.from_numpy(positions[unstored]).to(self.device)])
            self.last_index[rows[unstored]] = -1

    def reserve(self, rows: np.ndarray, episode_start: np.ndarray) -> np.ndarray:
        """Host half of storing one decision for each of `rows` (distinct env rows): returns
        their slots, to be filled by `store`. A row's previous step of the same game is linked
        to the new one (its bootstrap value)."""
        n = len(rows)
        if self.size + n > self.capacity:
            raise RuntimeError(f"rollout overflow: {self.size} + {n} > capacity {self.capacity}")
        slots = np.arange(self.size, self.size + n)
        self.rows[slots] = rows
        self.episode_start[slots] = episode_start
        last = self.last_index[rows]
        linked = self.in_game(last)
        self.next_index[last[linked]] = slots[linked]
        self.last_index[rows] = slots
        self.size += n
        return slots

    def store(
        self,
        slots: torch.Tensor,
        obs: torch.Tensor,
        actions: torch.Tensor,
        logprob: torch.Tensor,
        value: torch.Tensor,
        state_h: torch.Tensor,
        state_c: torch.Tensor,
        own_log_reach: torch.Tensor | None = None,
    ) -> None:
        """Device half: writes decision i to slot slots[i] (`capacity` = not stored), no host sync.
        `own_log_reach`: the acting seat's log reach of each decision (counterfactual.py); None where
        no weighting reads it (nothing written)."""
        pairs = [(self.obs, obs), (self.actions, actions), (self.logprob, logprob), (self.value, value)]
        pairs += [(self.state_h, state_h), (self.state_c, state_c)]
        if own_log_reach is not None:
            pairs.append((self.own_log_reach, own_log_reach))
        for dst, src in pairs:
            dst.index_copy_(0, slots, src.to(dst.dtype))

    def _advantages(
        self, order: np.ndarray, gamma: float, lam: float
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """GAE along each row's decisions (in packed order), and the loss mask. Terminals stop
        the bootstrap; truncations (turn cap) bootstrap from the step's own value, the closest
        estimate of the state the game was cut at; a pending step bootstraps from its exact next
        value, or without one is masked (its delta is 0, so its predecessor's GAE stops there), as
        an off-policy step is."""
        dev = self.device

        def on_device(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(a).to(dev)

        value = self.value[: self.capacity]
        has_next = self.has_next
        done = self.terminal | self.truncated
        unknown = (~has_next & ~done & ~self.bootstrapped) | self.off_policy  # no on-policy return
        next_v = torch.where(on_device(has_next), value[on_device(np.maximum(self.next_index, 0))], value)
        next_v = torch.where(on_device(self.bootstrapped), self.next_value[: self.capacity], next_v)
        next_v = torch.where(on_device(self.terminal), torch.zeros_like(next_v), next_v)
        index = on_device(order)
        reward = on_device(self.reward)
        delta = torch.where(on_device(unknown), 0.0, reward + gamma * next_v - value)[index]
        cont = on_device((has_next & ~done & ~self.off_policy)[order].astype(np.float32)) * gamma * lam
        adv = discounted_sums(delta, cont, row_runs(self.rows[order]))
        return adv, adv + value[index], on_device((~unknown)[order].astype(np.float32))

    def pack(self, gamma: float, lam: float, allow_partial: bool = False, own_reach_cap: float = 0.0) -> Batch:
        """The epoch's steps packed row by row into [segments, horizon]. With `allow_partial` a
        buffer that is not full packs too (the main exploiter's, which holds whatever its games
        gave it this epoch): its unfilled slots come last, as steps of no row that the loss
        never sees (mask 0), so the first ceil(size / horizon) segments hold every stored step.
        With `own_reach_cap` the mask carries each trained step's counterfactual weight."""
        if not self.full and not allow_partial:
            raise RuntimeError(f"pack() needs a full buffer ({self.size}/{self.capacity} steps)")
        self.rows[self.size :] = self.num_rows + np.arange(self.capacity - self.size)  # runs of one: no GAE loop
        self.episode_start[self.size :] = True
        order = np.argsort(self.rows, kind="stable")
        rows = self.rows[order]
        boundary = np.ones(len(order), dtype=bool)
        boundary[1:] = rows[1:] != rows[:-1]
        boundary |= self.episode_start[order]
        boundary[:: self.horizon] = True
        adv, ret, mask = self._advantages(order, gamma, lam)
        index = torch.from_numpy(order).to(self.device)
        if own_reach_cap > 0:
            mask = counterfactual_weights(self.own_log_reach[: self.capacity][index], mask, own_reach_cap)
        shape = (self.capacity // self.horizon, self.horizon)

        def take(t: torch.Tensor) -> torch.Tensor:
            return t.index_select(0, index).reshape(*shape, *t.shape[1:])

        return Batch(
            obs=take(self.obs),
            actions=take(self.actions),
            logprob=take(self.logprob),
            value=take(self.value),
            advantage=adv.reshape(shape),
            ret=ret.reshape(shape),
            boundary=torch.from_numpy(boundary.astype(np.float32)).to(self.device).reshape(shape),
            state_h=take(self.state_h),
            state_c=take(self.state_c),
            mask=mask.reshape(shape),
            rows=torch.from_numpy(rows).to(self.device).reshape(shape),
        )
