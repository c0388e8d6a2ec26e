"""Recording a small table game for the replay viewer (replay/viewer.html): a
`match.MatchRecorder` that keeps every decision of both seats of the first `games` scheduled
games of a match, in the format Emberfront's recorder writes (replay/record.py), so the one
viewer shows every game. What the game says in words comes from its `TableWords`.

A step's board is the deciding seat's view in words, its legal actions in words, the action
played, and for a policy its probability of each legal action and its value; a game's "decks"
are the two seats' private holdings, shown beside the players' names once it is over. These
games are a few decisions long, so each decision is written up as it is taken (no batching)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..actors import Actor, PolicyActor
from ..match import GameRecord
from ..rows import game_of, seat_of
from ..table_words import TableWords
from .record import DIGITS, Strings


@dataclass
class GameTape:
    game: int
    deal: np.ndarray  # the deal as scheduled
    swapped: bool
    strings: Strings = field(default_factory=Strings)
    steps: list[dict] = field(default_factory=list)
    record: GameRecord | None = None


def policy_view(actor: Actor, obs: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A policy's probabilities [n, actions] and values [n] at its last decision's rows `at`
    (indices into that decision's batch), from the state it decided from; None for a bot."""
    if not isinstance(actor, PolicyActor) or actor.last_decision is None:
        return None
    d, policy = actor.last_decision, actor.policy
    with torch.no_grad():
        rows = torch.as_tensor(obs, device=actor.device)
        index = torch.as_tensor(at, device=actor.device)
        out, _ = policy.step(policy.encode(rows)[0], (d.state_h[index], d.state_c[index]))
        logp, _ = actor.sampler.log_probs(policy, out, rows, actor.default_params)
    return logp.exp().cpu().numpy(), d.value[index].cpu().numpy()


class TableReplayRecorder:
    """`match.MatchRecorder` for a match of a table game (match.play_duplicate)."""

    def __init__(self, words: TableWords, games: int, names: tuple[str, str]):
        self.words, self.wanted, self.names = words, games, names
        self.tapes: dict[int, GameTape] = {}
        self.slot_tape: dict[int, int] = {}  # env game slot -> the recorded game it plays

    def game_started(self, slot: int, game: int, deal, swapped: bool) -> None:
        self.slot_tape.pop(slot, None)
        if game < self.wanted:
            self.slot_tape[slot] = game
            self.tapes[game] = GameTape(game, np.asarray(deal).copy(), swapped)

    def decided(self, env, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray, actor: Actor) -> None:
        picked = [i for i, slot in enumerate(game_of(rows).tolist()) if slot in self.slot_tape]
        if not picked:
            return
        view = policy_view(actor, obs[rows[picked]], np.array(picked))
        for k, i in enumerate(picked):
            row, tape = obs[rows[i]], self.tapes[self.slot_tape[int(game_of(rows[i]))]]
            legal = self.words.legal(row)
            step = {
                "s": int(seat_of(rows[i])),
                "b": tape.strings.ids(self.words.situation(row).splitlines()),
                "l": tape.strings.ids(self.words.action(row, a) for a in legal),
                "a": legal.index(int(actions[i, 0])),
            }
            if view is not None:
                probs, values = view
                step["p"] = [[j, round(float(probs[k, a]), DIGITS)] for j, a in enumerate(legal)]
                step["v"] = round(float(values[k]), DIGITS)
            tape.steps.append(step)

    def game_ended(self, slot: int, record: GameRecord) -> None:
        if slot in self.slot_tape:
            self.tapes[self.slot_tape.pop(slot)].record = record

    def games(self) -> list[dict]:
        """The finished recorded games, in schedule order."""
        return [self.write_up(t) for _, t in sorted(self.tapes.items()) if t.record is not None]

    def write_up(self, tape: GameTape) -> dict:
        record, mine = tape.record, tape.record.seat
        winner = None if record.result == 0 else (mine if record.result > 0 else 1 - mine)
        learner, opponent = self.names
        return {
            "game": tape.game,
            "deal": [*tape.deal.tolist(), tape.swapped],
            "players": [learner, opponent] if mine == 0 else [opponent, learner],
            "decks": self.words.holdings(tape.deal, tape.swapped),
            "first": 0,
            "winner": winner,
            "turns": len(tape.steps),
            "truncated": False,
            "strings": tape.strings.texts,
            "steps": tape.steps,
        }
