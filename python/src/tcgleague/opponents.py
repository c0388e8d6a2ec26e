"""Frozen league opponents: batched, fixed-shape, gradient-free inference.

A frozen member is a past policy playing the non-learner seat of some games. Each env step the
rows every member must act on are gathered into ONE padded batch [members, bucket, obs] and run
in ONE forward: the members' weights are stacked (torch.func.stack_module_state) and the
per-member forward is vmapped over them. Per-call overhead dominates at these sizes (8 members
with ~6 rows each), so one stacked call replaces eight tiny ones. The bucket is a power of two
between 8 and `max_batch` ([league] opponent_batch), so the set of shapes is small and fixed;
a member with more rows than `max_batch` takes several rounds. Padding rows carry a zero
observation, whose legal count is 0, so the sampler returns zeros for them (no NaN).

Recurrent state is one [num_rows, hidden] pair shared by all members: a row plays one member
for a whole episode and is reset by row index with `recurrent.zero_rows` when its game ends
(the predecessor's boolean-mask reset crashed, seed 001), so a row that switches member at an
episode boundary always starts from zeros. Opponent rows are not learner rows: nothing here
touches the learner's buffer.
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from .engine import LAYOUT
from .policy.tcg_policy import PolicyConfig, TCGPolicy, legal_from_obs
from .policy.tcg_sampler import TCGSampler
from .recurrent import zero_rows

MIN_BUCKET = 8


def freeze(policy: torch.nn.Module) -> torch.nn.Module:
    """Eval mode, no parameter gradients: a frozen member never trains."""
    policy.eval()
    policy.requires_grad_(False)
    return policy


def policy_from_state(state_dict: dict, policy_config: dict, device="cpu") -> TCGPolicy:
    """A frozen TCGPolicy built from a state dict and a `PolicyConfig.to_dict()` dict."""
    policy = TCGPolicy(PolicyConfig.from_dict(dict(policy_config)))
    policy.load_state_dict({k.replace("_orig_mod.", ""): v for k, v in state_dict.items()})
    return freeze(policy.to(device))


def load_member_policy(path: str | Path, device="cpu") -> tuple[TCGPolicy, dict]:
    """(frozen policy, sampling params) from a checkpoint or league member file.

    Reads only the keys "policy" (state dict) and "policy_config" (dict), plus the optional
    "sampling_params" (the annealed sampler values when it was saved; {} when absent)."""
    data = torch.load(Path(path), map_location="cpu", weights_only=False)
    for key in ("policy", "policy_config"):
        if key not in data:
            raise KeyError(f"{path}: not a policy checkpoint (missing key {key!r}; has {sorted(data)})")
    return policy_from_state(data["policy"], data["policy_config"], device), dict(data.get("sampling_params") or {})


def bucket_size(n: int, max_batch: int) -> int:
    """The padded batch for `n` rows: the next power of two >= n, at least 8, at most max_batch."""
    if n <= 0:
        return 0
    size = MIN_BUCKET
    while size < n:
        size *= 2
    return min(size, max(1, max_batch))


def lstm_cell(cell: nn.LSTMCell, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """nn.LSTMCell's documented math (gates i, f, g, o), written out because vmap has no
    batching rule for aten::lstm_cell."""
    gates = F.linear(x, cell.weight_ih, cell.bias_ih) + F.linear(h, cell.weight_hh, cell.bias_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


class _Actor(nn.Module):
    """One member's inference step, as a module so functional_call can swap in stacked weights."""

    def __init__(self, policy: TCGPolicy):
        super().__init__()
        self.policy = policy
        self.sampler = TCGSampler()

    def forward(self, obs, h, c, sampling, uniforms):
        x, ent = self.policy.encode(obs)
        h, c = lstm_cell(self.policy.lstm, x, h, c)
        legal, count = legal_from_obs(obs)
        actions, _, _ = self.sampler.sample(self.policy, h, ent, legal, count, params=sampling, uniforms=uniforms)
        return actions, h, c


class FrozenOpponents:
    """The loaded frozen members and the per-row LSTM state of the rows they play.

        opp = FrozenOpponents(num_rows=env.num_agents, max_batch=cfg.league.opponent_batch)
        opp.add("e000010", policy, sampling_params)
        out = opp.act(obs, {"e000010": rows_a, "e000020": rows_b})   # one stacked forward
        actions[rows_a] = out["e000010"]
        opp.reset_rows(done_rows)                                     # at episode ends (row ids)
    """

    def __init__(self, num_rows: int, max_batch: int = 256, device="cpu", seed: int = 0):
        self.num_rows, self.max_batch = int(num_rows), int(max_batch)
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(int(seed))
        self.members: dict[str, _Actor] = {}
        self.sampling: dict[str, torch.Tensor] = {}   # member -> (primary T, subaction T, eps)
        self.h: torch.Tensor | None = None            # [num_rows, hidden], made by the first add
        self.c: torch.Tensor | None = None
        self._stack = None                            # stacked weights, rebuilt on add/remove
        self.forwards = 0                             # stacked forwards run (one per step and round)

    def __contains__(self, member_id: str) -> bool:
        return member_id in self.members

    def ids(self) -> list[str]:
        return list(self.members)

    def add(self, member_id: str, policy: TCGPolicy, sampling_params: dict | None = None) -> None:
        """Registers a frozen copy of `policy` (a copy: the caller's object, e.g. the manager's
        CPU cache used for evaluation matches, is never moved to this device). Every member
        must share one architecture, since their weights are stacked."""
        if self.members:
            first_id, first = next(iter(self.members.items()))
            if policy.config != first.policy.config:
                raise ValueError(f"frozen member {member_id!r} has policy config {policy.config}, unlike "
                                 f"{first_id!r} ({first.policy.config}); pool members must share one architecture")
        sampler = TCGSampler()
        if sampling_params:
            sampler.set_sampling_params(**{k: v for k, v in sampling_params.items()
                                           if k in ("primary_temperature", "subaction_temperature", "smoothing_eps")})
        self.members[member_id] = _Actor(freeze(copy.deepcopy(policy).to(self.device)))
        self.sampling[member_id] = sampler.params_tensor(self.device)
        if self.h is None:
            self.h = torch.zeros(self.num_rows, policy.hidden_size, device=self.device)
            self.c = torch.zeros_like(self.h)
        self._stack = None

    def remove(self, member_id: str) -> None:
        if self.members.pop(member_id, None) is not None:
            self.sampling.pop(member_id)
            self._stack = None

    def _stacked(self):
        """(template on the meta device, stacked params, stacked buffers, sampling [M, 3])."""
        if self._stack is None:
            actors = list(self.members.values())
            params, buffers = stack_module_state(actors)
            template = copy.deepcopy(actors[0]).to("meta")
            sampling = torch.stack([self.sampling[m] for m in self.members])
            self._stack = (template, params, buffers, sampling)
        return self._stack

    @torch.no_grad()
    def act(self, obs: np.ndarray, rows_by_member: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Actions int32 [len(rows), 4] per member for its env rows (distinct ids across all
        members) of the full observation array `obs` [num_rows, obs_size]."""
        slot = {m: k for k, m in enumerate(self.members)}
        rows_by_member = {m: np.asarray(r, dtype=np.int64) for m, r in rows_by_member.items()}
        out = {m: np.zeros((len(r), LAYOUT["action_width"]), dtype=np.int32) for m, r in rows_by_member.items()}
        start = 0
        while any(len(r) > start for r in rows_by_member.values()):
            chunks = {m: r[start:start + self.max_batch] for m, r in rows_by_member.items() if len(r) > start}
            slots = np.concatenate([np.full(len(r), slot[m]) for m, r in chunks.items()])
            positions = np.concatenate([np.arange(len(r)) for r in chunks.values()])
            rows = np.concatenate(list(chunks.values()))
            size = bucket_size(max(len(r) for r in chunks.values()), self.max_batch)
            actions = self._forward(obs, slots, positions, rows, size)
            done = 0
            for m, r in chunks.items():
                out[m][start:start + len(r)] = actions[done:done + len(r)]
                done += len(r)
            start += self.max_batch
        return out

    def _forward(self, obs: np.ndarray, slots: np.ndarray, positions: np.ndarray, rows: np.ndarray,
                 size: int) -> np.ndarray:
        """One stacked forward over every member: rows[i] goes to member slots[i] at padded
        position positions[i]; returns the actions of those rows in the same order."""
        template, params, buffers, sampling = self._stacked()
        members, dev = len(self.members), self.device
        s, p, r = (torch.from_numpy(a).to(dev) for a in (slots, positions, rows))
        o = torch.zeros(members, size, obs.shape[1], device=dev)
        o[s, p] = torch.from_numpy(np.ascontiguousarray(obs[rows])).to(dev)
        h = torch.zeros(members, size, self.h.shape[1], device=dev)
        c = torch.zeros_like(h)
        h[s, p], c[s, p] = self.h[r], self.c[r]
        # the draws go to rows in ascending row order, so they do not depend on member order
        draws = torch.rand(len(rows), 4, self.uniform_width, generator=self.generator, device=dev)
        uniforms = torch.zeros(members, size, 4, self.uniform_width, device=dev)
        uniforms[s, p] = draws[torch.from_numpy(np.argsort(np.argsort(rows))).to(dev)]

        def one_member(params, buffers, obs, h, c, sampling, uniforms):
            return functional_call(template, (params, buffers), (obs, h, c, sampling, uniforms))
        actions, h2, c2 = vmap(one_member)(params, buffers, o, h, c, sampling, uniforms)
        self.h[r], self.c[r] = h2[s, p], c2[s, p]
        self.forwards += 1
        return actions[s, p].cpu().numpy().astype(np.int32)

    @property
    def uniform_width(self) -> int:
        """Uniform draws per sampling stage: the largest stage (type, a, b or c)."""
        return max(LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"])

    def reset_rows(self, rows) -> None:
        """Zeroes the state of env rows `rows` (int row ids; a bool mask is refused)."""
        zero_rows([self.h, self.c] if self.h is not None else [torch.zeros(self.num_rows, 1)], rows)

    def reset_all(self) -> None:
        if self.h is not None:
            self.h.zero_()
            self.c.zero_()
