"""Where things sit in an observation row and an action tuple, and the engine's few codes the
Python side reads: the one home of the slices every reader of the legal action list uses (PPO
loss, bots, actors, the frozen pool, the env adapters).

The env writes each row compact, `OBS_BYTES` uint8: every feature is a small integer, so the
first `WIDE` features (globals, entities, the legal count) are int16 and the rest (the legal
tuples, the effects) int8. `features` (torch) and `features_np` read a row as the `OBS_SIZE`
float32 features, in the same order; the slices below index those features. The policy's
accessors (`wide_features`, `legal_from_obs`, `effects_from_obs`) read compact rows in place
on the device, casting only what they return, and read float features alike: hand-built float
positions and compact rows are one policy input.

All offsets come from the engine's exported `LAYOUT`, so a layout change in C moves them here
and nowhere else."""

from __future__ import annotations

import numpy as np
import torch

from .engine import LAYOUT

NAME = "emberfront"  # the game's name ([env] game, a checkpoint's fingerprint)
OBS_SIZE: int = LAYOUT["obs_size"]  # features per row
OBS_BYTES: int = LAYOUT["obs_bytes"]  # bytes per compact row, as the env writes it
WIDE: int = LAYOUT["obs_wide_count"]  # the int16 features at the start of a compact row (int8 after)
ACTION_WIDTH: int = LAYOUT["action_width"]  # (type, a, b, c)
MAX_LEGAL: int = LAYOUT["max_legal"]
COUNT: int = LAYOUT["legal_count_offset"]  # how many legal tuples are valid
LEGAL = slice(LAYOUT["legal_offset"], LAYOUT["legal_offset"] + MAX_LEGAL * ACTION_WIDTH)  # the tuples, flattened
N_EFFECTS: int = len(LAYOUT["effect_features"])
EFFECTS = slice(LAYOUT["effects_offset"], LAYOUT["effects_offset"] + MAX_LEGAL * N_EFFECTS)  # what each tuple does
PASS: int = LAYOUT["action_types"]["pass"]  # the action type that ends a turn / declines a response
DRAW = 2  # an episode record's `winner` when nobody won (the engine's code)
DEFAULT_TURN_CAP: int = LAYOUT["default_turn_cap"]
HEAD_SIZES = (LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"])  # the four action stages
# What an action means (the checkpoint fingerprint's action_space_hash; the rest of LAYOUT is the
# observation's, its obs_layout_hash).
ACTION_SPACE = {
    key: LAYOUT[key]
    for key in (
        "n_action_types",
        "n_a",
        "n_b",
        "n_c",
        "max_legal",
        "action_width",
        "action_types",
        "none_entity",
        "none_slot",
    )
}


def features(obs: torch.Tensor) -> torch.Tensor:
    """Compact rows (uint8 [..., OBS_BYTES]) -> float32 features [..., OBS_SIZE], exactly; a float
    row is returned as it is. (The policy reads compact rows in place through the accessors
    below, which never make the whole float row.)"""
    if obs.dtype != torch.uint8:
        return obs
    wide, narrow = obs[..., : 2 * WIDE].view(torch.int16), obs[..., 2 * WIDE :].view(torch.int8)
    return torch.cat([wide.float(), narrow.float()], -1)


def features_np(obs: np.ndarray) -> np.ndarray:
    """The numpy twin of `features`: compact rows [..., OBS_BYTES] -> float32 [..., OBS_SIZE]."""
    obs = np.ascontiguousarray(obs)
    wide, narrow = obs[..., : 2 * WIDE].view(np.int16), obs[..., 2 * WIDE :].view(np.int8)
    return np.concatenate([wide, narrow], -1).astype(np.float32)


def compact_np(features: np.ndarray) -> np.ndarray:
    """The inverse of `features_np`: float features [rows, OBS_SIZE] -> compact rows, refusing
    (ValueError) features that are not integers in their part's range."""
    wide, narrow = features[:, :WIDE].astype(np.int16), features[:, WIDE:].astype(np.int8)
    compact = np.concatenate([wide.view(np.uint8), narrow.view(np.uint8)], 1)
    if not np.array_equal(features_np(compact), features):
        raise ValueError("observation features that are not int16 / int8 integers cannot be compact rows")
    return compact


# The same places in a compact row, in bytes: the legal tuples are int8 values < 128 (the same
# read as uint8); the count is an int16 in [0, MAX_LEGAL], little-endian.
LEGAL_BYTES = slice(2 * WIDE, 2 * WIDE + MAX_LEGAL * ACTION_WIDTH)  # the first int8 features (LEGAL.start == WIDE)
COUNT_BYTES = slice(2 * COUNT, 2 * COUNT + 2)


def wide_features(obs: torch.Tensor) -> torch.Tensor:
    """The first WIDE features - globals, entities, the legal count: all the encoder reads - as
    float32 [..., WIDE], from compact rows or from features."""
    return obs[..., : 2 * WIDE].view(torch.int16).float() if obs.dtype == torch.uint8 else obs[..., :WIDE]


def legal_from_obs(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(legal [..., MAX_LEGAL, 4] long, count [...] long) of compact rows or features, read in
    place (no float row is made on the way)."""
    if obs.dtype == torch.uint8:
        tuples, count = obs[..., LEGAL_BYTES], obs[..., COUNT_BYTES].view(torch.int16)[..., 0]
    else:
        tuples, count = obs[..., LEGAL], obs[..., COUNT]
    return tuples.reshape(*obs.shape[:-1], MAX_LEGAL, ACTION_WIDTH).long(), count.long()


def effects_from_obs(obs: torch.Tensor) -> torch.Tensor:
    """What each legal tuple does at once (the engine's `action_effects`): [..., MAX_LEGAL,
    N_EFFECTS], int8 from compact rows (the scorer casts them), float32 from features."""
    part = obs[..., LEGAL_BYTES.stop :].view(torch.int8) if obs.dtype == torch.uint8 else obs[..., EFFECTS]
    return part.reshape(*obs.shape[:-1], MAX_LEGAL, N_EFFECTS)


def legal_counts(obs: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """How many legal tuples each compact row of `obs` [rows, OBS_BYTES] lists (of `rows` only,
    when given: two bytes read per row), int64."""
    rows = np.arange(len(obs)) if rows is None else np.asarray(rows, dtype=np.int64)
    low, high = obs[rows[:, None], np.arange(COUNT_BYTES.start, COUNT_BYTES.stop)].astype(np.int64).T
    return low | (high << 8)


def legal_tuples(obs: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The `index`-th legal tuple of each of `rows` of compact `obs`: int32 [len(rows), 4]."""
    start = LEGAL_BYTES.start + np.asarray(index, dtype=np.int64) * ACTION_WIDTH
    return obs[np.asarray(rows)[:, None], start[:, None] + np.arange(ACTION_WIDTH)].astype(np.int32)


def legal_actions(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compact rows [rows, OBS_BYTES] -> (legal int32 [rows, MAX_LEGAL, 4], count int64 [rows])
    (the bots' and the env adapters' legal lists)."""
    legal = obs[:, LEGAL_BYTES].reshape(len(obs), MAX_LEGAL, ACTION_WIDTH).astype(np.int32)
    return legal, legal_counts(obs)
