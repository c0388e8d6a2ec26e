"""Exploration of the lines neither seat plays: with `[train] explore_share` > 0, that
share of the learner's training decisions is drawn uniformly among the legal actions instead of
from the policy, or with `[train] explore_temperature` T > 0 from the policy at temperature T
(softmax(logits / T): each action's probability to the power 1 / T, renormalised).

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

Why a tempered draw: a uniform draw's answers are learned against a range that ignores the
explorer's cards, which costs most on the rare lines exploring is for. A draw at temperature T
keeps the order of the policy's probabilities across the explorer's holdings (an action one
holding plays ten times as often as another is drawn 10 ** (1 / T) times as often), so the range
an answer meets after it stays the policy's, flattened, while a rarely played action is still
drawn far more often than the policy plays it. Judged by tabular CFR+ on Leduc against an
opponent exploring a tenth (scratch, experiments/README.md stop 84): uniform draws hold the
average at 0.115 after 300 iterations, draws at T = 3 reach 0.070, where CFR+ alone is at 0.071.
Trained, it did not pay on Leduc's league (a tenth at T = 3: 0.110 on seeds 1-2 against a
twentieth uniform's 0.097), so configs/leduc.ini draws uniformly.

Which decisions explore is drawn on the host from a stream of the rank's seed and the epoch (no
state to checkpoint: a resumed epoch draws the same), and reaches the policy as per-row sampling
parameters: smoothing 1 (the uniform legal draw every family's sampler already makes), or both
temperatures at T (every family's tempered draw).
"""

from __future__ import annotations

import numpy as np
import torch

from .policy.sampling import PARAM_NAMES
from .rng import stream_seed

SMOOTHING = PARAM_NAMES.index("smoothing_eps")
TEMPERATURES = [PARAM_NAMES.index("primary_temperature"), PARAM_NAMES.index("subaction_temperature")]


class Exploration:
    def __init__(self, share: float, seed: int, temperature: float = 0.0):
        self.share, self.seed, self.temperature = float(share), int(seed), float(temperature)
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
        """The sampling parameters per deciding row [n, 3]: `params` [3], and where `explore`
        smoothing 1 (a uniform legal draw) or, with a temperature, both temperatures at it;
        `params` itself at share 0 (a compiled step keeps its shape)."""
        if self.share == 0.0:
            return params
        rows = params.reshape(1, -1).repeat(len(explore), 1)
        if self.temperature > 0.0:
            for column in TEMPERATURES:
                rows[:, column].masked_fill_(explore, self.temperature)
        else:
            rows[:, SMOOTHING].masked_fill_(explore, 1.0)
        return rows
