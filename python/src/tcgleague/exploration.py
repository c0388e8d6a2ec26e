"""Exploration of the lines neither seat plays: with `[train] explore_share` > 0, that
share of the learner's training decisions is drawn uniformly among the legal actions instead of
from the policy.

Why: policy gradient learns a state in proportion to how often play reaches it, so the answers to
actions both seats seldom take (on Leduc a second-round re-raise: tools/regret_map.py's worst
states) stay untrained, and that is where a best response finds its chips. An explored decision
walks into such a line, and the seat that answers it learns there on-policy.

The explored decisions train nothing themselves. The rollout leaves them out of the loss, with
the other seat's latest step of the same game (its return now follows an action its opponent's
policy did not take), and the GAE of both rows' earlier steps stops there
(`RolloutBuffer.off_policy`). So every trained return is on-policy, and the evaluations and the
average policy play the policy alone. What is not on-policy is where the answers are learned: an
exploring draw comes whatever the explorer holds, so the seat that answers it learns against an
opponent who plays that share at random, and the fixed point moves off the equilibrium as the
share grows (`tools/regret_map.py --explore-share`; the share is a trade between answers learned
and answers biased: experiments/README.md, stop 83).

Which decisions explore is drawn on the host from a stream of the rank's seed and the epoch (no
state to checkpoint: a resumed epoch draws the same), and reaches the policy as per-row sampling
parameters: smoothing 1, the uniform legal draw every family's sampler already makes.
"""

from __future__ import annotations

import numpy as np
import torch

from .policy.sampling import PARAM_NAMES
from .rng import stream_seed

SMOOTHING = PARAM_NAMES.index("smoothing_eps")


class Exploration:
    def __init__(self, share: float, seed: int):
        self.share, self.seed = float(share), int(seed)
        self.draws = np.random.default_rng(0)

    def start_epoch(self, epoch: int) -> None:
        self.draws = np.random.default_rng([stream_seed(self.seed, "exploration"), int(epoch)])

    def draw(self, n: int, learner: np.ndarray) -> np.ndarray:
        """Which of n deciding rows explore (bool [n]): of the learner's (positions `learner`),
        a share; none, and no draw, at share 0."""
        explore = np.zeros(n, dtype=bool)
        if self.share > 0.0:
            explore[learner] = self.draws.random(len(learner)) < self.share
        return explore

    def row_params(self, params: torch.Tensor, explore: torch.Tensor) -> torch.Tensor:
        """The sampling parameters per deciding row [n, 3]: `params` [3], smoothing 1 (a uniform
        legal draw) where `explore`; `params` itself at share 0 (a compiled step keeps its shape)."""
        if self.share == 0.0:
            return params
        rows = params.reshape(1, -1).repeat(len(explore), 1)
        rows[:, SMOOTHING].masked_fill_(explore, 1.0)
        return rows
