"""Recording poker hands for the replay viewer (replay/viewer.html): a `match.MatchRecorder`
that keeps every decision of both seats of the first `games` scheduled hands of a match, in the
format Emberfront's recorder writes (replay/record.py), so the one viewer shows both games.

A step's board is the deciding seat's view in words (words.hand_text: its card, the
board card, the bets, the pot), its legal actions in words, the action played, and for a policy
its probability of each legal action and its value; a hand's "decks" are the two private
cards, shown beside the players' names once the hand is over. Poker hands are a few decisions
long, so each decision is written up as it is taken (no batching)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ...actors import Actor, PolicyActor
from ...match import GameRecord
from ...replay.record import DIGITS, Strings
from ...rows import game_of, seat_of
from .rules import PokerRules
from .words import action_word, card_name, hand_text, legal_actions


@dataclass
class HandTape:
    game: int
    deal: np.ndarray  # the deal's cards as dealt (seat 0, seat 1[, board])
    swapped: bool
    strings: Strings = field(default_factory=Strings)
    steps: list[dict] = field(default_factory=list)
    record: GameRecord | None = None


def policy_view(actor: Actor, obs: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A policy's probabilities [n, NUM_ACTIONS] and values [n] at its last decision's rows `at`
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


class PokerReplayRecorder:
    """`match.MatchRecorder` for a poker match (match.play_duplicate on match.PokerTable)."""

    def __init__(self, rules: PokerRules, games: int, names: tuple[str, str]):
        self.rules, self.wanted, self.names = rules, games, names
        self.tapes: dict[int, HandTape] = {}
        self.slot_tape: dict[int, int] = {}  # env game slot -> the recorded hand it plays

    def game_started(self, slot: int, game: int, deal, swapped: bool) -> None:
        self.slot_tape.pop(slot, None)
        if game < self.wanted:
            self.slot_tape[slot] = game
            self.tapes[game] = HandTape(game, np.asarray(deal).copy(), swapped)

    def decided(self, env, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray, actor: Actor) -> None:
        picked = [i for i, slot in enumerate(game_of(rows).tolist()) if slot in self.slot_tape]
        if not picked:
            return
        view = policy_view(actor, obs[rows[picked]], np.array(picked))
        for k, i in enumerate(picked):
            row, tape = obs[rows[i]], self.tapes[self.slot_tape[int(game_of(rows[i]))]]
            legal = legal_actions(self.rules, row)
            step = {
                "s": int(seat_of(rows[i])),
                "b": tape.strings.ids(hand_text(self.rules, row).splitlines()),
                "l": tape.strings.ids(action_word(self.rules, row, a) for a in legal),
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
        """The finished recorded hands, in schedule order."""
        return [self.write_up(t) for _, t in sorted(self.tapes.items()) if t.record is not None]

    def write_up(self, tape: HandTape) -> dict:
        record, cards = tape.record, tape.deal.tolist()
        if tape.swapped:
            cards[0], cards[1] = cards[1], cards[0]
        mine = record.seat
        winner = None if record.result == 0 else (mine if record.result > 0 else 1 - mine)
        learner, opponent = self.names
        return {
            "game": tape.game,
            "deal": [*tape.deal.tolist(), tape.swapped],
            "players": [learner, opponent] if mine == 0 else [opponent, learner],
            "decks": [card_name(self.rules, cards[0]), card_name(self.rules, cards[1])],
            "first": 0,
            "winner": winner,
            "turns": len(tape.steps),
            "truncated": False,
            "strings": tape.strings.texts,
            "steps": tape.steps,
        }
