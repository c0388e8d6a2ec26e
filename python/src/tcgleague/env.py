"""The Emberfront environment: a native PufferLib env over the C engine, and a PettingZoo
AEC adapter for one game.

Rows: `num_agents = 2 * num_games`; row 2g + s is seat s of game g. Each step exactly one row
per game is active (`masks[row] = 1`); inactive rows' actions are ignored and their
observations are not refreshed. A row's reward is what its seat earned since its previous
decision; when a game ends both rows get `terminals` (or `truncations` at the turn cap) and
their final reward, and the game restarts itself.
"""
from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pufferlib

from .engine import LAYOUT, Engine
from .engine.cards import DEFAULT_CARDS, CardPool, deck_weights, load_card_pool

OBS_SIZE = LAYOUT["obs_size"]
ACTION_TYPES = {v: k for k, v in LAYOUT["action_types"].items()}
EPISODE_FIELDS = LAYOUT["episode_fields"]


class IllegalActionError(ValueError):
    """An active row's action is not in its game's legal list: a bug in the caller."""


def observation_space() -> gymnasium.spaces.Box:
    return gymnasium.spaces.Box(low=-1e4, high=1e4, shape=(OBS_SIZE,), dtype=np.float32)


def action_space() -> gymnasium.spaces.MultiDiscrete:
    return gymnasium.spaces.MultiDiscrete([LAYOUT["n_action_types"], LAYOUT["n_a"], LAYOUT["n_b"], LAYOUT["n_c"]])


class TCGEnv(pufferlib.PufferEnv):
    """Many Emberfront games, stepped by one C call into PufferLib's buffers."""

    def __init__(self, num_games: int = 1, seed: int = 0, deck_pool: str | Path | dict | None = None,
                 reward_shaping: float = 0.0, turn_cap: int = LAYOUT["default_turn_cap"],
                 card_file: str | Path = DEFAULT_CARDS, buf=None, log_episodes: bool = True):
        if num_games < 1:
            raise ValueError(f"num_games must be >= 1, got {num_games}")
        if turn_cap < 1:
            raise ValueError(f"turn_cap must be >= 1 (turns per player), got {turn_cap}")
        self.num_games = num_games
        self.num_agents = 2 * num_games
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.log_episodes = log_episodes
        self.seed = seed
        super().__init__(buf)
        self.pool: CardPool = load_card_pool(card_file)
        self._weights = deck_weights(self.pool, deck_pool)
        self.engine = Engine(
            num_games=num_games, n_cards=self.pool.n_cards, n_decks=len(self.pool.deck_names),
            cards=self.pool.table, decks=self.pool.decks, deck_leaders=self.pool.deck_leaders,
            deck_weights=self._weights, card_names=self.pool.names, observations=self.observations,
            rewards=self.rewards, terminals=self.terminals, truncations=self.truncations,
            masks=self.masks, turn_cap=turn_cap, shaping_coef=float(reward_shaping))

    def reset(self, seed: int | None = None):
        self.engine.reset(self.seed if seed is None else int(seed))
        self.engine.drain_episodes()
        return self.observations, []

    def step(self, actions):
        actions = np.ascontiguousarray(actions, dtype=np.int32).reshape(self.num_agents, -1)
        refused = self.engine.step(actions)
        if refused is not None:
            game, row, n_legal = refused
            raise IllegalActionError(
                f"game {game} (row {row}, seat {row % 2}): action {tuple(int(x) for x in actions[row])} is not "
                f"legal; the game has {n_legal} legal actions (see the legal list in its observation)")
        return self.observations, self.rewards, self.terminals, self.truncations, self._episode_infos()

    def set_reward_shaping(self, coef: float) -> None:
        self.engine.set_shaping(float(coef))

    def set_deal(self, game: int, seed: int, deck0: int, deck1: int, swapped: bool = False) -> None:
        """Replace one game with an explicit deal (evaluation's duplicate format)."""
        self.engine.set_deal(game, seed, deck0, deck1, swapped)

    def render(self, game: int = 0) -> str:
        return self.engine.render(game)

    def close(self):
        pass

    def _episode_infos(self) -> list[dict]:
        raw, dropped = self.engine.drain_episodes()
        if not raw or not self.log_episodes:
            return []
        records = np.frombuffer(raw, dtype=np.int32).reshape(-1, len(EPISODE_FIELDS) + 2 * len(ACTION_TYPES))
        infos = [episode_info(r, self.pool.deck_names) for r in records]
        if dropped:
            infos[-1]["episodes_dropped"] = dropped
        return infos


_COUNT_KEYS = [f"seat{seat}_{ACTION_TYPES[t]}" for seat in (0, 1) for t in range(len(ACTION_TYPES))]
_PASS = LAYOUT["action_types"]["pass"]


def episode_info(record: np.ndarray, deck_names: list[str]) -> dict:
    """One finished game as a flat dict (action counts are over the seat's own decisions)."""
    values = record.tolist()
    n = len(EPISODE_FIELDS)
    info = dict(zip(EPISODE_FIELDS, values[:n]))
    info.update(zip(_COUNT_KEYS, values[n:]))
    info["draw"] = int(info["winner"] == 2)
    info["deck0_name"] = deck_names[info["deck0"]]
    info["deck1_name"] = deck_names[info["deck1"]]
    passes = values[n + _PASS] + values[n + len(ACTION_TYPES) + _PASS]
    info["noop_rate"] = passes / max(1, sum(values[n:]))
    return info
