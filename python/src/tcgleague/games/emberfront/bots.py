"""Scripted opponents, batched over rows: `random` (uniform over the legal list) and `greedy`
(the engine's one-ply search with a material heuristic, run in C). Both as plain functions and
as Actors (actors.Actor) for the game runner, the league and the trainer.

A third, `lookahead_greedy` (the greedy heuristic judging each legal action a turn ahead, as a
policy's lookahead plays it on: engine/lookahead.c), is never trained against: the league and
the periodic evaluation use `BOTS` only, so it stays a held-out opponent
(`evaluate_checkpoint --panel`)."""

from __future__ import annotations

import numpy as np

from ...rng import stream_seed
from .layout import ACTION_WIDTH, legal_counts, legal_tuples

RANDOM, GREEDY, LOOKAHEAD_GREEDY = "random", "greedy", "lookahead_greedy"
BOTS = (RANDOM, GREEDY)  # the scripted opponents training meets (league, periodic evaluation), by name
SCRIPTED = (*BOTS, LOOKAHEAD_GREEDY)  # every scripted player, the held-out lookahead greedy included


def random_actions(obs: np.ndarray, rng: np.random.Generator, rows: np.ndarray | None = None) -> np.ndarray:
    """A uniformly random legal action for each row (rows with no legal list get zeros); with
    `rows`, an int32 [len(rows), 4] array for just those rows.

    Only each row's count and chosen tuple are read, a few bytes per row, never the list."""
    rows = np.arange(len(obs)) if rows is None else np.asarray(rows, dtype=np.int64)
    counts = legal_counts(obs, rows)
    pick = np.minimum((rng.random(len(rows)) * counts).astype(np.int64), np.maximum(counts - 1, 0))
    actions = legal_tuples(obs, rows, pick)
    actions[counts == 0] = 0
    return actions


def greedy_actions(env, rows: np.ndarray | None = None, ahead: bool = False) -> np.ndarray:
    """The greedy bot's actions in `env` (a TCGEnv): for `rows` (env row ids) an int32
    [len(rows), 4] array, only those games searched; without `rows`, int32 [num_agents, 4]
    with every active row filled. With `ahead`, the lookahead greedy bot's."""
    out = np.zeros((env.num_agents, ACTION_WIDTH), dtype=np.int32)
    if rows is None:
        env.engine.greedy(out, None, ahead)
        return out
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    env.engine.greedy(out, rows, ahead)
    return out[rows]


class RandomBot:
    """Actor: a uniformly random legal action, from its own seeded stream."""

    name = RANDOM

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return random_actions(obs, self.rng, rows)

    def reset_rows(self, rows: np.ndarray) -> None:
        """Stateless."""

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]


class GreedyBot:
    """Actor: the engine's one-ply search (with `ahead`, the lookahead greedy's search a turn
    ahead). It searches inside the C engine, so it is bound to the in-process TCGEnv whose
    games it plays (`env`). Stateless: its searches draw from no stream."""

    def __init__(self, env, ahead: bool = False):
        if env is None or not hasattr(env, "engine"):
            raise ValueError("the greedy bot needs an in-process TCGEnv (the native backend)")
        self.env, self.ahead = env, ahead
        self.name = LOOKAHEAD_GREEDY if ahead else GREEDY

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return greedy_actions(self.env, rows, self.ahead)

    def reset_rows(self, rows: np.ndarray) -> None:
        """Stateless."""


def training_bots(env, seed: int) -> dict:
    """The bots training meets (the league's), by name: random on its own stream, and greedy
    where its engine is in process (`env`: the native backend's TCGEnv, else None)."""
    bots = {RANDOM: RandomBot(stream_seed(seed, "league_random_bot"))}
    if env is not None:
        bots[GREEDY] = GreedyBot(env)
    return bots


def make_bot(name: str, env, seed: int = 0) -> RandomBot | GreedyBot:
    """The bot called `name` playing in `env`."""
    if name == RANDOM:
        return RandomBot(seed)
    if name in (GREEDY, LOOKAHEAD_GREEDY):
        return GreedyBot(env, ahead=name == LOOKAHEAD_GREEDY)
    raise ValueError(f"unknown bot {name!r}; valid: {', '.join(SCRIPTED)}")
