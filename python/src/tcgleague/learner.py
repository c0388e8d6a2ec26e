"""A learning agent's training stack, built in one place: the policy and its sampler with the
Adam optimizer, the clipped-PPO updater, the rollout buffer and the acting PolicyActor (per-row
LSTM state, its sampling generator).

The trainer's main agent and the league's main exploiter are both a `Learner`; they differ only
in the sizes and modes handed to `build_learner` (the exploiter's smaller minibatches, its scaled
learning rate, no compilation), so a change to how an agent learns is made once."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .actors import PolicyActor
from .config import TrainSection
from .dist import SINGLE, Dist
from .magnet import Magnet
from .policy.family import Policy, Sampler
from .ppo import PPOUpdater, UpdateSettings
from .rollout import RolloutBuffer
from .rows import RowFormat


@dataclass
class Learner:
    """What one learning agent is made of (all on `device`, the run's)."""

    policy: Policy
    sampler: Sampler
    optimizer: torch.optim.Adam
    updater: PPOUpdater
    buffer: RolloutBuffer
    actor: PolicyActor
    generator: torch.Generator  # the actor's sampling and the updater's minibatch order
    device: torch.device
    magnet: Magnet | None = None  # what its objective is regularized toward (magnet.py); None: plain PPO


@dataclass(frozen=True)
class LearnerSizes:
    """How much one agent learns from per epoch, and how it runs.

    capacity: decisions its buffer holds per epoch; minibatch: decisions per minibatch;
    learning_rate: Adam's; compile_mode: the decision step's torch.compile mode (None: eager);
    loss_compile_mode: the loss's."""

    capacity: int
    minibatch: int
    learning_rate: float
    compile_mode: str | None = None
    loss_compile_mode: str | None = None


def build_learner(
    policy: Policy,
    sampler: Sampler,
    train: TrainSection,
    sizes: LearnerSizes,
    rows: RowFormat,
    seed: int,
    device: torch.device,
    name: str,
    dist: Dist = SINGLE,
    magnet: Magnet | None = None,
) -> Learner:
    """`policy` (already on `device`) with everything it needs to act on the env's `rows` and
    learn from them by PPO with [train]'s hyperparameters (regularized toward `magnet`, if any)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    optimizer = torch.optim.Adam(
        policy.parameters(), lr=sizes.learning_rate, eps=train.adam_eps, fused=device.type == "cuda"
    )
    settings = UpdateSettings(
        sizes.minibatch // train.bptt_horizon,
        train.update_epochs,
        train.max_grad_norm,
        train.norm_adv,
        sizes.loss_compile_mode,
        train.precision,
        train.neurd_min_prob if train.update_rule == "neurd" else None,
    )
    hidden = policy.hidden_size
    updater = PPOUpdater(policy, sampler, optimizer, settings, train.bptt_horizon, rows, hidden, device, dist, magnet)
    buffer = RolloutBuffer(sizes.capacity, train.bptt_horizon, rows, hidden, device)
    actor = PolicyActor(policy, sampler, rows.num_rows, generator, name=name, compile_mode=sizes.compile_mode)
    return Learner(policy, sampler, optimizer, updater, buffer, actor, generator, device, magnet)
