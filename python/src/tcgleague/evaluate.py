"""Batched evaluation of a policy against a scripted bot.

Every game slot plays a fixed quota of games with the learner in alternating seats, so short
games are not over-represented (the usual bias of "stop after N finished games")."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .bots import greedy_actions, random_actions
from .env import TCGEnv
from .engine import LAYOUT
from .recurrent import zero_rows

LEGAL = slice(LAYOUT["legal_offset"], LAYOUT["legal_count_offset"])
COUNT = LAYOUT["legal_count_offset"]


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a win rate (draws count as half a win in `wins`)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    wins: int
    losses: int
    draws: int
    mean_length: float

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def winrate(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(1, self.games)


class PolicyActor:
    """Runs a recurrent policy on a subset of rows, keeping its LSTM state per row."""

    def __init__(self, policy, sampler, num_rows: int, hidden_size: int, argmax: bool = False,
                 generator: torch.Generator | None = None):
        self.policy, self.sampler, self.argmax, self.generator = policy, sampler, argmax, generator
        self.h = torch.zeros(num_rows, hidden_size)
        self.c = torch.zeros(num_rows, hidden_size)

    @torch.no_grad()
    def act(self, obs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, torch.Tensor]:
        """Actions (int32 [len(rows), 4]) and the sampled-distribution entropy per row."""
        idx = torch.from_numpy(rows)
        o = torch.from_numpy(obs[rows])
        x, ent = self.policy.encode(o)
        out, (h, c) = self.policy.step(x, (self.h[idx], self.c[idx]))
        self.h[idx], self.c[idx] = h, c
        legal = o[:, LEGAL].reshape(len(rows), -1, 4).long()
        actions, _, entropy = self.sampler.sample(self.policy, out, ent, legal, o[:, COUNT].long(),
                                                  generator=self.generator, argmax=self.argmax)
        return actions.numpy().astype(np.int32), entropy

    def reset_rows(self, rows: np.ndarray) -> None:
        zero_rows((self.h, self.c), rows)


def evaluate_vs_bot(policy, sampler, bot: str, games: int, seed: int, hidden_size: int,
                    parallel: int = 128, argmax: bool = False) -> EvalResult:
    """Plays `games` games (rounded up to a multiple of `parallel`) against `random` or `greedy`."""
    if bot not in ("random", "greedy"):
        raise ValueError(f"unknown bot {bot!r}; valid: 'random', 'greedy'")
    parallel = max(2, min(parallel, games))
    quota = math.ceil(games / parallel)
    env = TCGEnv(num_games=parallel, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    learner_seat = np.arange(parallel) % 2
    is_learner = np.zeros(env.num_agents, dtype=bool)
    is_learner[2 * np.arange(parallel) + learner_seat] = True
    actor = PolicyActor(policy, sampler, env.num_agents, hidden_size, argmax, generator)
    played = np.zeros(parallel, dtype=np.int64)
    wins = losses = draws = 0
    lengths = []
    actions = np.zeros((env.num_agents, 4), dtype=np.int32)
    while (played < quota).any():
        active = np.flatnonzero(env.masks)
        mine, theirs = active[is_learner[active]], active[~is_learner[active]]
        if len(mine):
            actions[mine] = actor.act(obs, mine)[0]
        if len(theirs):
            bot_actions = greedy_actions(env) if bot == "greedy" else random_actions(obs[theirs], rng)
            actions[theirs] = bot_actions[theirs] if bot == "greedy" else bot_actions
        obs, rewards, terminals, truncations, infos = env.step(actions)
        done_games = np.flatnonzero(terminals[0::2] | truncations[0::2])
        for g in done_games:
            if played[g] < quota:
                r = rewards[2 * g + learner_seat[g]]
                wins += r > 0.5
                losses += r < -0.5
                draws += abs(r) <= 0.5
            played[g] += 1
        lengths.extend(e["decisions"] for e in infos)
        actor.reset_rows(np.concatenate([2 * done_games, 2 * done_games + 1]))
    return EvalResult(int(wins), int(losses), int(draws), float(np.mean(lengths)) if lengths else 0.0)
