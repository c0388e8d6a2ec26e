"""sb3-contrib's MaskablePPO as a `bench peer` trainer: its own MLP actor-critic on `VersusBot`
(one seat against the greedy bot), with the library's defaults except the network, sized like
ours (pi and vf [128, 128]: 697k parameters on today's observation against our 398k; 337k
against our 342k before the action effects, when the README's figures were measured),
and 8 envs in a DummyVecEnv (n_steps 256, so a 2,048-step rollout as with one env's defaults).

    python -m tcgleague.games.emberfront.peers.sb3_peer train --steps 500000 --out DIR
    python -m tcgleague.games.emberfront.peers.sb3_peer evaluate --snapshot DIR/snapshot_....pt --json OUT
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from .shared import LegalIndexActor, SnapshotLog, command_line, sample_masked
from .versus_bot import VersusBot

NUM_ENVS = 8
NET_ARCH = {"pi": [128, 128], "vf": [128, 128]}


class Snapshots(BaseCallback):
    """Saves the model whenever a snapshot is due, timed from the first step."""

    def __init__(self, log: SnapshotLog):
        super().__init__()
        self.log, self.start = log, None

    def _on_training_start(self) -> None:
        self.start = time.perf_counter()

    def _on_step(self) -> bool:
        seconds = time.perf_counter() - self.start
        if self.log.due(self.num_timesteps, seconds):
            self.log.add(self.num_timesteps, seconds, self.model.save)
        return True


def train(steps: int, seed: int, log: SnapshotLog) -> None:
    env = DummyVecEnv([lambda i=i: VersusBot(seed=seed + i) for i in range(NUM_ENVS)])
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=2048 // NUM_ENVS,
        policy_kwargs={"net_arch": NET_ARCH},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    print(f"MaskablePPO: {sum(p.numel() for p in model.policy.parameters()):,} parameters", flush=True)
    callback = Snapshots(log)
    model.learn(total_timesteps=steps, callback=callback)
    if not log.taken or log.taken[-1].steps != model.num_timesteps:
        log.add(model.num_timesteps, time.perf_counter() - callback.start, model.save)


def load(path: Path, seed: int):
    policy = MaskablePPO.load(path, device="cpu").policy.eval()
    generator = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def choose(obs, masks, rows):
        dist = policy.get_distribution(torch.as_tensor(obs), action_masks=masks)
        return sample_masked(dist.distribution.logits, torch.as_tensor(masks), generator)

    return lambda num_rows: LegalIndexActor(choose, name="MaskablePPO")


if __name__ == "__main__":
    sys.exit(command_line(train, load))
