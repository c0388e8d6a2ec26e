"""`RowFormat`: what the learning stack knows of a game's env rows, and all it needs to know to
store, upload and learn from them: how many rows there are, how many bytes one observation row
takes as the env writes it, and how many integers one action is. The env says so through its
spaces (PufferLib's contract: `single_observation_space`, `single_action_space`), read once by
`vecenv.VecEnv`; the rollout buffer, the PPO updater, the step transfers and the trainer size
themselves from it, so no game's layout constant reaches them (the game is a plug-in).

Every game's rows follow one layout, the contract between an env and the rest: two rows per game,
one per seat, row `seat_row(g, s)` = 2g + s; each step one row per game acts, and both rows of a
game end together. The functions below turn games and rows into each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ROWS_PER_GAME = 2  # env rows per game, one per seat


def rows_of(games):
    """The row count of `games` games (an int), or both rows of each game of an index array,
    seat 0's first: [2g0, 2g1, ..., 2g0 + 1, 2g1 + 1, ...]."""
    if isinstance(games, (int, np.integer)):
        return ROWS_PER_GAME * int(games)
    return np.concatenate([seat_row(games, s) for s in range(ROWS_PER_GAME)])


def seat_row(games, seat):
    """The row of `seat` in each of `games` (seat may be an array of per-game seats)."""
    return ROWS_PER_GAME * np.asarray(games) + seat


def game_of(rows):
    """The game of each row (or the game count of a row count)."""
    if isinstance(rows, (int, np.integer)):
        return int(rows) // ROWS_PER_GAME
    return np.asarray(rows) // ROWS_PER_GAME


def finished_games(terminals: np.ndarray, truncations: np.ndarray) -> np.ndarray:
    """The games whose episode ended this step (both rows of a game end together), ascending."""
    return np.flatnonzero(terminals[::ROWS_PER_GAME] | truncations[::ROWS_PER_GAME])


def seat_of(rows) -> np.ndarray:
    """The seat each row plays."""
    return np.asarray(rows) % ROWS_PER_GAME


@dataclass(frozen=True)
class RowFormat:
    num_rows: int
    """env rows in all (two per game: one per seat)"""
    obs_bytes: int
    """bytes of one observation row (uint8, as the env writes it)"""
    action_width: int
    """integers in one action"""

    @classmethod
    def of(cls, env) -> RowFormat:
        """Read from a PufferLib env's (or vector's) spaces: its rows are `num_agents`."""
        return cls(env.num_agents, env.single_observation_space.shape[0], len(env.single_action_space.nvec))
