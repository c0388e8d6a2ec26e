"""What `bench peer`'s PuffeRL peer (PufferLib 3.0.23) trains and is judged with; nothing here
imports PuffeRL's module. Its training entry point, which does, is `tools/pufferl_peer.py`,
run only as a subprocess of `bench peer` (importing PuffeRL turns every RuntimeWarning into an
error and makes Ctrl-C `os._exit`, process-wide). It trains on `VersusBot` (one seat against
the greedy bot) vectorized by `pufferlib.vector.Serial`.

- The policy (`PeerLSTM`): an MLP encoder (observation -> 160 -> 128), an LSTM of 128 (our
  hidden size) and linear actor / critic heads: 574k parameters on today's 2,529-float
  observation against our 398k (349k on the 1,121 floats before the action effects, against
  our 342k with the staged heads, when the README's figures were measured). PuffeRL samples
  its logits unmasked, so the policy masks its own logits from the legal count in the
  observation (the count is part of the observation, as the legal list is for ours).
- The config is PufferLib's default.ini for the algorithm (gamma, GAE lambda, V-trace clips,
  prioritised replay, value and entropy coefficients) with what a CPU run needs: Adam (its
  default Muon needs heavyball), our learning rate, batch 16,384, minibatch 2,048 and BPTT 16.
- **Stand-in:** PuffeRL's advantage op `torch.ops.pufferlib.compute_puff_advantage` lives in
  `pufferlib._C`, which does not load without the CUDA runtime. `puff_advantage` below is a
  pure-torch implementation of the same recursion (V-trace-clipped GAE), patched in; `bench
  peer` says so in its output. On a machine where `_C` loads, the library's own op is used.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..env import feature_space
from ..layout import COUNT, MAX_LEGAL
from .shared import LegalIndexActor, sample_masked

HIDDEN = 128
NUM_ENVS = 64
MASKED = -1e9  # a large finite negative: -inf would make PuffeRL's entropy NaN (0 * -inf)
CONFIG = {  # PufferLib 3.0.23's default.ini [train], with the CPU changes named in the docstring
    "seed": 42,
    "torch_deterministic": True,
    "cpu_offload": False,
    "device": "cpu",
    "optimizer": "adam",
    "anneal_lr": True,
    "precision": "float32",
    "learning_rate": 6e-4,
    "gamma": 0.995,
    "gae_lambda": 0.90,
    "update_epochs": 1,
    "clip_coef": 0.2,
    "vf_coef": 2.0,
    "vf_clip_coef": 0.2,
    "max_grad_norm": 1.5,
    "ent_coef": 0.001,
    "adam_beta1": 0.95,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
    "checkpoint_interval": 10**9,  # snapshots are ours; PuffeRL's own checkpoints only at the end
    "batch_size": 16384,
    "minibatch_size": 2048,
    "max_minibatch_size": 32768,
    "bptt_horizon": 16,
    "compile": False,
    "compile_mode": "default",
    "compile_fullgraph": True,
    "vtrace_rho_clip": 1.0,
    "vtrace_c_clip": 1.0,
    "prio_alpha": 0.8,
    "prio_beta0": 0.2,
    "use_rnn": True,
    "env": "emberfront_versus_greedy",
}


class PeerLSTM(nn.Module):
    """PuffeRL's policy interface: `forward_eval(obs, state)` for one step (LSTM state in
    `state`), `forward(obs [segments, horizon, ...], state)` over whole BPTT segments."""

    def __init__(self, obs_size: int = feature_space().shape[0], hidden_size: int = HIDDEN):
        super().__init__()
        self.hidden_size = hidden_size
        self.encoder = nn.Sequential(nn.Linear(obs_size, 160), nn.ReLU(), nn.Linear(160, hidden_size), nn.ReLU())
        self.lstm = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.actor = nn.Linear(hidden_size, MAX_LEGAL)
        self.critic = nn.Linear(hidden_size, 1)

    def heads(self, obs: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        legal = torch.arange(MAX_LEGAL, device=obs.device) < obs[..., COUNT, None]
        return self.actor(out).masked_fill(~legal, MASKED), self.critic(out)[..., 0]

    def forward_eval(self, obs: torch.Tensor, state: dict) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.encoder(obs)[:, None]
        out, (h, c) = self.lstm(x, (state["lstm_h"][None], state["lstm_c"][None]))
        state["lstm_h"], state["lstm_c"] = h[0], c[0]
        return self.heads(obs, out[:, 0])

    def forward(self, obs: torch.Tensor, state: dict) -> tuple[torch.Tensor, torch.Tensor]:
        segments, horizon = obs.shape[:2]
        out, _ = self.lstm(self.encoder(obs))
        logits, value = self.heads(obs, out)
        return logits.reshape(segments * horizon, MAX_LEGAL), value


def puff_advantage(values, rewards, dones, importance, advantages, gamma, gae_lambda, rho_clip, c_clip):
    """PuffeRL's advantage, in torch: per row [segments, horizon], backwards from the
    second-to-last step, delta_t = min(rho_t, rho_clip) (r_{t+1} + gamma V_{t+1} (1 - d_{t+1})
    - V_t) and A_t = delta_t + gamma lambda min(rho_t, c_clip) (1 - d_{t+1}) A_{t+1}; the last
    step's advantage stays as given (zero)."""
    rho = importance.clamp(max=rho_clip)
    c = importance.clamp(max=c_clip)
    running = torch.zeros_like(values[:, 0])
    for t in range(values.shape[1] - 2, -1, -1):
        alive = 1.0 - dones[:, t + 1]
        delta = rho[:, t] * (rewards[:, t + 1] + gamma * values[:, t + 1] * alive - values[:, t])
        running = delta + gamma * gae_lambda * c[:, t] * running * alive
        advantages[:, t] = running
    return advantages


def load(path: Path, seed: int):
    policy = PeerLSTM().eval()
    policy.load_state_dict(torch.load(path, weights_only=True))
    generator = torch.Generator().manual_seed(seed)

    def make_actor(num_rows: int) -> LegalIndexActor:
        state = {"lstm_h": torch.zeros(num_rows, HIDDEN), "lstm_c": torch.zeros(num_rows, HIDDEN)}

        @torch.no_grad()
        def choose(obs: np.ndarray, masks: np.ndarray, rows: np.ndarray) -> np.ndarray:
            rows_t = torch.as_tensor(rows)
            mine = {"lstm_h": state["lstm_h"][rows_t], "lstm_c": state["lstm_c"][rows_t]}
            logits, _ = policy.forward_eval(torch.as_tensor(obs), mine)
            state["lstm_h"][rows_t], state["lstm_c"][rows_t] = mine["lstm_h"], mine["lstm_c"]
            return sample_masked(logits, torch.as_tensor(masks), generator)

        def reset(rows: np.ndarray) -> None:
            state["lstm_h"][torch.as_tensor(rows)] = 0.0
            state["lstm_c"][torch.as_tensor(rows)] = 0.0

        return LegalIndexActor(choose, reset, name="PuffeRL")

    return make_actor
