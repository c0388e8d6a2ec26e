"""`PokerPufferEnv`: Leduc or Kuhn poker (env.py) behind the PufferLib face every game of
the trainer has (the game is a plug-in), Emberfront's `TCGEnv` being the other.

The face is the framework's (stepped_env.py: an action per row, an index into fold / call /
raise; the finished games' records as infos, `winner` -1 for a split pot); what is poker's here:
`engine.get_state()` / `set_state(bytes)` for an exact resume, and `summarize_episodes` for the
rollout's metrics."""

from __future__ import annotations

import numpy as np

from ...stepped_env import SteppedPufferEnv, state_bytes, state_from_bytes
from .env import PokerEnv
from .rules import ACTION_WIDTH, NUM_ACTIONS, rules_named


def summarize_poker_episodes(infos: list[dict]) -> dict:
    """environment/* metrics of finished poker games' records."""
    if not infos:
        return {}
    winners = np.array([e["winner"] for e in infos])
    returns = np.array([e["returns"] for e in infos], dtype=np.float64)
    return {
        "environment/episodes": float(len(infos)),
        "environment/episode_decisions": float(np.mean([e["decisions"] for e in infos])),
        "environment/pot_won": float(np.abs(returns[:, 0]).mean()),
        "environment/split_rate": float(np.mean(winners == -1)),
        "environment/first_player_winrate": float(np.mean(winners[winners >= 0] == 0)) if (winners >= 0).any() else 0.5,
    }


class PokerState:
    """The poker env's state as bytes (`get_state` / `set_state`), what a checkpoint stores of an
    engine: the arrays in an npz, the deal stream's state as JSON (no pickle)."""

    def __init__(self, env: PokerEnv, decisions: np.ndarray):
        self.env, self.decisions = env, decisions

    def get_state(self) -> bytes:
        state = self.env.state_dict()
        arrays = {
            "cards": state["cards"],
            "decisions": self.decisions,
            **{f"b_{k}": v for k, v in state["betting"].items()},
        }
        return state_bytes(arrays, state["rng"])

    def set_state(self, blob: bytes) -> None:
        try:
            data, rng = state_from_bytes(blob)
            betting = {k[2:]: data[k] for k in data if k.startswith("b_")}
            state = {
                "game": self.env.rules.name,
                "obs": self.env.obs,
                "cards": data["cards"],
                "betting": betting,
                "rng": rng,
            }
            self.env.load_state_dict(state)
            self.decisions[:] = data["decisions"]
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ValueError(f"{self.env.rules.name} engine state refused: {err}") from None


class PokerPufferEnv(SteppedPufferEnv):
    """Many games of one poker game, stepped in numpy into PufferLib's buffers."""

    summarize_episodes = staticmethod(summarize_poker_episodes)

    @staticmethod
    def bytes_per_game(env_kwargs: dict) -> int:
        """Memory one game takes, rows and game state: measured 252 bytes (Kuhn) and 542 (Leduc)
        of process memory per game at 200,000 games; this bound is 1.5x that."""
        return 24 * rules_named(env_kwargs.get("game", "leduc")).obs_width

    def __init__(self, game: str = "leduc", num_games: int = 1, seed: int = 0, buf=None):
        self.rules = rules_named(game)
        super().__init__(num_games, seed, self.rules.obs_width, NUM_ACTIONS, ACTION_WIDTH, buf)
        self.stepper = PokerEnv(self.rules, num_games, seed, obs=self.observations.view(np.int8))
        self.engine = PokerState(self.stepper, self.decisions)
