"""Frozen league opponents: batched, fixed-shape, gradient-free inference.

A frozen member is a past policy playing the non-learner seat of some games. Each env step
the rows it must act on are gathered, padded to a bucket size and run in ONE forward per
member (never one tiny forward per row: per-call overhead dominates at these sizes). Bucket
sizes are powers of two between 8 and `max_batch` ([league] opponent_batch), so the set of
shapes is small and fixed (compile/CUDA-graph friendly) without padding 3 rows to 256; more
rows than `max_batch` are split into several full-bucket forwards. Padding rows carry a zero
observation, whose legal count is 0, so the sampler returns zeros for them (no NaN).

Recurrent state is kept per env row for every member and reset by row index with
`recurrent.zero_rows` when a game ends (the predecessor's boolean-mask reset crashed, seed
001). Every member's state of a row is zeroed at each episode end, so a row that switches
member at an episode boundary always starts from zeros. Opponent rows are not learner rows:
nothing here touches the learner's buffer.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

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


@dataclass
class _Member:
    policy: TCGPolicy
    sampler: TCGSampler
    h: torch.Tensor   # [num_rows, hidden]
    c: torch.Tensor


class FrozenOpponents:
    """The loaded frozen members and their per-row LSTM state.

        opp = FrozenOpponents(num_rows=env.num_agents, max_batch=cfg.league.opponent_batch)
        opp.add("e000010", policy, sampling_params)
        actions[rows] = opp.act("e000010", obs, rows)      # once per member per env step
        opp.reset_rows(done_rows)                           # at episode ends (row ids)
    """

    def __init__(self, num_rows: int, max_batch: int = 256, device="cpu", seed: int = 0):
        self.num_rows, self.max_batch = int(num_rows), int(max_batch)
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(int(seed))
        self.members: dict[str, _Member] = {}
        self.forwards = 0           # policy forwards run (tests check one per member per step)

    def __contains__(self, member_id: str) -> bool:
        return member_id in self.members

    def ids(self) -> list[str]:
        return list(self.members)

    def add(self, member_id: str, policy: TCGPolicy, sampling_params: dict | None = None) -> None:
        """Registers a frozen copy of `policy` (a copy: the caller's object, e.g. the manager's
        CPU cache used for evaluation matches, is never moved to this device); its state starts
        at zeros for every row."""
        policy = freeze(copy.deepcopy(policy).to(self.device))
        sampler = TCGSampler()
        if sampling_params:
            sampler.set_sampling_params(**{k: v for k, v in sampling_params.items()
                                           if k in ("primary_temperature", "subaction_temperature", "smoothing_eps")})
        hidden = policy.hidden_size
        self.members[member_id] = _Member(policy, sampler,
                                          torch.zeros(self.num_rows, hidden, device=self.device),
                                          torch.zeros(self.num_rows, hidden, device=self.device))

    def remove(self, member_id: str) -> None:
        self.members.pop(member_id, None)

    @torch.no_grad()
    def act(self, member_id: str, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Actions int32 [len(rows), 4] of member `member_id` for env rows `rows` (distinct ids)
        of the full observation array `obs` [num_rows, obs_size]."""
        m = self.members[member_id]
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros((len(rows), LAYOUT["action_width"]), dtype=np.int32)
        start = 0
        while start < len(rows):
            chunk = rows[start:start + self.max_batch]
            out[start:start + len(chunk)] = self._forward(m, obs, chunk)
            start += len(chunk)
        return out

    def _forward(self, m: _Member, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        n, size = len(rows), bucket_size(len(rows), self.max_batch)
        idx = torch.from_numpy(rows).to(self.device)
        o = torch.zeros(size, obs.shape[1], device=self.device)
        o[:n] = torch.from_numpy(np.ascontiguousarray(obs[rows])).to(self.device)
        h = torch.zeros(size, m.h.shape[1], device=self.device)
        c = torch.zeros_like(h)
        h[:n], c[:n] = m.h[idx], m.c[idx]
        x, ent = m.policy.encode(o)
        y, (h2, c2) = m.policy.step(x, (h, c))
        legal, count = legal_from_obs(o)
        actions, _, _ = m.sampler.sample(m.policy, y, ent, legal, count, generator=self.generator)
        m.h[idx], m.c[idx] = h2[:n], c2[:n]
        self.forwards += 1
        return actions[:n].cpu().numpy().astype(np.int32)

    def reset_rows(self, rows) -> None:
        """Zeroes every member's state of env rows `rows` (int row ids; a bool mask is refused)."""
        states = [t for m in self.members.values() for t in (m.h, m.c)]
        if states:
            zero_rows(states, rows)
        else:
            zero_rows([torch.zeros(self.num_rows, 1)], rows)   # same type checks with no members

    def reset_all(self) -> None:
        for m in self.members.values():
            m.h.zero_()
            m.c.zero_()
