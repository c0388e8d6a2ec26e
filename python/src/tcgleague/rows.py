"""`RowFormat`: what the learning stack knows of a game's env rows, and all it needs to know to
store, upload and learn from them: how many rows there are, how many bytes one observation row
takes as the env writes it, and how many integers one action is. The env says so through its
spaces (PufferLib's contract: `single_observation_space`, `single_action_space`), read once by
`vecenv.VecEnv`; the rollout buffer, the PPO updater, the step transfers and the trainer size
themselves from it, so no game's layout constant reaches them (issue 42: the game as a plug-in)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowFormat:
    num_rows: int
    """env rows in all (two per game: one per seat)"""
    obs_bytes: int
    """bytes of one observation row (uint8, as the env writes it)"""
    action_width: int
    """integers in one action"""
