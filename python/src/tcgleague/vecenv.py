"""One stepping interface over the three ways to run TCGEnv: natively in-process (one C call
for every game), or through pufferlib.vector's Serial / Multiprocessing backends."""
from __future__ import annotations

import numpy as np
import pufferlib.vector

from .env import TCGEnv


class VecEnv:
    """reset(seed) -> obs; step(actions) -> (obs, rewards, terminals, truncations, infos).
    `masks` marks the deciding row of every game; arrays are PufferLib's shared buffers."""

    def __init__(self, backend: str, num_envs: int, num_workers: int, env_kwargs: dict):
        self.backend = backend
        if backend == "native":
            if num_envs != 1:
                raise ValueError(f"[vec] num_envs must be 1 for the native backend (got {num_envs}); "
                                 "use backend = serial or multiprocessing for several env objects")
            self._env = TCGEnv(**env_kwargs)
            self._vec = None
        else:
            kinds = {"serial": pufferlib.vector.Serial, "multiprocessing": pufferlib.vector.Multiprocessing}
            extra = {"num_workers": num_workers} if backend == "multiprocessing" else {}
            self._vec = pufferlib.vector.make(TCGEnv, backend=kinds[backend], num_envs=num_envs,
                                              env_kwargs=env_kwargs, **extra)
            self._env = None
        self.num_agents = (self._env or self._vec).num_agents
        self.num_games = self.num_agents // 2
        self.masks = np.zeros(self.num_agents, dtype=bool)

    def reset(self, seed: int) -> np.ndarray:
        if self._env is not None:
            obs, _ = self._env.reset(seed)
            self.masks = self._env.masks
            return obs
        self._vec.async_reset(seed)
        obs, _, _, _, _, _, _, self.masks = self._vec.recv()
        return obs

    def step(self, actions: np.ndarray):
        if self._env is not None:
            return self._env.step(actions)
        self._vec.send(actions)
        obs, rewards, terminals, truncations, _, infos, _, self.masks = self._vec.recv()
        return obs, rewards, terminals, truncations, infos

    @property
    def card_pool(self):
        return (self._env or self._vec.driver_env).pool

    def close(self) -> None:
        (self._env or self._vec).close()
