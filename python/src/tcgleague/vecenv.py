"""One stepping interface over the three ways to run a game's env: natively in-process (one C call
for every game), or through pufferlib.vector's Serial / Multiprocessing backends; and the
trainer's parts of the games that take turns (`GameParts`: the env steps one part while the
learner decides for another)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import psutil
import pufferlib.vector
import torch

from .config import ConfigError
from .rows import RowFormat, game_of, rows_of


def check_env_memory(env_class: type, num_games: int, env_kwargs: dict, available: int | None = None) -> None:
    """Refuses `[env] num_games` whose buffers would not fit in the memory available here, before
    anything is allocated (a typo of a billion games otherwise dies deep in an allocation)."""
    available = psutil.virtual_memory().available if available is None else available
    per_game = env_class.bytes_per_game(env_kwargs)
    if num_games * per_game > available:
        raise ConfigError(
            f"[env] num_games = {num_games:,}: the env's buffers need about "
            f"{num_games * per_game / 2**30:,.1f} GiB, and this machine has {available / 2**30:,.1f} GiB "
            f"available; valid: at most {available // per_game:,} games here (e.g. 1024)"
        )


class VecEnv:
    """reset(seed) -> obs; step(actions) -> (obs, rewards, terminals, truncations, infos).
    `masks` marks the deciding row of every game; arrays are PufferLib's shared buffers."""

    def __init__(self, env_class: type, backend: str, num_envs: int, num_workers: int, env_kwargs: dict):
        """`env_class`: the game's PufferEnv (Emberfront's `TCGEnv`), made with `env_kwargs`."""
        self.env_class, self.backend = env_class, backend
        check_env_memory(env_class, num_envs * env_kwargs["num_games"], env_kwargs)
        self.noop_action_type: int = env_class.noop_action_type  # the first action integer the noop rate counts
        if backend == "native":
            if num_envs != 1:
                raise ValueError(
                    f"[vec] num_envs must be 1 for the native backend (got {num_envs}); "
                    "use backend = serial or multiprocessing for several env objects"
                )
            self._env = env_class(**env_kwargs)
            self._vec = None
        else:
            kinds = {"serial": pufferlib.vector.Serial, "multiprocessing": pufferlib.vector.Multiprocessing}
            extra = {"num_workers": num_workers} if backend == "multiprocessing" else {}
            env_kwargs = dict(env_kwargs)
            seed = env_kwargs.pop("seed", 0)  # pufferlib passes each env its own seed (seed + i)
            self._vec = pufferlib.vector.make(
                env_class, backend=kinds[backend], num_envs=num_envs, env_kwargs=env_kwargs, seed=seed, **extra
            )
            self._env = None
        owner = self._env or self._vec
        self.num_rows = owner.num_agents  # PufferLib calls the row count num_agents
        self.rows = RowFormat.of(owner)  # what the learning stack sizes itself from
        self.num_games = game_of(self.num_rows)  # all env objects' games together
        self.masks = np.zeros(self.num_rows, dtype=bool)

    def summarize_episodes(self, infos: list[dict]) -> dict:
        """environment/* metrics of the finished games' records, as the game defines them."""
        return self.env_class.summarize_episodes(infos)

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

    # ---- exact resume: the engine state of every game plus the step buffers -----------------
    BUFFER_NAMES = ("observations", "masks", "rewards", "terminals", "truncations")

    def _engines(self):
        if self._env is not None:
            return [self._env.engine]
        if self.backend == "serial":
            return [env.engine for env in self._vec.envs]
        return None  # multiprocessing: the engines live in worker processes

    def state_dict(self) -> dict | None:
        """Every game's engine state and copies of the step buffers (as tensors, so a checkpoint
        holds no pickled numpy), or None where the engines are out of reach (multiprocessing)."""
        engines = self._engines()
        if engines is None:
            return None
        owner = self._env if self._env is not None else self._vec
        return {
            "backend": self.backend,
            "engines": [e.get_state() for e in engines],
            "buffers": {k: torch.from_numpy(np.array(getattr(owner, k), copy=True)) for k in self.BUFFER_NAMES},
        }

    def load_state_dict(self, state: dict, seed: int) -> np.ndarray:
        """Restores `state_dict()`'s output (resetting first so the backend is ready to step);
        returns the observation buffer. Raises ValueError when it does not fit this env."""
        engines = self._engines()
        if engines is None:
            raise ValueError("the multiprocessing backend cannot restore engine state")
        if len(state["engines"]) != len(engines):
            raise ValueError(f"engine state holds {len(state['engines'])} env objects, this run has {len(engines)}")
        obs = self.reset(seed)
        for engine, blob in zip(engines, state["engines"]):
            engine.set_state(blob)
        owner = self._env if self._env is not None else self._vec
        for k in self.BUFFER_NAMES:
            dst, src = getattr(owner, k), np.asarray(state["buffers"][k])
            if dst.shape != src.shape:
                raise ValueError(f"env buffer {k} has shape {src.shape} in the checkpoint, {dst.shape} here")
            np.copyto(dst, src.astype(dst.dtype, copy=False))
        self.masks = owner.masks
        return obs

    @property
    def engine_env(self):
        """The in-process env (native backend), where a bot that searches inside Emberfront's C
        engine (greedy) can play; None for the pufferlib.vector backends."""
        return self._env

    def close(self) -> None:
        (self._env or self._vec).close()


class GameParts:
    """The games in `count` contiguous parts that take turns (EnvPool's and PufferLib's async
    pattern; Metta's async_factor = 2): `step(k, actions)` starts part k's step on a thread of its
    own and returns at once, so the learner decides for another part while the engine works.
    The engine only reads and writes the stepping part's games and rows (c_step_games), and one
    step is in flight at a time, finished before the next starts (the episode log is shared), so
    the parts never race. With one part, `step` steps every game inline: the plain loop.

    A finished step is (obs, rewards, terminals, truncations, infos), the arrays full-size with
    zeros outside its part, so the caller's row bookkeeping needs no offsets."""

    def __init__(self, env: VecEnv, count: int):
        if count > 1 and env.engine_env is None:
            raise ValueError(f"{count} parts stepping in turn need the native backend (one engine), not {env.backend}")
        if not 1 <= count <= env.num_games:
            raise ValueError(f"{count} parts of {env.num_games} games: need 1 <= parts <= games")
        bounds = [env.num_games * k // count for k in range(count + 1)]
        self.env, self.count = env, count
        self.games = [range(a, b) for a, b in zip(bounds, bounds[1:])]
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="env-step") if count > 1 else None
        self.pending: tuple[int, np.ndarray, Future] | None = None

    def deciding_rows(self, part: int) -> np.ndarray:
        """The deciding row of each of the part's games (env row ids, game order)."""
        lo, hi = rows_of(self.games[part].start), rows_of(self.games[part].stop)
        return lo + np.flatnonzero(self.env.masks[lo:hi])

    def step(self, part: int, actions: np.ndarray) -> tuple | None:
        """Steps part `part` with `actions`; returns the step that has finished by now: with one
        part this one, with several the one in flight before it (None at the first)."""
        if self.thread is None:
            return self.env.step(actions)
        finished = self.finish()
        env, games = self.env.engine_env, self.games[part]
        checked = env.checked_game_actions(actions, games)  # a copy: the caller may write `actions` meanwhile
        self.pending = (part, checked, self.thread.submit(env.engine.step, checked, games.start, games.stop))
        return finished

    def finish(self) -> tuple | None:
        """Waits for the step in flight and returns it (None if there is none)."""
        if self.pending is None:
            return None
        (part, checked, future), self.pending = self.pending, None
        env = self.env.engine_env
        env.raise_if_refused(future.result(), checked)
        rows = slice(rows_of(self.games[part].start), rows_of(self.games[part].stop))
        out = []
        for full in (env.rewards, env.terminals, env.truncations):
            part_only = np.zeros_like(full)
            part_only[rows] = full[rows]
            out.append(part_only)
        return (env.observations, *out, env.episode_infos())
