"""The magnet of the regularized PPO objective: the policy a reverse KL pulls the learner toward.

Unregularized self-play's last iterate cycles in an imperfect-information game; magnetic mirror
descent (Sokota et al., ICLR 2023) adds `magnet_coef * KL(pi || magnet)` per decision, and the last
iterate then converges to the equilibrium of the regularized game. Which magnet ([train] magnet):

- `uniform`: uniform over the legal actions. KL(pi || uniform) = log(legal) - H(pi): the entropy
  bonus again, with the regularized game's equilibrium a quantal response one (annealing the
  coefficient toward 0 walks it to the Nash equilibrium).
- `frozen`: the policy as it was, replaced by the learner every `magnet_interval` steps (R-NaD,
  DeepNash): each phase converges to the regularized game around the last magnet, and the
  sequence of magnets walks toward the Nash equilibrium at a fixed coefficient.
- `ema`: an exponential moving average of the learner's weights, `magnet_ema` of the way after
  every update (EMAgnet): the same walk, smoothed instead of stepped.

The KL is taken per decision over the legal actions, stage by stage along the taken action for
an autoregressive sampler (the sampler's `log_prob_entropy_stages_rows`), exactly like the
entropy. A frozen or EMA magnet replays the epoch's batch through its own LSTM once per update,
before the minibatches (it does not change during the update, so one pass serves every update
epoch), from the states the rollout stored at each segment's start (zeros at a game's first
decision, so exact on games that fit a segment; the learner's own state inside longer ones)."""

from __future__ import annotations

import copy

import torch

from .config.sections import MAGNET_KINDS
from .policy.family import Policy, Sampler, freeze, strip_compile_prefix, unwrap
from .policy.sampling import MASKED


def magnet_kl(stages: list[torch.Tensor], magnet_stages: list[torch.Tensor]) -> torch.Tensor:
    """KL(pi || magnet) [n] summed over the sampling stages: sum_a p (log p - log q), every stage's
    log-probabilities [n, size] with illegal values ~-1e9 in both (their p is exactly 0)."""
    kl = torch.zeros_like(stages[0][:, 0])
    for logp, logq in zip(stages, magnet_stages):
        kl = kl + (logp.exp() * (logp - logq)).sum(-1)
    return kl


def split(log_probs: torch.Tensor, stages: list[torch.Tensor]) -> list[torch.Tensor]:
    """`Magnet.log_probs` [m, t, width] cut into `stages`' shapes ([m * t, stage width] each)."""
    return list(log_probs.reshape(len(stages[0]), -1).split([s.shape[1] for s in stages], dim=1))


def uniform_stages(stages: list[torch.Tensor]) -> list[torch.Tensor]:
    """The uniform policy's log-probabilities over the values each stage allows (those `stages`
    gives a probability: the learner's own masks)."""
    out = []
    for logp in stages:
        legal = logp > MASKED / 2
        n = legal.sum(-1, keepdim=True).clamp_min(1).to(logp.dtype)
        out.append(torch.where(legal, -torch.log(n), torch.full_like(logp, MASKED)))
    return out


def build_magnet(train, policy: Policy) -> Magnet:
    """[train]'s magnet around `policy`'s current weights; off (`enabled` False: plain PPO, no
    KL computed) when its coefficient is 0 throughout."""
    enabled = train.magnet_coef_initial > 0 or train.magnet_coef_final > 0
    return Magnet(train.magnet, policy, train.magnet_interval, train.magnet_ema, enabled)


class Magnet:
    """The magnet's weights (none for `uniform`) and when they were last replaced, kept in the
    run's checkpoint (`checkpoint` / `restore`) for an exact resume. PPOUpdater replays it once
    per update; the loss reads only whether it is on and replayed."""

    def __init__(self, kind: str, policy: Policy, interval: int, ema: float, enabled: bool = True):
        if kind not in MAGNET_KINDS:
            raise ValueError(f"magnet must be one of {', '.join(MAGNET_KINDS)}, got {kind!r}")
        self.kind, self.interval, self.ema, self.enabled = kind, int(interval), float(ema), enabled
        weighted = enabled and kind != "uniform"
        self.policy = freeze(copy.deepcopy(unwrap(policy))) if weighted else None
        self.replaced_at = 0  # global step of the frozen magnet's last replacement

    @property
    def replays(self) -> bool:
        """Whether the magnet is a policy the minibatches are replayed through (frozen, ema)."""
        return self.enabled and self.policy is not None

    @torch.no_grad()
    def log_probs(self, sampler: Sampler, unroll, obs, actions, boundary, state_h, state_c, params) -> torch.Tensor:
        """The magnet's stage log-probabilities along segments [m, t] of decisions, concatenated
        over the stages: [m, t, sum of the stages' widths] (`split` cuts them apart again)."""
        out, ent = unroll(self.policy, obs, boundary, state_h, state_c)
        flat = obs.reshape(out.shape[0], -1)
        stages = sampler.log_prob_entropy_stages_rows(self.policy, out, ent, flat, actions, params)[2]
        return torch.cat(stages, -1).reshape(*obs.shape[:2], -1)

    @torch.no_grad()
    def advance(self, policy: Policy, global_step: int) -> None:
        """After an update: the EMA moves, the frozen magnet is replaced when its interval has passed."""
        if self.policy is None:
            return
        learner = list(unwrap(policy).parameters())
        if self.kind == "ema":
            for m, p in zip(self.policy.parameters(), learner):
                m.lerp_(p, self.ema)
        elif global_step - self.replaced_at >= self.interval:
            self.reset(policy, global_step)

    @torch.no_grad()
    def reset(self, policy: Policy, global_step: int = 0) -> None:
        """The magnet becomes `policy` as it is now (a fresh run, a weights-only resume)."""
        if self.policy is not None:
            for m, p in zip(self.policy.parameters(), unwrap(policy).parameters()):
                m.copy_(p)
        self.replaced_at = int(global_step)

    def checkpoint(self) -> dict | None:
        """What the run's checkpoint keeps (None when off)."""
        if not self.enabled:
            return None
        weights = None if self.policy is None else strip_compile_prefix(self.policy.state_dict())
        return {"kind": self.kind, "replaced_at": self.replaced_at, "policy": weights}

    @torch.no_grad()
    def restore(self, saved: dict | None, policy: Policy, global_step: int, log=print) -> None:
        """Back to `checkpoint()`; a checkpoint without one (written before the magnet, or by a run
        with another kind) restarts the magnet from the loaded `policy`, said in one line."""
        if not self.enabled:
            return
        if saved is not None and saved.get("kind") == self.kind:
            if self.policy is not None:
                self.policy.load_state_dict(saved["policy"], strict=True)
            self.replaced_at = int(saved["replaced_at"])
            return
        if self.policy is not None:
            found = "none" if saved is None else f"a {saved.get('kind')!r} one"
            log(f"[resume] the checkpoint's magnet is {found}, not {self.kind!r}: the magnet restarts from its weights")
        self.reset(policy, global_step)
