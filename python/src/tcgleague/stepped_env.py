"""A small game stepped in numpy, many games at once, behind the PufferLib face every game of
the trainer has (the contract of rows.py, as Emberfront's `TCGEnv` keeps it): `num_agents` rows,
two per game; PufferLib's shared buffers (`observations` uint8 rows ending with the legal mask,
`rewards`, `terminals`, `truncations`, `masks`: the acting row of each game); `step(actions)`
takes one action per row ([rows, action_width] or [rows], read on the acting rows only) and
returns the finished games' records as infos (`game`, `winner`, `returns`, `decisions`).

What it wraps is a game's own vectorized env, the interface of games/poker/env.py: `reset(seed)`,
`step(actions [rows]) -> (obs, rewards, terminals, truncations, episodes)` with `episodes.games`,
`.winners`, `.returns`, `set_deal(games, deal)`, `acting_rows()`, writing the `obs` buffer it is
given. A game subclasses `SteppedPufferEnv` with its spaces, that env and its `engine` (the
env's state as bytes, `get_state` / `set_state`, for an exact resume)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import gymnasium
import numpy as np
import pufferlib

from .rng import stream_seed
from .rows import rows_of

NO_NOOP = -1  # a game with no action that does nothing: the rollout's noop rate counts none


class IllegalActionError(ValueError):
    """An acting row was given an action that is not an integer index, or not a legal one."""


def legal_checked(obs: np.ndarray, action: np.ndarray, acting: np.ndarray, num_actions: int) -> np.ndarray:
    """The acting rows' actions as int16, refused unless every one is legal in its row (the row's
    last `num_actions` entries are its legal mask), naming the first row that is not."""
    legal_offset = obs.shape[1] - num_actions
    inside = (action >= 0) & (action < num_actions)
    legal = inside & (obs[acting, legal_offset + np.where(inside, action, 0)] == 1)
    if not legal.all():
        row = int(acting[np.argmin(legal)])
        mask = obs[row, legal_offset:].tolist()
        raise IllegalActionError(f"row {row}: action {action[np.argmin(legal)]} is not legal (mask {mask})")
    return action.astype(np.int16)


def checked_actions(actions, acting: np.ndarray, action_width: int, num_actions: int) -> np.ndarray:
    """`actions` as int64 [rows] for the acting-row mask `acting`: one integral action per row,
    shaped [rows, action_width] or [rows] (anything else - another width, a flat array of another
    length, a non-numeric dtype - is a TypeError naming the shape wanted), a NaN or a fraction on
    an acting row an IllegalActionError naming the row (a bare cast would make 1.5 a 1); the legal
    mask is the game env's to check. Nothing is stepped before both pass."""
    a = np.asarray(actions)
    rows = len(acting)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"actions must be an integer or float array, got dtype {a.dtype}")
    if a.shape not in ((rows, action_width), (rows,)):
        raise TypeError(f"actions must have shape ({rows}, {action_width}) (one action per row), got {a.shape}")
    a = np.where(acting, a.reshape(rows), 0)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.floor(a) == a))
    if len(bad):
        raise IllegalActionError(
            f"row {int(bad[0])}: action {float(a[bad[0]])!r} is not an integer index (0 .. {num_actions - 1})"
        )
    return a.astype(np.int64)


class RandomLegalBot:
    """Actor: a uniformly random legal action of a row ending with its `num_actions`-wide legal
    mask, from its own seeded stream (every small game's `random` bot)."""

    name = "random"

    def __init__(self, num_actions: int, seed: int = 0):
        self.num_actions = num_actions
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        legal = obs[rows, -self.num_actions :] > 0
        pick = (self.rng.random(len(rows)) * legal.sum(1)).astype(np.int64)
        return (np.cumsum(legal, 1) <= pick[:, None]).sum(1).astype(np.int32)[:, None]

    def reset_rows(self, rows: np.ndarray) -> None:
        """Stateless."""

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]


def state_bytes(arrays: dict[str, np.ndarray], rng_state: dict) -> bytes:
    """A game env's state as the bytes a checkpoint stores of its engine: its arrays in an npz,
    its stream's state as JSON (no pickle)."""
    out = io.BytesIO()
    np.savez(out, rng=np.frombuffer(json.dumps(rng_state).encode(), np.uint8), **arrays)
    return out.getvalue()


def state_from_bytes(blob: bytes) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and the stream's state `state_bytes` wrote (OSError, KeyError or ValueError on
    damaged bytes: the caller names its game)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(arrays.pop("rng").tobytes())


class ScriptedBots:
    """A small game's bots by name (`makers`: name -> seed -> Actor): one made (`make`), one as a
    match side (`side`, an unknown name refused when the side is made, not when the match starts),
    and all of them as training meets them (`training`: made from the league's bot stream, which
    only a bot that draws - `random` - reads)."""

    def __init__(self, game: str, makers: dict[str, Callable[[int], object]]):
        self.game, self.makers = game, makers
        self.names = tuple(makers)

    def make(self, name: str, seed: int = 0):
        if name not in self.makers:
            raise ValueError(f"unknown {self.game} bot {name!r}; valid: {', '.join(self.names)}")
        return self.makers[name](seed)

    def side(self, name: str, seed: int = 0) -> Callable:
        """A bot as a match side (env -> Actor)."""
        self.make(name, seed)
        return lambda env: self.make(name, seed)

    def training(self, env, seed: int) -> dict:
        """The bots training meets (`env` unused: they search nothing)."""
        return {name: self.make(name, stream_seed(seed, "league_random_bot")) for name in self.names}


class SteppedPufferEnv(pufferlib.PufferEnv):
    """Many games of one small game, stepped in numpy into PufferLib's buffers. A subclass sets
    `stepper` (the game's env, writing `observations.view(np.int8)`) and `engine` after calling
    this `__init__`."""

    noop_action_type = NO_NOOP

    def __init__(self, num_games: int, seed: int, obs_width: int, num_actions: int, action_width: int, buf=None):
        self.num_games, self.seed = num_games, seed
        self.num_actions, self.action_width = num_actions, action_width
        self.num_agents = rows_of(num_games)
        self.single_observation_space = gymnasium.spaces.Box(0, 1, (obs_width,), np.uint8)
        self.single_action_space = gymnasium.spaces.MultiDiscrete([num_actions] * action_width)
        super().__init__(buf)
        self.decisions = np.zeros(num_games, dtype=np.int16)  # decisions so far in each game
        self.stepper = None

    def reset(self, seed: int | None = None):
        self.stepper.reset(self.seed if seed is None else int(seed))
        self.decisions[:] = 0
        self._write_masks()
        return self.observations, []

    def step(self, actions):
        actions = checked_actions(actions, self.masks, self.action_width, self.num_actions)
        _, rewards, terminals, truncations, episodes = self.stepper.step(actions)
        self.rewards[:], self.terminals[:], self.truncations[:] = rewards, terminals, truncations
        self.decisions += 1
        infos = [
            {"game": int(g), "winner": int(w), "returns": r.tolist(), "decisions": int(self.decisions[g])}
            for g, w, r in zip(episodes.games, episodes.winners, episodes.returns)
        ]
        self.decisions[episodes.games] = 0
        self._write_masks()
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def set_deal(self, games: np.ndarray, deal: np.ndarray) -> None:
        """Restarts `games` with the given deal (the game env's `set_deal`): a match's duplicate deals."""
        self.stepper.set_deal(games, deal)
        self.decisions[games] = 0
        self._write_masks()

    def _write_masks(self) -> None:
        self.masks[:] = False
        self.masks[self.stepper.acting_rows()] = True

    def close(self):
        pass


def scored_outcome(seat: int, info: dict) -> dict:
    """`match.Table.outcome` of a small game scored by its return (poker's chips, Liar's Dice's
    +1 / -1): no decks, turns or truncation; the result is the sign of `seat`'s return."""
    reward = float(info["returns"][seat])
    return dict(
        deck="",
        opp_deck="",
        went_first=seat == 0,
        result=int(np.sign(reward)),
        decisions=info["decisions"],
        turns=0,
        truncated=False,
        reward=reward,
    )
