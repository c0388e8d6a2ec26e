"""Where things sit in an observation row and an action tuple, and the engine's few codes the
Python side reads: the one home of the slices every reader of the legal action list uses (PPO
loss, bots, actors, the frozen pool, the env adapters).

All offsets come from the engine's exported `LAYOUT`, so a layout change in C moves them here
and nowhere else."""

from __future__ import annotations

import numpy as np
import torch

from .engine import LAYOUT

OBS_SIZE: int = LAYOUT["obs_size"]
ACTION_WIDTH: int = LAYOUT["action_width"]  # (type, a, b, c)
ROWS_PER_GAME = 2  # env rows per game, one per seat (env.rows_of / game_of turn games and rows into each other)
MAX_LEGAL: int = LAYOUT["max_legal"]
LEGAL = slice(LAYOUT["legal_offset"], LAYOUT["legal_count_offset"])  # the legal tuples, flattened
COUNT: int = LAYOUT["legal_count_offset"]  # how many of those tuples are valid
N_EFFECTS: int = len(LAYOUT["effect_features"])
EFFECTS = slice(LAYOUT["effects_offset"], LAYOUT["effects_offset"] + MAX_LEGAL * N_EFFECTS)  # what each tuple does
PASS: int = LAYOUT["action_types"]["pass"]  # the action type that ends a turn / declines a response
DRAW = 2  # an episode record's `winner` when nobody won (the engine's code)
DEFAULT_TURN_CAP: int = LAYOUT["default_turn_cap"]
HEAD_SIZES = (LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"])  # the four action stages


def legal_from_obs(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(legal [..., MAX_LEGAL, 4] long, count [...] long) of observations [..., OBS_SIZE]."""
    legal = obs[..., LEGAL].reshape(*obs.shape[:-1], MAX_LEGAL, ACTION_WIDTH).long()
    return legal, obs[..., COUNT].long()


def effects_from_obs(obs: torch.Tensor) -> torch.Tensor:
    """What each legal tuple does at once (the engine's `action_effects`): [..., MAX_LEGAL, N_EFFECTS]."""
    return obs[..., EFFECTS].reshape(*obs.shape[:-1], MAX_LEGAL, N_EFFECTS)


def legal_actions(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numpy twin of `legal_from_obs`: (legal int32 [rows, MAX_LEGAL, 4], count int64 [rows])."""
    legal = obs[:, LEGAL].reshape(len(obs), MAX_LEGAL, ACTION_WIDTH).astype(np.int32)
    return legal, obs[:, COUNT].astype(np.int64)
