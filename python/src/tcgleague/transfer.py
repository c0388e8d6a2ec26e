"""The rollout's host/device boundary: per env step exactly one host->device copy (what the
learner needs about the deciding row of every game) and one device->host copy (its actions).

Up-going data is packed as the columns of ONE pinned float32 buffer [num_games, OBS_SIZE + 3]:
the observation, the env row, the rollout-buffer slot the decision goes to (`capacity` = not
stored) and whether the row starts an episode. Integers below EXACT_INT_LIMIT (2**24) are
exact in float32; config validation keeps rows and slots below it. The copy is `non_blocking` from pinned
memory, so it overlaps with the host's work; the actions come back into a pinned buffer after
one event wait, the step's only synchronisation. On the CPU both "copies" are views of the
same memory and nothing is copied at all.
"""

from __future__ import annotations

import numpy as np
import torch

from .config.sections import EXACT_INT_LIMIT
from .layout import ACTION_WIDTH, OBS_SIZE

ROW, SLOT, START = OBS_SIZE, OBS_SIZE + 1, OBS_SIZE + 2  # the extra columns
WIDTH = OBS_SIZE + 3


class StepTransfer:
    """upload(obs, rows, slots, starts) -> (obs, rows, slots, starts) on the device;
    download(actions) -> int32 numpy [num_games, 4]."""

    def __init__(self, num_games: int, device: torch.device):
        if 2 * num_games >= EXACT_INT_LIMIT:
            raise ValueError(f"{num_games} games: env rows must stay below {EXACT_INT_LIMIT} to travel in float32")
        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.host = torch.zeros(num_games, WIDTH, pin_memory=cuda)
        self.host_np = self.host.numpy()
        self.up = torch.zeros(num_games, WIDTH, device=self.device) if cuda else self.host
        self.actions = torch.zeros(num_games, ACTION_WIDTH, dtype=torch.int32, pin_memory=cuda)
        self.actions_np = self.actions.numpy()
        self.ready = torch.cuda.Event() if cuda else None
        if cuda:  # its address never changes: a compiled step may treat it as a static input
            torch._dynamo.mark_static_address(self.up)

    def upload(
        self, obs: np.ndarray, rows: np.ndarray, slots: np.ndarray, starts: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs [num_rows, OBS_SIZE] (all rows), the deciding `rows` (one per game, in game
        order), their buffer `slots` and episode-start flags -> device views of the same."""
        h = self.host_np
        h[:, :OBS_SIZE] = obs[rows]
        h[:, ROW] = rows
        h[:, SLOT] = slots
        h[:, START] = starts
        if self.up is not self.host:
            self.up.copy_(self.host, non_blocking=True)
        up = self.up
        return up[:, :OBS_SIZE], up[:, ROW].long(), up[:, SLOT].long(), up[:, START] > 0.5

    def download(self, actions: torch.Tensor) -> np.ndarray:
        """The actions as int32 numpy [num_games, ACTION_WIDTH] (a buffer reused every step)."""
        self.actions.copy_(actions.to(torch.int32), non_blocking=True)
        if self.ready is not None:
            self.ready.record()
            self.ready.synchronize()
        return self.actions_np
