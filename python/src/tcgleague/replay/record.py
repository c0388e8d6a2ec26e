"""Recording games for the replay viewer: every decision of both seats of chosen games of a
match, as the deciding seat knew it, through the one game runner (`match.play_match`, given a
`ReplayRecorder` as its `recorder`).

Each decision keeps the board as the decider saw it (words.board_text: the other seat's hand
as a count; the rendering never lists a deck, so no deck order is ever stored), its legal
actions in words (words.describe, from the decider's own observation), the index of the action
played, and for a policy its top actions with their probabilities and its value estimate (a
bot: only its choice); where a lookahead changed the policy's sampled move, that move too.

The format is compact JSON (a ~100-decision game is tens of kB): every distinct board line and
action text of a game is stored once in its `strings`, and a step names them by index.

    {"format": "tcgleague-replays", "version": 1, <what was played: title, seed, turn_cap>,
     "games": [{"game": scheduled index, "deal": [seed, deck_x, deck_y, swapped] (match.Deal,
                "players": [seat 0's name, seat 1's], "decks": [...], "first": seat,
                "winner": seat or null (a draw), "turns": n, "truncated": bool,
                "strings": [text, ...],
                "steps": [{"s": seat, "b": [board line ids], "l": [legal action ids],
                           "a": index into l played, "p": [[index into l, prob], ...] (policy),
                           "v": value (policy), "x": index the policy drew (when a lookahead
                           changed it)}, ...]}]}

Floats are rounded to DIGITS places. `record_match` records K games of a match in one call
(what a caller holding two sides - the league's promotion matches, say - needs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..actors import Actor, PolicyActor
from ..env import TCGEnv, game_of, seat_of
from ..layout import legal_actions
from ..lookahead import LookaheadActor
from ..match import ActorFactory, Deal, GameRecord, MatchReport, play_match
from ..words import board_text, describe

FORMAT, VERSION = "tcgleague-replays", 1
TOP_K = 5  # a policy's most likely actions kept per decision
DIGITS = 3  # probabilities and values are rounded to this many decimals
OWN_SIDE = "its"  # how an action names the decider's own cards ("play its hand 2: Fireball")


@dataclass
class Strings:
    """A game's distinct texts (board lines, actions in words), each stored once."""

    texts: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def ids(self, texts) -> list[int]:
        out = []
        for text in texts:
            if text not in self.index:
                self.index[text] = len(self.texts)
                self.texts.append(text)
            out.append(self.index[text])
        return out


@dataclass
class PolicyView:
    """What a policy thought at a batch of its decisions: each legal action's probability
    [n, MAX_LEGAL], its value estimate [n] and the action it drew [n, 4] (before any search)."""

    probs: np.ndarray
    values: np.ndarray
    drawn: np.ndarray


def policy_view(actor: Actor, obs_rows: np.ndarray, picked: np.ndarray) -> PolicyView | None:
    """What the policy behind `actor` (itself, or a lookahead's) thought at positions `picked`
    of the rows of its latest `act`, whose observations are `obs_rows`; None for a bot. Its
    probabilities are the sampler's own (`PolicyActor.legal_log_probs`), from the LSTM states
    those decisions were taken from."""
    policy = actor.inner if isinstance(actor, LookaheadActor) else actor
    decision = getattr(actor, "last_decision", None)
    if not isinstance(policy, PolicyActor) or decision is None:
        return None
    at = torch.as_tensor(picked, device=policy.device)
    obs = torch.from_numpy(obs_rows).to(policy.device)
    logprob = policy.legal_log_probs(obs, decision.state_h[at], decision.state_c[at])
    return PolicyView(
        logprob.exp().cpu().numpy(), decision.value[at].float().cpu().numpy(), decision.actions[at].cpu().numpy()
    )


def _index(legal: np.ndarray, action: np.ndarray) -> int:
    """The position of `action` in a legal list [n, 4] (the engine lists each action once)."""
    return int(np.flatnonzero((legal == action).all(1))[0])


@dataclass
class GameTape:
    """One game being recorded: where it was dealt from and its decisions so far."""

    game: int
    deal: Deal
    swapped: bool
    strings: Strings = field(default_factory=Strings)
    steps: list[dict] = field(default_factory=list)

    def add(self, env: TCGEnv, slot: int, row: int, obs_row: np.ndarray, action: np.ndarray, view, j: int) -> None:
        """The decision of env row `row` (game slot `slot`): `action` played; `view` (a
        PolicyView, or None for a bot) at position `j`."""
        seat = int(seat_of(row))
        legal, count = legal_actions(obs_row[None])
        legal = legal[0, : int(count[0])]
        words = [describe(a, obs_row, env.pool, OWN_SIDE) for a in legal]
        step = {
            "s": seat,
            "b": self.strings.ids(board_text(env, hidden_seat=1 - seat, game=slot).splitlines()),
            "l": self.strings.ids(words),
            "a": _index(legal, action),
        }
        if view is not None:
            probs = view.probs[j, : len(legal)]
            step["p"] = [[int(i), round(float(probs[i]), DIGITS)] for i in np.argsort(-probs, kind="stable")[:TOP_K]]
            step["v"] = round(float(view.values[j]), DIGITS)
            if not np.array_equal(view.drawn[j], action):
                step["x"] = _index(legal, view.drawn[j])
        self.steps.append(step)

    def finish(self, record: GameRecord, names: tuple[str, str]) -> dict:
        """The game as the format stores it; `names` are the learner's and the opponent's."""
        mine = record.seat
        winner = None if record.result == 0 else (mine if record.result > 0 else 1 - mine)
        by_seat = lambda learner, opponent: [learner, opponent] if mine == 0 else [opponent, learner]  # noqa: E731
        return {
            "game": self.game,
            "deal": [self.deal.seed, self.deal.deck_x, self.deal.deck_y, self.swapped],
            "players": by_seat(*names),
            "decks": by_seat(record.deck, record.opp_deck),
            "first": mine if record.went_first else 1 - mine,
            "winner": winner,
            "turns": record.turns,
            "truncated": record.truncated,
            "strings": self.strings.texts,
            "steps": self.steps,
        }


class ReplayRecorder:
    """A `match.MatchRecorder` that records the first `games` scheduled games of a match (the
    runner deals them first, so they are played from the start); the others cost a dictionary
    lookup per step. `names`: the learner's and the opponent's, as the viewer shows them."""

    def __init__(self, games: int, names: tuple[str, str]):
        self.wanted, self.names = games, names
        self.live: dict[int, GameTape] = {}  # env game slot -> the recorded game it plays
        self.done: list[dict] = []

    def game_started(self, slot: int, game: int, deal: Deal, swapped: bool) -> None:
        if game < self.wanted:
            self.live[slot] = GameTape(game, deal, swapped)

    def decided(self, env: TCGEnv, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray, actor: Actor) -> None:
        if not self.live:
            return
        slots = game_of(rows)
        picked = np.flatnonzero(np.isin(slots, list(self.live)))
        if not len(picked):
            return
        view = policy_view(actor, obs[rows[picked]], picked)
        for j, k in enumerate(picked):
            row = int(rows[k])
            self.live[int(slots[k])].add(env, int(slots[k]), row, obs[row], actions[k], view, j)

    def game_ended(self, slot: int, record: GameRecord) -> None:
        tape = self.live.pop(slot, None)
        if tape is not None:
            self.done.append(tape.finish(record, self.names))

    def games(self) -> list[dict]:
        """The finished recorded games, in schedule order."""
        return sorted(self.done, key=lambda g: g["game"])


def replay_document(games: list[dict], **about) -> dict:
    """The file's content: the format's name and version, what was played (`about`: title,
    seed, turn_cap, ...), the games."""
    return {"format": FORMAT, "version": VERSION, **about, "games": games}


def record_match(
    learner: ActorFactory,
    opponent: ActorFactory,
    episodes: int,
    seed: int,
    names: tuple[str, str],
    record: int | None = None,
    **match_options,
) -> tuple[MatchReport, list[dict]]:
    """`match.play_match(learner, opponent, episodes, seed, **match_options)` with its first
    `record` games (default: all) recorded: the match's report and the recorded games."""
    recorder = ReplayRecorder(episodes if record is None else record, names)
    report = play_match(learner, opponent, episodes, seed, recorder=recorder, **match_options)
    return report, recorder.games()
