"""The frozen pool: the loaded past selves, as one Actor with batched, gradient-free inference.

Each env step the rows every member must act on are gathered into ONE padded batch [members,
bucket, obs] and run in ONE forward: the members' weights are stacked
(torch.func.stack_module_state) and one member's step (encode, the shared LSTM recurrence,
masked sampler) is vmapped over them. Per-call overhead dominates at these sizes (8 members with
~6 rows each), so one stacked call replaces eight tiny ones. The bucket is a power of two between
8 and `max_batch` ([league] opponent_batch), so the set of shapes is small and fixed; a member
with more rows than `max_batch` takes several rounds. Padding rows carry a zero observation,
whose legal count is 0, so the sampler returns zeros for them (no NaN).

Which member plays a row is the owner's to say: `member_of(rows) -> member ids` (the league's
matchmaker, which draws it per episode), so the pool keeps no copy of it. Recurrent state is
one per-row pair shared by all members: a row plays one member for a whole episode and is reset
by row index when its game ends, so a row that switches member always starts from zeros. The
sampler's uniforms are drawn from the pool's own generator in ascending row order, so the draws
do not depend on member order (and a resume stays exact)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap

from ..actors import PolicyStep
from ..layout import ACTION_WIDTH
from ..policy.tcg_policy import TCGPolicy, freeze
from ..policy.tcg_sampler import TCGSampler, draw_uniforms
from ..recurrent import RowState
from ..rng import restore_generator
from ..transfer import Traffic

MIN_BUCKET = 8


def bucket_size(n: int, max_batch: int) -> int:
    """The padded batch for `n` rows: the next power of two >= n, at least 8, at most max_batch."""
    if n <= 0:
        return 0
    size = MIN_BUCKET
    while size < n:
        size *= 2
    return min(size, max(1, max_batch))


class FrozenPool:
    """Actor over the rows the frozen members play.

    pool = FrozenPool(env.num_rows, cfg.league.opponent_batch, device, seed, member_of=who_plays_rows)
    pool.add("e000010", policy, sampling_params)
    actions[rows] = pool.act(obs, rows)   # one stacked forward for every member
    pool.reset_rows(done_rows)            # at episode ends (row ids)
    """

    def __init__(
        self,
        num_rows: int,
        max_batch: int,
        device: torch.device,
        seed: int = 0,
        member_of: Callable[[np.ndarray], np.ndarray] | None = None,
    ):
        self.num_rows, self.max_batch = int(num_rows), int(max_batch)
        self.device = device
        self.seed = int(seed)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.members: dict[str, PolicyStep] = {}
        self.sampling: dict[str, torch.Tensor] = {}  # member -> (primary T, subaction T, eps)
        self.member_of = member_of  # env rows -> the member id playing each (used by `act`)
        self.state: RowState | None = None  # [num_rows, hidden], made by the first add
        self._stack = None  # stacked weights, rebuilt on add/remove
        self.forwards = 0  # stacked forwards run (one per step and round)
        self.traffic = Traffic()

    def __contains__(self, member_id: str) -> bool:
        return member_id in self.members

    def ids(self) -> list[str]:
        return list(self.members)

    def add(self, member_id: str, policy: TCGPolicy, sampling_params: dict | None = None) -> None:
        """Registers a frozen copy of `policy` (the caller's object is never moved to this
        device). Every member must share one architecture, since their weights are stacked."""
        if self.members:
            first_id, first = next(iter(self.members.items()))
            if policy.config != first.policy.config:
                raise ValueError(
                    f"frozen member {member_id!r} has policy config {policy.config}, unlike "
                    f"{first_id!r} ({first.policy.config}); pool members must share one architecture"
                )
        frozen = freeze(copy.deepcopy(policy).to(self.device))
        self.members[member_id] = PolicyStep(frozen, TCGSampler())
        self.sampling[member_id] = TCGSampler.from_params(sampling_params).params_tensor(self.device)
        if self.state is None:
            self.state = RowState(self.num_rows, policy.hidden_size, self.device)
        self._stack = None

    def remove(self, member_id: str) -> None:
        if self.members.pop(member_id, None) is not None:
            self.sampling.pop(member_id)
            self._stack = None

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Actions int32 [len(rows), 4] for `rows` (each played by a loaded member, per `member_of`)."""
        members = np.asarray(self.member_of(rows))
        by_member = {m: rows[members == m] for m in dict.fromkeys(members.tolist())}
        out = np.zeros((len(rows), ACTION_WIDTH), dtype=np.int32)
        for m, acts in self.act_members(obs, by_member).items():
            out[members == m] = acts
        return out

    def _stacked(self):
        """(template on the meta device, stacked params, stacked buffers, sampling [M, 3])."""
        if self._stack is None:
            steps = list(self.members.values())
            params, buffers = stack_module_state(steps)
            template = copy.deepcopy(steps[0]).to("meta")
            sampling = torch.stack([self.sampling[m] for m in self.members])
            self._stack = (template, params, buffers, sampling)
        return self._stack

    @torch.no_grad()
    def act_members(self, obs: np.ndarray, rows_by_member: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Actions int32 [len(rows), 4] per member for its env rows (distinct ids across all
        members) of the full observation array `obs` [num_rows, OBS_BYTES]."""
        slot = {m: k for k, m in enumerate(self.members)}
        rows_by_member = {m: np.asarray(r, dtype=np.int64) for m, r in rows_by_member.items()}
        out = {m: np.zeros((len(r), ACTION_WIDTH), dtype=np.int32) for m, r in rows_by_member.items()}
        start = 0
        while any(len(r) > start for r in rows_by_member.values()):
            chunks = {m: r[start : start + self.max_batch] for m, r in rows_by_member.items() if len(r) > start}
            slots = np.concatenate([np.full(len(r), slot[m]) for m, r in chunks.items()])
            positions = np.concatenate([np.arange(len(r)) for r in chunks.values()])
            rows = np.concatenate(list(chunks.values()))
            size = bucket_size(max(len(r) for r in chunks.values()), self.max_batch)
            actions = self._forward(obs, slots, positions, rows, size)
            done = 0
            for m, r in chunks.items():
                out[m][start : start + len(r)] = actions[done : done + len(r)]
                done += len(r)
            start += self.max_batch
        return out

    def _forward(
        self, obs: np.ndarray, slots: np.ndarray, positions: np.ndarray, rows: np.ndarray, size: int
    ) -> np.ndarray:
        """One stacked forward over every member: rows[i] goes to member slots[i] at padded
        position positions[i]; returns the actions of those rows in the same order."""
        template, params, buffers, sampling = self._stacked()
        members, dev, state = len(self.members), self.device, self.state
        rank = np.argsort(np.argsort(rows))  # draws go to rows in ascending row order
        indices, rows_obs = np.stack([slots, positions, rows, rank]), obs[rows]
        s, p, r, rank = torch.from_numpy(indices).to(dev)  # one copy up
        o = torch.zeros(members, size, obs.shape[1], dtype=torch.uint8, device=dev)  # compact rows
        o[s, p] = torch.from_numpy(rows_obs).to(dev)
        h = torch.zeros(members, size, state.h.shape[1], device=dev)
        c = torch.zeros_like(h)
        h[s, p], c[s, p] = state.h[r], state.c[r]
        draws = draw_uniforms(len(rows), self.generator)
        uniforms = torch.zeros(members, size, *draws.shape[1:], device=dev)
        uniforms[s, p] = draws[rank]

        def one_member(params, buffers, obs, h, c, sampling, uniforms):
            return functional_call(template, (params, buffers), (obs, h, c, sampling, uniforms))

        actions, _, _, _, h2, c2 = vmap(one_member)(params, buffers, o, h, c, sampling, uniforms)
        state.h[r], state.c[r] = h2[s, p], c2[s, p]
        self.forwards += 1
        out = actions[s, p].cpu().numpy()
        self.traffic.add(indices.nbytes + rows_obs.nbytes, out.nbytes)
        return out.astype(np.int32)

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
