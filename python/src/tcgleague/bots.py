"""Scripted opponents, batched over rows: `random` (uniform over the legal list) and `greedy`
(the engine's one-ply search with a material heuristic, run in C)."""
from __future__ import annotations

import numpy as np

from .engine import LAYOUT

_LEGAL = slice(LAYOUT["legal_offset"], LAYOUT["legal_count_offset"])
_COUNT = LAYOUT["legal_count_offset"]
_WIDTH = LAYOUT["action_width"]


def legal_actions(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(legal tuples int32 [rows, max_legal, 4], counts int64 [rows]) read from observations."""
    legal = obs[:, _LEGAL].reshape(len(obs), -1, _WIDTH).astype(np.int32)
    return legal, obs[:, _COUNT].astype(np.int64)


def random_actions(obs: np.ndarray, rng: np.random.Generator, rows: np.ndarray | None = None) -> np.ndarray:
    """A uniformly random legal action for each row (rows with no legal list get zeros); with
    `rows`, an int32 [len(rows), 4] array for just those rows.

    Only each row's count and chosen tuple are read, a few values per row, never the list."""
    flat = obs.reshape(-1)
    rows = np.arange(len(obs)) if rows is None else np.asarray(rows, dtype=np.int64)
    base = rows * obs.shape[1]
    counts = flat[base + _COUNT].astype(np.int64)
    pick = np.minimum((rng.random(len(rows)) * counts).astype(np.int64), np.maximum(counts - 1, 0))
    start = base + LAYOUT["legal_offset"] + pick * _WIDTH
    actions = flat[start[:, None] + np.arange(_WIDTH)].astype(np.int32)
    actions[counts == 0] = 0
    return actions


def greedy_actions(env, rows: np.ndarray | None = None) -> np.ndarray:
    """The greedy bot's actions: for `rows` (env row ids) an int32 [len(rows), 4] array, only
    those games searched; without `rows`, int32 [num_agents, 4] with every active row filled."""
    out = np.zeros((env.num_agents, _WIDTH), dtype=np.int32)
    if rows is None:
        env.engine.greedy(out)
        return out
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    env.engine.greedy(out, rows)
    return out[rows]


BOTS = ("random", "greedy")  # the scripted opponents, by name
