"""The game runner: every match in tcgleague is played by `play_duplicate` (evaluate_checkpoint,
the trainer's periodic evaluation, league candidate matches, the benchmarks), whatever the game;
a game brings its `Table` (its env, its deals, a finished game's record: Emberfront's in
games/emberfront/match.py, poker's in games/poker/match.py) and, for the league, its `Runner`.

A match is `learner` vs `opponent`, two Actors, in the *duplicate* format: each deal is played
twice, once as dealt and once with the seats' hands exchanged, and the learner keeps its seat,
so it plays both hands of every deal and deal luck cancels. The learner's seat alternates from
deal to deal, so both seats are covered evenly. Deals are pre-generated from the match seed, so
two policies evaluated with the same seed play the very same games, and every scheduled game is
counted (no bias towards short games).

A *side* is a function `(env) -> Actor`: the runner makes the env, then each side's Actor for it
(an Actor's per-row state and Emberfront's greedy search are bound to that env)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from .actors import Actor, PolicyActor
from .policy.family import Policy, Sampler
from .rows import finished_games, game_of, rows_of, seat_of
from .scoring import Tally

ActorFactory = Callable[[Any], Actor]  # one side of a match: makes its Actor for the runner's env


def policy_side(
    policy: Policy, sampler: Sampler, seed: int, argmax: bool = False, name: str = "policy"
) -> ActorFactory:
    """A policy (the learner, a checkpoint, a league member) as a match side, sampling from
    its own generator seeded with `seed`."""

    def make(env) -> PolicyActor:
        generator = torch.Generator(device=next(policy.parameters()).device).manual_seed(seed)
        return PolicyActor(policy, sampler, env.num_agents, generator, argmax, name)

    return make


@dataclass
class GameRecord:
    """One finished match game from the learner's side."""

    deal: int
    swapped: bool
    seat: int
    deck: str
    opp_deck: str
    went_first: bool
    result: int  # +1 win, 0 draw, -1 loss
    decisions: int
    turns: int
    truncated: bool
    reward: float  # the learner's return (Emberfront: +1 / 0 / -1; poker: chips)


def _tally(records: list[GameRecord]) -> Tally:
    wins = sum(r.result > 0 for r in records)
    losses = sum(r.result < 0 for r in records)
    return Tally(wins, losses, len(records) - wins - losses, float(sum(r.reward for r in records)))


@dataclass
class MatchReport:
    opponent: str
    records: list[GameRecord] = field(default_factory=list)
    learner_decisions: int = 0
    entropy_sum: float = 0.0
    noops: int = 0

    @property
    def tally(self) -> Tally:
        return _tally(self.records)

    @property
    def wins(self) -> int:
        return self.tally.wins

    @property
    def losses(self) -> int:
        return self.tally.losses

    @property
    def draws(self) -> int:
        return self.tally.draws

    @property
    def games(self) -> int:
        return len(self.records)

    @property
    def winrate(self) -> float:
        """scoring.winrate: draws count as half a win."""
        return self.tally.winrate

    @property
    def wilson(self) -> tuple[float, float]:
        return self.tally.wilson()

    @property
    def mean_length(self) -> float:
        """Mean decisions per game (both seats)."""
        return float(np.mean([r.decisions for r in self.records])) if self.records else 0.0

    @property
    def reward_per_game(self) -> float:
        """The learner's mean return (poker: chips per game)."""
        return float(np.mean([r.reward for r in self.records])) if self.records else 0.0

    def points_row(self) -> dict:
        """The learner's mean return per game and its 95% normal interval's half-width."""
        rewards = np.array([r.reward for r in self.records], dtype=np.float64)
        half = 1.96 * rewards.std(ddof=1) / math.sqrt(len(rewards)) if len(rewards) > 1 else math.inf
        return {"points_per_game": self.reward_per_game, "points_half_width": float(half)}

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
        return {k: _tally(v).as_row() for k, v in sorted(groups.items())}

    def summary(self) -> dict:
        row = self.tally.as_row()  # counted once (each property would count the records again)
        return {
            "opponent": self.opponent,
            "episodes": row.pop("games"),
            **row,
            "mean_length": self.mean_length,
            "mean_turns": float(np.mean([r.turns for r in self.records])) if self.records else 0.0,
            "truncation_rate": float(np.mean([r.truncated for r in self.records])) if self.records else 0.0,
            "entropy": self.entropy,
            "noop_rate": self.noop_rate,
            "learner_decisions": self.learner_decisions,
            "per_deck": self.breakdown(lambda r: r.deck),
            "per_seat": {f"seat{k}": v for k, v in self.breakdown(lambda r: r.seat).items()},
            "per_turn_order": self.breakdown(lambda r: "first" if r.went_first else "second"),
            "per_deck_pair": self.deck_pairs(),
        }

    def deck_pairs(self) -> dict[str, dict[str, dict]]:
        """The learner's deck -> the opponent's deck -> results (the report's deck heatmap)."""
        out: dict[str, dict[str, dict]] = defaultdict(dict)
        for (deck, opp), row in self.breakdown(lambda r: (r.deck, r.opp_deck)).items():
            out[deck][opp] = row
        return dict(out)


class MatchRecorder(Protocol):
    """What the runner tells a recorder (a game's Runner.recorder) about its games, when it
    is given one: a scheduled game starting in an env game slot, every decision of either side
    before the env steps (the board it was taken on is still in `env`), and each game's end.
    Without one the runner pays nothing: each call is behind a None check."""

    def game_started(self, slot: int, game: int, deal: Any, swapped: bool) -> None: ...

    def decided(self, env: Any, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray, actor: Actor) -> None: ...

    def game_ended(self, slot: int, record: GameRecord) -> None: ...


class Table(Protocol):
    """A game's part of a match (the runner's loop is every game's): its env, its deals, how a
    deal starts in an env game slot (as dealt, or with the seats' hands exchanged), what a
    finished game's record says, and who plays the slots left idle at the end."""

    noop_action_type: int

    def make_env(self, num_games: int, seed: int): ...

    def deals(self, env, n: int, seed: int) -> list: ...

    def deal(self, env, slot: int, deal, swapped: bool) -> None: ...

    def outcome(self, env, seat: int, info: dict) -> dict:
        """A finished game's GameRecord fields from seat `seat`'s side (all but deal, swapped, seat)."""

    def filler(self, seed: int) -> Actor: ...


@torch.no_grad()
def play_duplicate(
    table: Table,
    learner: ActorFactory,
    opponent: ActorFactory,
    episodes: int,
    seed: int,
    parallel: int = 256,
    recorder: MatchRecorder | None = None,
) -> MatchReport:
    """Plays `episodes` games (rounded up to whole deals of two) of `learner` vs `opponent` in
    the duplicate format on `table`'s game, `parallel` games at a time; the report is from the
    learner's side. A `recorder` is told about every game and decision (replay.record)."""
    n_deals = max(1, math.ceil(episodes / 2))
    env = table.make_env(max(1, min(parallel, 2 * n_deals)), seed)  # a deal is two games
    deals = table.deals(env, n_deals, seed)
    # schedule: (deal, swapped, learner seat); the learner keeps its seat within a deal
    schedule = [(k, swapped, k % 2) for k in range(n_deals) for swapped in (False, True)]
    obs, _ = env.reset(seed)
    mine_actor, their_actor, filler = learner(env), opponent(env), table.filler(seed)  # idle slots: the filler
    slot_game = np.full(env.num_games, -1, dtype=np.int64)
    learner_seat = np.zeros(env.num_games, dtype=np.int64)
    report = MatchReport(getattr(their_actor, "name", "opponent"))
    next_index = 0

    def assign(slot: int) -> None:
        """The next scheduled game goes to `slot` (or the slot idles)."""
        nonlocal next_index
        rows = rows_of(np.array([slot]))
        mine_actor.reset_rows(rows)
        their_actor.reset_rows(rows)
        if next_index >= len(schedule):
            slot_game[slot] = -1
            return
        k, swapped, seat = schedule[next_index]
        table.deal(env, slot, deals[k], swapped)
        if recorder is not None:
            recorder.game_started(slot, next_index, deals[k], swapped)
        slot_game[slot], learner_seat[slot] = next_index, seat
        next_index += 1

    for slot in range(env.num_games):
        assign(slot)
    actions = np.zeros((env.num_agents, len(env.single_action_space.nvec)), dtype=np.int32)
    while (slot_game >= 0).any():
        active = np.flatnonzero(env.masks)
        game = game_of(active)
        busy = slot_game[game] >= 0
        mine_mask = busy & (seat_of(active) == learner_seat[game])
        mine, theirs, idle = active[mine_mask], active[busy & ~mine_mask], active[~busy]
        if len(mine):
            actions[mine] = mine_actor.act(obs, mine)
            report.learner_decisions += len(mine)
            report.noops += int((actions[mine, 0] == table.noop_action_type).sum())
            if recorder is not None:
                recorder.decided(env, obs, mine, actions[mine], mine_actor)
        if len(theirs):
            actions[theirs] = their_actor.act(obs, theirs)
            if recorder is not None:
                recorder.decided(env, obs, theirs, actions[theirs], their_actor)
        if len(idle):
            actions[idle] = filler.act(obs, idle)
        obs, _, terminals, truncations, infos = env.step(actions)
        done = finished_games(terminals, truncations)
        if len(infos) != len(done):
            raise RuntimeError(f"match lost episode records ({len(infos)} for {len(done)} finished games)")
        for slot, info in zip(done, infos):
            if slot_game[slot] >= 0:
                k, swapped, seat = schedule[slot_game[slot]]
                record = GameRecord(k, swapped, seat, **table.outcome(env, seat, info))
                report.records.append(record)
                if recorder is not None:
                    recorder.game_ended(int(slot), record)
            assign(int(slot))
    entropy_sum = getattr(mine_actor, "entropy_sum", None)  # a policy's (searching or not); bots have none
    if entropy_sum is not None:
        report.entropy_sum = float(entropy_sum)
    return report


@dataclass(frozen=True)
class Runner:
    """A game's matches, as the league plays them (game.py picks one per game): its runner, its
    bots as match sides and as the Actors training meets, and the league's baseline bot."""

    play: Callable
    """(learner side, opponent side, episodes, seed, turn_cap=...) -> a report with its `tally`"""
    bot_side: Callable[[str, int], ActorFactory]
    """(bot name, seed) -> the bot as a match side"""
    training_bots: Callable[[object, int], dict]
    """(the in-process env or None, seed) -> {name: Actor}: the bots training meets"""
    bots: tuple[str, ...]
    """the names `training_bots` can give"""
    baseline: str
    """the bot a league candidate must beat"""
    panel: tuple[str, ...]
    """every scripted player a tool can name (`bot_side` takes each): the training bots and
    any held out from training"""
    recorder: Callable[[int, tuple[str, str]], MatchRecorder] | None = None
    """(games to record, the two players' names) -> a recorder `play` takes (`recorder=`), whose
    `games()` are the replay viewer's (replay/record.py); None: its games are not recorded"""
