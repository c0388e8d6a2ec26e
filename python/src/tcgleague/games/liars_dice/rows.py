"""`LiarsDicePufferEnv`: Liar's Dice (env.py) behind the framework's PufferLib face
(stepped_env.py: an action per row, the index of a bid or the call; the finished games' records
as infos), with what is the game's own: `engine.get_state()` / `set_state(bytes)` for an exact
resume, and `summarize_episodes` for the rollout's metrics."""

from __future__ import annotations

import numpy as np

from ...stepped_env import SteppedPufferEnv, state_bytes, state_from_bytes
from .env import LiarsDiceEnv
from .rules import ACTION_WIDTH, NAME, NUM_ACTIONS, OBS_WIDTH

STATE_ARRAYS = ("dice", "bid", "actor")


def summarize_liars_dice_episodes(infos: list[dict]) -> dict:
    """environment/* metrics of finished games' records."""
    if not infos:
        return {}
    winners = np.array([e["winner"] for e in infos])
    return {
        "environment/episodes": float(len(infos)),
        "environment/episode_decisions": float(np.mean([e["decisions"] for e in infos])),
        "environment/first_player_winrate": float(np.mean(winners == 0)),
    }


class LiarsDiceState:
    """The env's state as bytes (`get_state` / `set_state`), what a checkpoint stores of an
    engine: the arrays in an npz, the roll stream's state as JSON (no pickle)."""

    def __init__(self, env: LiarsDiceEnv, decisions: np.ndarray):
        self.env, self.decisions = env, decisions

    def get_state(self) -> bytes:
        state = self.env.state_dict()
        return state_bytes({"decisions": self.decisions, **{k: state[k] for k in STATE_ARRAYS}}, state["rng"])

    def set_state(self, blob: bytes) -> None:
        try:
            data, rng = state_from_bytes(blob)
            state = {"game": NAME, "obs": self.env.obs, "rng": rng}
            self.env.load_state_dict({**state, **{k: data[k] for k in STATE_ARRAYS}})
            self.decisions[:] = data["decisions"]
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ValueError(f"{NAME} engine state refused: {err}") from None


class LiarsDicePufferEnv(SteppedPufferEnv):
    """Many games of Liar's Dice, stepped in numpy into PufferLib's buffers."""

    summarize_episodes = staticmethod(summarize_liars_dice_episodes)

    @staticmethod
    def bytes_per_game(env_kwargs: dict) -> int:
        """Memory one game takes, rows and game state (not measured: poker's measured games take
        16x their row width in bytes, and this is 1.5x that)."""
        return 24 * OBS_WIDTH

    def __init__(self, num_games: int = 1, seed: int = 0, buf=None):
        super().__init__(num_games, seed, OBS_WIDTH, NUM_ACTIONS, ACTION_WIDTH, buf)
        self.stepper = LiarsDiceEnv(num_games, seed, obs=self.observations.view(np.int8))
        self.engine = LiarsDiceState(self.stepper, self.decisions)
