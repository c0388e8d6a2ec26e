"""Batched evaluation of a policy in the duplicate format (SPEC §7, evaluate_checkpoint).

A *deal* is (seed, deck X, deck Y): the shuffles, the opening hands and who goes first. Each
deal is played twice: once as dealt and once with the seats exchanged
(`env.set_deal(game, seed, deck0, deck1, swapped)`), and the learner keeps its seat, so it plays
both hands of every deal - once going first, once second - and deal luck cancels. The learner's
seat alternates from deal to deal, so both seats are covered evenly. Deals (seeds and decks
drawn from the starter decks) are pre-generated from the evaluation seed, so two policies
evaluated with the same seed play the very same games. Every scheduled game is counted, so
short games are not over-represented (the bias of "stop after N finished games").

    report = play_duplicate(policy, sampler, "greedy", episodes=1000, seed=0)
    report.winrate, report.wilson, report.summary()

The opponent is "random", "greedy" or any object with `act(env, obs, rows) -> int32 actions`
and `reset_rows(rows)`, optionally `bind(num_rows)` (`PolicyOpponent` wraps a policy, e.g. another
checkpoint)."""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from .bots import greedy_actions, random_actions
from .env import TCGEnv
from .engine import LAYOUT
from .recurrent import zero_rows

LEGAL = slice(LAYOUT["legal_offset"], LAYOUT["legal_count_offset"])
COUNT = LAYOUT["legal_count_offset"]
PASS = LAYOUT["action_types"]["pass"]
DRAW = 2


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


class BotOpponent:
    """A scripted bot ("random" or "greedy") as an opponent."""

    def __init__(self, name: str, seed: int = 0):
        if name not in ("random", "greedy"):
            raise ValueError(f"unknown bot {name!r}; valid: 'random', 'greedy'")
        self.name, self.rng = name, np.random.default_rng(seed)

    def act(self, env: TCGEnv, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.name == "greedy":
            return greedy_actions(env, rows)
        return random_actions(obs[rows], self.rng)

    def reset_rows(self, rows: np.ndarray) -> None:
        pass


class PolicyOpponent:
    """A policy (e.g. another checkpoint) as an opponent, with its own LSTM state per row
    (allocated by `bind(num_rows)`, which play_duplicate calls)."""

    def __init__(self, policy, sampler, seed: int = 0, argmax: bool = False, name: str = "policy"):
        self.policy, self.sampler, self.seed, self.argmax, self.name = policy, sampler, seed, argmax, name
        self.actor = None

    def bind(self, num_rows: int) -> None:
        self.actor = PolicyActor(self.policy, self.sampler, num_rows, self.policy.hidden_size, self.argmax,
                                 torch.Generator().manual_seed(self.seed))

    def act(self, env: TCGEnv, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.actor.act(obs, rows)[0]

    def reset_rows(self, rows: np.ndarray) -> None:
        self.actor.reset_rows(rows)


@dataclass(frozen=True)
class Deal:
    seed: int
    deck_x: int
    deck_y: int


def make_deals(n: int, seed: int, n_decks: int) -> list[Deal]:
    """`n` deals from `seed`: a 62-bit game seed and two starter decks drawn uniformly each."""
    rng = np.random.default_rng([seed, 0x5EA1])
    seeds = rng.integers(0, 2**62, size=n, dtype=np.int64)
    decks = rng.integers(0, n_decks, size=(n, 2))
    return [Deal(int(s), int(x), int(y)) for s, (x, y) in zip(seeds, decks)]


@dataclass
class GameRecord:
    """One finished evaluation game from the learner's side."""
    deal: int
    swapped: bool
    seat: int
    deck: str
    opp_deck: str
    went_first: bool
    result: int           # +1 win, 0 draw, -1 loss
    decisions: int
    turns: int
    truncated: bool


def _wld(records: list[GameRecord]) -> dict:
    wins = sum(r.result > 0 for r in records)
    losses = sum(r.result < 0 for r in records)
    draws = len(records) - wins - losses
    n = len(records)
    rate = (wins + 0.5 * draws) / max(1, n)
    low, high = wilson_interval(wins + 0.5 * draws, n)
    return {"games": n, "wins": wins, "losses": losses, "draws": draws, "winrate": rate,
            "wilson_low": low, "wilson_high": high}


@dataclass
class MatchReport:
    opponent: str
    records: list[GameRecord] = field(default_factory=list)
    learner_decisions: int = 0
    entropy_sum: float = 0.0
    noops: int = 0

    @property
    def wins(self) -> int:
        return sum(r.result > 0 for r in self.records)

    @property
    def losses(self) -> int:
        return sum(r.result < 0 for r in self.records)

    @property
    def draws(self) -> int:
        return sum(r.result == 0 for r in self.records)

    @property
    def games(self) -> int:
        return len(self.records)

    @property
    def winrate(self) -> float:
        """Draws count as half a win."""
        return (self.wins + 0.5 * self.draws) / max(1, self.games)

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson_interval(self.wins + 0.5 * self.draws, self.games)

    @property
    def mean_length(self) -> float:
        """Mean decisions per game (both seats)."""
        return float(np.mean([r.decisions for r in self.records])) if self.records else 0.0

    @property
    def entropy(self) -> float:
        return self.entropy_sum / max(1, self.learner_decisions)

    @property
    def noop_rate(self) -> float:
        return self.noops / max(1, self.learner_decisions)

    def breakdown(self, key) -> dict:
        groups: dict = defaultdict(list)
        for r in self.records:
            groups[key(r)].append(r)
        return {k: _wld(v) for k, v in sorted(groups.items())}

    def summary(self) -> dict:
        low, high = self.wilson
        return {
            "opponent": self.opponent, "episodes": self.games, "wins": self.wins, "losses": self.losses,
            "draws": self.draws, "winrate": self.winrate, "wilson_low": low, "wilson_high": high,
            "mean_length": self.mean_length,
            "mean_turns": float(np.mean([r.turns for r in self.records])) if self.records else 0.0,
            "truncation_rate": float(np.mean([r.truncated for r in self.records])) if self.records else 0.0,
            "entropy": self.entropy, "noop_rate": self.noop_rate, "learner_decisions": self.learner_decisions,
            "per_deck": self.breakdown(lambda r: r.deck),
            "per_seat": {f"seat{k}": v for k, v in self.breakdown(lambda r: r.seat).items()},
            "per_turn_order": self.breakdown(lambda r: "first" if r.went_first else "second"),
        }


@torch.no_grad()
def play_duplicate(policy, sampler, opponent, episodes: int, seed: int, parallel: int = 256,
                   argmax: bool = False, hidden_size: int | None = None) -> MatchReport:
    """Plays `episodes` games (rounded up to whole deals of two) of `policy` against `opponent`
    ("random", "greedy", or an object with act/reset_rows) in the duplicate format."""
    if isinstance(opponent, str):
        opponent = BotOpponent(opponent, seed + 1)
    n_deals = max(1, math.ceil(episodes / 2))
    env = TCGEnv(num_games=max(1, min(parallel, 2 * n_deals)), seed=seed)
    deals = make_deals(n_deals, seed, len(env.pool.deck_names))
    names = env.pool.deck_names
    # schedule: (deal, swapped, learner seat); the learner keeps its seat within a deal
    schedule = [(k, swapped, k % 2) for k in range(n_deals) for swapped in (False, True)]
    obs, _ = env.reset(seed)
    if hasattr(opponent, "bind"):
        opponent.bind(env.num_agents)
    actor = PolicyActor(policy, sampler, env.num_agents, hidden_size or policy.hidden_size, argmax,
                        torch.Generator().manual_seed(seed))
    filler = np.random.default_rng(seed + 2)     # idle slots (schedule exhausted) play random moves
    slot_game = np.full(env.num_games, -1, dtype=np.int64)
    learner_seat = np.zeros(env.num_games, dtype=np.int64)
    report = MatchReport(getattr(opponent, "name", "opponent"))
    next_index = 0

    def assign(slot: int) -> None:
        nonlocal next_index
        rows = np.array([2 * slot, 2 * slot + 1])
        actor.reset_rows(rows)
        opponent.reset_rows(rows)
        if next_index >= len(schedule):
            slot_game[slot] = -1
            return
        k, swapped, seat = schedule[next_index]
        d = deals[k]
        if swapped:
            env.set_deal(slot, d.seed, d.deck_y, d.deck_x, True)
        else:
            env.set_deal(slot, d.seed, d.deck_x, d.deck_y, False)
        slot_game[slot], learner_seat[slot] = next_index, seat
        next_index += 1

    for slot in range(env.num_games):
        assign(slot)
    actions = np.zeros((env.num_agents, LAYOUT["action_width"]), dtype=np.int32)
    while (slot_game >= 0).any():
        active = np.flatnonzero(env.masks)
        game = active // 2
        busy = slot_game[game] >= 0
        mine_mask = busy & (active % 2 == learner_seat[game])
        mine, theirs, idle = active[mine_mask], active[busy & ~mine_mask], active[~busy]
        if len(mine):
            acts, entropy = actor.act(obs, mine)
            actions[mine] = acts
            report.learner_decisions += len(mine)
            report.entropy_sum += float(entropy.sum())
            report.noops += int((acts[:, 0] == PASS).sum())
        if len(theirs):
            actions[theirs] = opponent.act(env, obs, theirs)
        if len(idle):
            actions[idle] = random_actions(obs[idle], filler)
        obs, _, terminals, truncations, infos = env.step(actions)
        done = np.flatnonzero(terminals[0::2] | truncations[0::2])
        if len(infos) != len(done):
            raise RuntimeError(f"evaluation lost episode records ({len(infos)} for {len(done)} finished games)")
        for slot, info in zip(done, infos):
            if slot_game[slot] >= 0:
                k, swapped, seat = schedule[slot_game[slot]]
                winner = info["winner"]
                report.records.append(GameRecord(
                    deal=k, swapped=swapped, seat=seat, deck=names[info[f"deck{seat}"]],
                    opp_deck=names[info[f"deck{1 - seat}"]], went_first=info["first_player"] == seat,
                    result=0 if winner == DRAW else (1 if winner == seat else -1),
                    decisions=int(info["decisions"]), turns=int(info["turns"]), truncated=bool(info["truncated"])))
            assign(int(slot))
    return report


def evaluate_vs_bot(policy, sampler, bot: str, games: int, seed: int, hidden_size: int,
                    parallel: int = 128, argmax: bool = False) -> EvalResult:
    """Plays `games` games (rounded up to whole deals) against `random` or `greedy` in the
    duplicate format (play_duplicate)."""
    if bot not in ("random", "greedy"):
        raise ValueError(f"unknown bot {bot!r}; valid: 'random', 'greedy'")
    report = play_duplicate(policy, sampler, bot, games, seed, parallel=parallel, argmax=argmax,
                            hidden_size=hidden_size)
    return EvalResult(report.wins, report.losses, report.draws, report.mean_length)
