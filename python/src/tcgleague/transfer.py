"""The rollout's host/device boundary: per env step exactly one host->device copy (what the
learner needs about the deciding row of every game) and one device->host copy (its actions).

Up-going data sits in ONE flat pinned byte buffer: the deciding rows' observations as the
engine wrote them (compact, uint8 [num_games, OBS_BYTES]: the policy casts them on the device,
layout.features), then three rows of num_games int32 values each: the env row, the
rollout-buffer slot the decision goes to (`capacity` = not stored) and its flags (bit 0: the row
starts an episode; bit 1: the decision explores, exploration.py). The copy is `non_blocking` from pinned memory; the actions come back into a pinned
buffer after one event wait, the step's only synchronisation. The device views are made once,
so a compiled step sees the same (static) observation tensor every step. On the CPU host and
device are the same memory and nothing is copied at all.

The deciding rows are gathered (one `np.take` of the games' deciding rows, ~3 KB each) rather
than the env's whole buffer uploaded: the other seat's row is stale, and uploading it would
double the bytes.
"""

from __future__ import annotations

import numpy as np
import torch

from .devices import mark_static
from .rows import RowFormat

ROW, SLOT, FLAGS = 0, 1, 2  # the rows of the per-game values after the observations
START, EXPLORE = 1, 2  # the bits of FLAGS


class StepTransfer:
    """upload(obs, rows, slots, starts, explore) -> (obs, rows, slots, starts, explore) on the device;
    download(actions) -> int32 numpy [num_games, action_width]."""

    def __init__(self, num_games: int, rows: RowFormat, device: torch.device):
        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        obs_bytes = rows.obs_bytes
        size = -(-num_games * obs_bytes // 4) * 4  # the int32 values start 4-byte aligned
        self.host = torch.zeros(size + 4 * 3 * num_games, dtype=torch.uint8, pin_memory=cuda)
        self.up = torch.zeros_like(self.host, device=self.device) if cuda else self.host
        host_np = self.host.numpy()
        self.host_obs = host_np[: num_games * obs_bytes].reshape(num_games, obs_bytes)
        self.host_values = host_np[size:].view(np.int32).reshape(3, num_games)
        self.obs = self.up[: num_games * obs_bytes].view(num_games, obs_bytes)
        self.values = self.up[size:].view(torch.int32).view(3, num_games)
        self.actions = torch.zeros(num_games, rows.action_width, dtype=torch.int32, pin_memory=cuda)
        self.actions_np = self.actions.numpy()
        self.ready = torch.cuda.Event() if cuda else None
        mark_static(self.obs)  # a compiled step reads the observations in place
        # what crosses the host/device boundary each env step (staged the same way on the CPU)
        self.bytes_up, self.bytes_down = self.host.nbytes, self.actions.nbytes

    def upload(
        self,
        obs: np.ndarray,
        rows: np.ndarray,
        slots: np.ndarray,
        starts: np.ndarray,
        explore: np.ndarray | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs [num_rows, obs_bytes] (all rows), the deciding `rows` (one per game, in game
        order), their buffer `slots`, episode-start and explore flags -> the same on the device."""
        np.take(obs, rows, axis=0, out=self.host_obs, mode="clip")  # "clip": unbuffered, rows are valid
        self.host_values[ROW] = rows
        self.host_values[SLOT] = slots
        self.host_values[FLAGS] = starts * START + (0 if explore is None else explore * EXPLORE)
        if self.up is not self.host:
            self.up.copy_(self.host, non_blocking=True)
        v = self.values
        return self.obs, v[ROW].long(), v[SLOT].long(), (v[FLAGS] & START) > 0, (v[FLAGS] & EXPLORE) > 0

    def download(self, actions: torch.Tensor) -> np.ndarray:
        """The actions as int32 numpy [num_games, action_width] (a buffer reused every step)."""
        self.actions.copy_(actions.to(torch.int32), non_blocking=True)
        if self.ready is not None:
            self.ready.record(torch.cuda.current_stream(self.device))
            self.ready.synchronize()
        return self.actions_np


def rollout_perf(
    transfers: list[StepTransfer], steps: float, env_seconds: float, opponents_seconds: float
) -> dict[str, float]:
    """An epoch's rollout figures: its env steps (every game stepped once), the host seconds in
    the env (with overlap: waiting for it) and in the opponents' actions (clocks only, no device
    sync), and the bytes up and down per env step (one transfer per part of the games)."""
    return {
        "perf/env_steps": float(steps),
        "perf/env_seconds": env_seconds,
        "perf/opponents_act_seconds": opponents_seconds,
        "perf/bytes_up_per_step": float(sum(t.bytes_up for t in transfers)),
        "perf/bytes_down_per_step": float(sum(t.bytes_down for t in transfers)),
    }


class Traffic:
    """Bytes an actor outside the learner's step moved host -> device and back (the frozen pool,
    the exploiter), counted until the epoch's figures `take` them."""

    def __init__(self):
        self.up = self.down = 0

    def add(self, up: int, down: int) -> None:
        self.up, self.down = self.up + int(up), self.down + int(down)

    def take(self) -> tuple[int, int]:
        out, (self.up, self.down) = (self.up, self.down), (0, 0)
        return out
