"""The frozen pool: the loaded past selves, deciding in the learner's own device step.

Every member's weights sit in one stacked set ([capacity, ...] per tensor, a slot per member,
written in place when a member joins: the tensors keep their address, so a CUDA graph that reads
them is never recorded again). Each env step the rows the members play are laid out on the host
as a grid of positions [slots, bucket] into the step's observation batch (padding points one
past its end), uploaded as int32, and ONE vmapped call (`StackedSteps`) decides for all of
them: it gathers the rows' compact observations, LSTM state and uniform draws on the device,
runs one member's PolicyStep per slot, and merges the members' actions into the learner's. The
trainer runs it inside the learner's compiled step (actors.JointStep): one call, one graph
replay, one download for the learner and the pool.

Shapes: with `fixed_shapes` (a compiled learner step) every slot up to the capacity takes part
and the bucket only grows (powers of two from 8 up to `max_batch`, [league] opponent_batch), so
after a few steps of warm-up no new shape appears; eager, the grid is as small as the step
allows. A member with more rows than `max_batch` takes further rounds (more calls, same
draws).

Which member plays a row is the owner's to say: `member_of(rows) -> member ids` (the league's
matchmaker draws it per episode). Recurrent state is one per-row pair shared by all members (a
row plays one member for a whole episode and is reset when its game ends). Uniform draws: one
per row of the step's batch, in ascending row order, from the pool's own generator, so they do
not depend on member slots or order (and a resume stays exact)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, vmap

from ..actors import PolicyStep
from ..devices import mark_static
from ..policy.family import Policy, Sampler, freeze
from ..recurrent import RowState
from ..rng import restore_generator
from ..rows import RowFormat
from ..transfer import Traffic

MIN_BUCKET = 8
SPARE_SLOTS = 2  # beyond [league] pool_size: a candidate before retention, a retiree still playing


def bucket_size(n: int, max_batch: int) -> int:
    """The padded batch for `n` rows: the next power of two >= n, at least 8, at most max_batch."""
    if n <= 0:
        return 0
    size = MIN_BUCKET
    while size < n:
        size *= 2
    return min(size, max(1, max_batch))


class StackedSteps:
    """Every member's PolicyStep at once, as a pure function of tensors (no host reads, fixed
    shapes): what the learner's compiled step calls, and what the pool calls alone.

    obs [n, OBS_BYTES] and rows [n] (env rows) are the step's batch; `actions` [n, 4] the
    learner's (returned with the members' merged in); positions [slots, bucket] index the batch
    (n = padding). Padding reads a zero observation (legal count 0: the sampler returns zeros)."""

    def __init__(self, template: PolicyStep):
        self.template = copy.deepcopy(template).to("meta")

    def one_member(self, weights, buffers, obs, h, c, sampling, uniforms):
        return functional_call(self.template, (weights, buffers), (obs, h, c, sampling, uniforms))

    def __call__(self, obs, actions, rows, positions, h_all, c_all, uniforms, weights, buffers, sampling):
        n = obs.shape[0]
        valid = positions < n
        at = positions.clamp(max=n - 1)
        grid_rows = torch.where(valid, rows[at], h_all.shape[0] - 1)  # padding -> the state's sink row
        keep = valid[..., None]
        o = obs[at] * keep.to(obs.dtype)
        h, c = h_all[grid_rows] * keep, c_all[grid_rows] * keep
        acts, _, _, _, h2, c2 = vmap(self.one_member)(weights, buffers, o, h, c, sampling, uniforms[at])
        merged = torch.cat([actions, actions[:1]])  # one spare row takes the padding's actions
        merged[positions.reshape(-1)] = acts.reshape(-1, actions.shape[-1]).to(merged.dtype)
        return merged[:n], grid_rows, h2, c2


class FrozenPool:
    """The frozen members, as an Actor (`act`) and as the learner step's companion (`plan`,
    `inputs`, `settle`: see actors.PolicyActor.decide).

    pool = FrozenPool(env.rows, cfg.league.opponent_batch, device, seed, member_of=who_plays_rows)
    pool.add("e000010", policy, sampler)
    actions[rows] = pool.act(obs, rows)   # one stacked call for every member
    pool.reset_rows(done_rows)            # at episode ends (row ids)
    """

    def __init__(
        self,
        rows: RowFormat,
        max_batch: int,
        device: torch.device,
        seed: int = 0,
        member_of: Callable[[np.ndarray], np.ndarray] | None = None,
        capacity: int = 4,
        fixed_shapes: bool = False,
    ):
        self.num_rows, self.action_width = rows.num_rows, rows.action_width
        self.max_batch, self.capacity = max(1, int(max_batch)), int(capacity)
        self.device, self.fixed_shapes = device, fixed_shapes
        self.seed = int(seed)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.member_of = member_of  # env rows -> the member id playing each
        # the members' sampling math and draws: the first member's (each slot's parameters are in `sampling`)
        self.sampler: Sampler | None = None
        self.slots: dict[str, int] = {}  # member -> its slot in the stacked weights
        self.configs: dict[str, object] = {}  # member -> its policy config (one architecture)
        self.state: RowState | None = None  # per env row (+ a sink row), made by the first add
        self.steps: StackedSteps | None = None
        self.weights: dict[str, torch.Tensor] = {}  # stacked [capacity, ...], written per slot
        self.buffers: dict[str, torch.Tensor] = {}
        self.sampling: torch.Tensor | None = None  # [capacity, 3]: (primary T, subaction T, eps)
        self.bucket = 0  # fixed shapes: the largest bucket so far
        self.grids: list[np.ndarray] = []  # this step's position grids, one per round (plan)
        self.pinned: dict[tuple, torch.Tensor] = {}  # grids' shape -> host buffer
        self.first_grids: dict[tuple, torch.Tensor] = {}  # [slots, bucket] -> the first round's, on the device
        self.later_rounds: torch.Tensor | None = None  # this step's further rounds, on the device
        self.draws: dict[int, torch.Tensor] = {}  # batch size -> its uniforms buffer
        self.forwards = 0  # stacked calls run (one per step and round)
        self.traffic = Traffic()

    def __contains__(self, member_id: str) -> bool:
        return member_id in self.slots

    def ids(self) -> list[str]:
        return list(self.slots)

    # ---- members ---------------------------------------------------------------------------
    def add(self, member_id: str, policy: Policy, sampler: Sampler) -> None:
        """Copies `policy`'s weights and `sampler`'s parameters into a free slot (the caller's
        objects are never moved to this device). Every member must share one architecture, since
        their weights are stacked, and one policy family, whose sampling math the first one brings."""
        if self.configs:
            first_id, first = next(iter(self.configs.items()))
            if policy.config != first:
                raise ValueError(
                    f"frozen member {member_id!r} has policy config {policy.config}, unlike "
                    f"{first_id!r} ({first}); pool members must share one architecture"
                )
        if self.sampler is None:
            self.sampler = sampler
        step = PolicyStep(freeze(copy.deepcopy(policy).to(self.device)), self.sampler)
        if self.steps is None:
            self.steps = StackedSteps(step)
            self.state = RowState(self.num_rows, policy.hidden_size, self.device, sink=True)
            self._allocate(self.capacity, step)
        free = sorted(set(range(self.capacity)) - set(self.slots.values()))
        if not free:
            free = [self.capacity]
            self._allocate(2 * self.capacity, step)
        slot = free[0]
        for name, value in [*step.named_parameters(), *step.named_buffers()]:
            (self.weights if name in self.weights else self.buffers)[name][slot].copy_(value)
        self.sampling[slot] = sampler.params_tensor(self.device)
        self.slots[member_id], self.configs[member_id] = slot, policy.config

    def _allocate(self, capacity: int, step: PolicyStep) -> None:
        """Stacked tensors of `capacity` slots (the current ones copied in): new addresses, so a
        compiled step records once more. Grows by doubling, from the pool_size the league asked for."""

        def stacked(named, old):
            out = {}
            for name, value in named:
                out[name] = torch.zeros(capacity, *value.shape, dtype=value.dtype, device=self.device)
                if name in old:
                    out[name][: self.capacity] = old[name]
            return out

        self.weights = stacked(step.named_parameters(), self.weights)
        self.buffers = stacked(step.named_buffers(), self.buffers)
        sampling = torch.zeros(capacity, len(self.sampler.params_tensor()), device=self.device)
        if self.sampling is not None:
            sampling[: self.capacity] = self.sampling
        self.sampling, self.capacity = sampling, capacity
        mark_static(*self.weights.values(), *self.buffers.values(), self.sampling, self.state.h_all, self.state.c_all)

    def remove(self, member_id: str) -> None:
        """Frees the member's slot (no row is routed to it any more; its weights are overwritten
        by the next member to take it)."""
        self.slots.pop(member_id, None)
        self.configs.pop(member_id, None)

    # ---- one step --------------------------------------------------------------------------
    def plan(self, rows: np.ndarray, pool_rows: np.ndarray) -> None:
        """Lays out this step's position grids: `rows` (ascending) is the step's batch, whose
        `pool_rows` the members play (`member_of`). One grid [slots, bucket] per round."""
        slots = np.fromiter((self.slots[m] for m in self.member_of(pool_rows)), np.int64, len(pool_rows))
        used = self.capacity if self.fixed_shapes else int(slots.max()) + 1
        counts = np.bincount(slots, minlength=used)
        size = bucket_size(int(counts.max()), self.max_batch)
        if self.fixed_shapes:
            self.bucket = size = max(self.bucket, size)
        order = np.argsort(slots, kind="stable")  # each slot's rows in ascending row order
        rank = np.arange(len(order)) - (np.cumsum(counts) - counts)[slots[order]]
        grids = np.full((-(-int(counts.max()) // size), used, size), len(rows), dtype=np.int32)
        grids[rank // size, slots[order], rank % size] = np.searchsorted(rows, pool_rows[order])
        self.grids = list(grids)

    def inputs(self, n: int) -> tuple:
        """The device inputs of the planned step's first round (after the env rows and the
        observations the caller has): positions, state, draws, stacked weights. Uploads every
        round's grid from one pinned buffer and draws the step's uniforms (one per row of the batch)."""
        grids = np.stack(self.grids)
        host = self._pinned(grids.shape)
        host.numpy()[:] = grids
        first = self._first_grid(grids.shape[1:])
        first.copy_(host[0], non_blocking=True)
        self.later_rounds = host[1:].to(self.device, non_blocking=True)  # rare; run outside the step
        self.traffic.add(grids.nbytes, 0)
        if n not in self.draws:
            self.draws[n] = self.sampler.draws_buffer(n, self.device)
            mark_static(self.draws[n])
        uniforms = self.sampler.draw(n, self.generator, out=self.draws[n])
        weights, buffers, sampling = self.weights, self.buffers, self.sampling
        used = grids.shape[1]
        if used < self.capacity:  # eager: the slots in use only
            weights, buffers = ({k: v[:used] for k, v in d.items()} for d in (weights, buffers))
            sampling = sampling[:used]
        return first, self.state.h_all, self.state.c_all, uniforms, weights, buffers, sampling

    def _pinned(self, shape: tuple) -> torch.Tensor:
        """The host buffer the grids are written to, per shape (pinned on CUDA, so the copy up does
        not wait; the step's download has synchronised before the next step writes it again)."""
        if shape not in self.pinned:
            self.pinned[shape] = torch.zeros(shape, dtype=torch.int32, pin_memory=self.device.type == "cuda")
        return self.pinned[shape]

    def _first_grid(self, shape: tuple) -> torch.Tensor:
        """The first round's grid on the device, one per [slots, bucket]: it keeps its address from
        step to step whatever the number of rounds, so a CUDA graph reads it in place."""
        if shape not in self.first_grids:
            self.first_grids[shape] = torch.zeros(shape, dtype=torch.int32, device=self.device)
            mark_static(self.first_grids[shape])
        return self.first_grids[shape]

    def settle(self, merged, grid_rows, h2, c2, obs, rows, inputs: tuple) -> torch.Tensor:
        """After the first round (run inside the learner's step, or by `act`): the members' new
        state written back, and any further rounds run here. Returns the merged actions."""
        self._write_state(grid_rows, h2, c2)
        self.forwards += 1
        for k in range(1, len(self.grids)):
            merged, grid_rows, h2, c2 = self.steps(obs, merged, rows, self.later_rounds[k - 1], *inputs[1:])
            self._write_state(grid_rows, h2, c2)
            self.forwards += 1
        return merged

    def _write_state(self, grid_rows, h2, c2) -> None:
        flat = grid_rows.reshape(-1)
        self.state.h_all.index_copy_(0, flat, h2.reshape(len(flat), -1))
        self.state.c_all.index_copy_(0, flat, c2.reshape(len(flat), -1))

    @torch.no_grad()
    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Actions int32 [len(rows), 4] for env `rows` of the full observation array `obs`
        [num_rows, OBS_BYTES] (each played by a loaded member, per `member_of`)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return np.zeros((0, self.action_width), dtype=np.int32)
        batch = np.unique(rows)
        self.plan(batch, batch)
        obs_up = torch.from_numpy(obs[batch]).to(self.device)
        rows_up = torch.from_numpy(batch).to(self.device)
        inputs = self.inputs(len(batch))
        none = torch.zeros(len(batch), self.action_width, dtype=torch.long, device=self.device)
        out = self.settle(*self.steps(obs_up, none, rows_up, *inputs), obs_up, rows_up, inputs)
        actions = out.cpu().numpy()
        self.traffic.add(obs_up.nbytes + rows_up.nbytes, actions.nbytes)
        return actions[np.searchsorted(batch, rows)].astype(np.int32)

    # ---- state -----------------------------------------------------------------------------
    def reset_rows(self, rows) -> None:
        """Zeroes the state of env rows `rows` (int row ids; a bool mask is refused)."""
        if self.state is not None:
            self.state.reset_rows(rows)
        else:
            RowState(self.num_rows, 1, self.device).reset_rows(rows)  # still validates the ids

    def reset_all(self) -> None:
        if self.state is not None:
            self.state.reset_all()

    def state_dict(self) -> dict:
        return {
            "generator": self.generator.get_state().tolist(),
            "rows": None if self.state is None else self.state.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restores `state_dict()`. A generator state of another device kind (a CPU run resumed on a
        GPU: the formats differ in size) cannot be set, so the stream restarts from the seed (the
        trainer warns that such a continuation is not exact)."""
        restore_generator(self.generator, state["generator"], self.seed)
        if state["rows"] is not None and self.state is not None:
            self.state.load_state_dict(state["rows"])
