"""The policy family of a small game: a generic LSTM over a flat observation row, and a masked
softmax over the few actions the row's legal mask allows (a game brings its own policy family).

A row of such a game is `obs_width` bytes of 0/1 features whose last `num_actions` bytes are the
legal mask (the poker rows of games/poker/rules.py: OpenSpiel's information-state tensor, then the
fold / call / raise mask). An action is one integer, the index of a legal action.

`FlatSampler` keeps the sampling parameters of every family ([3]: primary_temperature,
subaction_temperature, smoothing_eps; one action has no sub-actions, so the second is unused):
p = (1 - eps) * softmax(masked logits / T) + eps * uniform over the legal actions (the math of
Emberfront's sampler at one stage, `stage_logp`). The uniform
draws are handed in (Gumbel-max over them), so the compiled and vmapped steps hold no RNG."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from ..recurrent import lstm_cell
from .family import PolicyFamily, config_from_dict, seeded, with_weights
from .sampling import SamplingParameters, stage_logp

FAMILY = "flat_lstm"  # the name a checkpoint's policy_config carries (game.family_of)
MAX_ACTIONS = 16  # uniform draws per decision: a flat game has at most this many actions (Liar's Dice: 13)


@dataclass
class FlatPolicyConfig:
    """Architecture of a FlatPolicy; saved with checkpoints (`to_dict` / `from_dict`)."""

    obs_width: int
    """bytes of one observation row, the legal mask last"""
    num_actions: int
    """actions of the game: the legal mask's width"""
    hidden_size: int = 128
    family: str = FAMILY

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name != "family" and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"FlatPolicyConfig.{f.name} must be an int >= 1, got {v!r}")
        if self.family != FAMILY:
            raise ValueError(f"FlatPolicyConfig.family must be {FAMILY!r}, got {self.family!r}")
        if self.num_actions > MAX_ACTIONS:
            raise ValueError(f"FlatPolicyConfig.num_actions must be <= {MAX_ACTIONS}, got {self.num_actions}")
        if self.num_actions >= self.obs_width:
            raise ValueError(f"FlatPolicyConfig: {self.num_actions} actions do not fit a row of {self.obs_width}")

    @property
    def legal_offset(self) -> int:
        return self.obs_width - self.num_actions

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FlatPolicyConfig:
        return config_from_dict(cls, d)


class FlatPolicy(nn.Module):
    """Row -> MLP -> LSTM -> (action logits, value)."""

    def __init__(self, config: FlatPolicyConfig):
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden_size
        self.legal_offset, self.num_actions = config.legal_offset, config.num_actions
        width = config.hidden_size
        self.encoder = nn.Sequential(nn.Linear(config.obs_width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.lstm = nn.LSTMCell(width, width)
        self.actor = nn.Linear(width, config.num_actions)
        self.value_head = nn.Linear(width, 1)

    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the LSTM's input, the same again: the sampler reads nothing else of the row's encoding)."""
        x = self.encoder(obs.float())
        return x, x

    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = lstm_cell(self.lstm, x, *state)
        return h, (h, c)

    def value(self, out: torch.Tensor) -> torch.Tensor:
        return self.value_head(out).squeeze(-1)

    def logits(self, out: torch.Tensor) -> torch.Tensor:
        return self.actor(out)


def build_flat_policy(config: FlatPolicyConfig, seed: int = 0) -> FlatPolicy:
    """A FlatPolicy initialised from `seed` without touching the global torch RNG."""
    return seeded(lambda: FlatPolicy(config), seed)


def flat_policy_from_state(state_dict: dict, config: FlatPolicyConfig) -> FlatPolicy:
    """A FlatPolicy holding `state_dict` (compiled or not); raises on a mismatch."""
    return with_weights(build_flat_policy(config), state_dict)


class FlatSampler(SamplingParameters):
    """Masked softmax over one action, with runtime-settable temperature and smoothing."""

    def draws_buffer(self, n: int, device: torch.device) -> torch.Tensor:
        return torch.zeros(n, MAX_ACTIONS, device=device)

    def draw(self, n: int, generator: torch.Generator, out: torch.Tensor | None = None) -> torch.Tensor:
        """One U(0, 1) draw per action of each of `n` decisions (Gumbel-max reads the first `num_actions`)."""
        return torch.rand(n, MAX_ACTIONS, generator=generator, device=generator.device, out=out)

    def log_probs(self, policy, out, obs, params=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(log p [n, actions], legal [n, actions] bool) at rows `obs`; illegal actions ~-1e9."""
        legal = obs[:, policy.legal_offset : policy.legal_offset + policy.num_actions] > 0
        temperature, _, eps = self.row_params(params, len(legal), out.device).unbind(1)
        logp = stage_logp(policy.logits(out), legal, temperature, eps)
        return logp, legal

    def sample_rows(self, policy, out, ent, obs, params=None, argmax: bool = False, uniforms=None):
        """(actions [n, 1], logprob [n], entropy [n]); a row with nothing legal gives 0, 0, 0."""
        logp, legal = self.log_probs(policy, out, obs, params)
        if argmax:
            score = logp
        else:
            u = uniforms[:, : logp.shape[1]].clamp(1e-20, 1 - 1e-7)
            score = logp - torch.log(-torch.log(u))  # Gumbel-max: a draw from softmax(logp)
        actions = score.masked_fill(~legal, -math.inf).argmax(-1, keepdim=True)
        return (actions, *self._chosen(logp, legal, actions))

    def log_prob_entropy_rows(self, policy, out, ent, obs, actions, params=None):
        return self.log_prob_entropy_stages_rows(policy, out, ent, obs, actions, params)[:2]

    def log_prob_entropy_stages_rows(self, policy, out, ent, obs, actions, params=None):
        """(logprob [n], entropy [n], [log p [n, actions]]): one action, one stage."""
        logp, legal = self.log_probs(policy, out, obs, params)
        return (*self._chosen(logp, legal, actions.reshape(-1, 1).long()), [logp])

    def listed_log_probs(self, policy, out, ent, obs, params=None) -> torch.Tensor:
        """log pi of every action [n, actions], -inf where illegal."""
        logp, legal = self.log_probs(policy, out, obs, params)
        return logp.masked_fill(~legal, -math.inf)

    @staticmethod
    def _chosen(logp: torch.Tensor, legal: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        any_legal = legal.any(-1)
        logprob = logp.gather(1, actions.clamp(0, logp.shape[1] - 1)).squeeze(1)
        entropy = -(logp.exp() * logp).masked_fill(~legal, 0.0).sum(-1)
        zero = torch.zeros_like(logprob)
        return torch.where(any_legal, logprob, zero), torch.where(any_legal, entropy, zero)


FLAT_FAMILY = PolicyFamily(
    FAMILY, FlatPolicyConfig.from_dict, build_flat_policy, flat_policy_from_state, FlatSampler.from_params
)
