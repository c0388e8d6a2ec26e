"""Counterfactual weighting: with `[train] own_reach_cap` > 0 each learner decision weighs in the
loss by 1 / the acting seat's own reach of it (the product of its own behaviour probabilities
earlier in the game), capped at the cap, the weights scaled to mean 1 over the trained steps.

Why: on-policy sampling visits a state in proportion to both seats' reach of it, so policy
gradient moves a state's policy at a rate scaled by the acting seat's own reach, a rate that
changes as the policy does. CFR's average strategy converges because each state's regrets are
weighed by the others' reach alone (counterfactual values); dividing out the own reach gives
the sampled update that weighting, in expectation. The cap bounds the variance a rare own line
would add (outcome sampling's importance weights are unbounded). The behaviour probabilities are
the sampled ones: an exploring decision's is its uniform draw's (exploration.py).

`OwnReach` carries each env row's log-reach across decisions and epochs, like its LSTM state,
and is part of the run state (an exact resume weighs the same)."""

from __future__ import annotations

import torch


class OwnReach:
    """Each env row's log own reach in its current game, on the device; not tracked when off (no
    weighting reads it: `advance` does no work and returns None)."""

    def __init__(self, num_rows: int, device: torch.device, enabled: bool = True):
        self.log_reach, self.enabled = torch.zeros(num_rows, device=device), enabled

    def advance(self, rows: torch.Tensor, episode_start: torch.Tensor, logprob: torch.Tensor) -> torch.Tensor | None:
        """The log reach of `rows`' decisions now (0 at a game's first), then adds their sampled
        actions' `logprob`: what each row's next decision in the same game is reached with."""
        if not self.enabled:
            return None
        before = torch.where(episode_start, 0.0, self.log_reach[rows])
        self.log_reach.index_copy_(0, rows, before + logprob.to(before.dtype))
        return before

    def state_dict(self) -> torch.Tensor:
        return self.log_reach.detach().cpu().clone()

    def load_state_dict(self, saved: torch.Tensor | None) -> None:
        """A checkpoint written before the weighting existed holds none: every row starts at 0."""
        self.log_reach.copy_(saved if saved is not None else torch.zeros_like(self.log_reach))


def counterfactual_weights(log_reach: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """min(1 / own reach, cap) per step, times `mask`, scaled so the trained steps' mean is 1."""
    weight = (-log_reach).exp().clamp(max=cap) * mask
    return weight * mask.sum() / weight.sum().clamp_min(1e-12)
