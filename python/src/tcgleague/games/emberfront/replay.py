"""Recording games for the replay viewer: every decision of both seats of chosen games of a
match, as the deciding seat knew it, through Emberfront's match runner (`match.play_match`, given a
`ReplayRecorder` as its `recorder`), in the viewer's format (replay/record.py).

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

Recording costs the match little: during it the recorder keeps only raw arrays of the recorded
rows (the decider's observation row and the action played; for a policy the LSTM state it
decided from, its value and its own draw, left on its device), and `games()` writes the games
up once after it: each policy's probabilities in one batched `PolicyActor.legal_log_probs`
pass (a pure function of observation and state: the very numbers a per-step pass gives), and
each game re-played from its deal in a 1-game env, which draws its boards (every re-played
observation is checked against the recorded one: a difference is a bug, and raises).

Floats are rounded to DIGITS places."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ...actors import Actor, PolicyActor
from ...match import GameRecord
from ...replay.record import DIGITS, Strings
from ...rows import game_of, seat_of
from .engine.cards import CardPool
from .env import TCGEnv
from .layout import legal_actions
from .lookahead import LookaheadActor
from .match import Deal, deal_game
from .words import board_text, describe, entity_cards

TOP_K = 5  # a policy's most likely actions kept per decision
OWN_SIDE = "its"  # how an action names the decider's own cards ("play its hand 2: Fireball")
BATCH = 4096  # recorded policy decisions per `legal_log_probs` call when a match is written up


@dataclass
class Describer:
    """`words.describe` of decisions' legal actions, from the decider's side, each distinct
    text worded once: it depends only on the action and the cards of the two entities it names."""

    pool: CardPool
    memo: dict[tuple, str] = field(default_factory=dict)

    def __call__(self, legal: np.ndarray, count: np.ndarray, obs: np.ndarray) -> list[list[str]]:
        """The legal lists (`layout.legal_actions` of `obs`) of decisions [n] in words."""
        cards = entity_cards(obs).astype(np.int64)
        cards = np.concatenate([cards, np.full((len(obs), 1), -1)], 1)  # -1: no entity
        named = np.take_along_axis(cards, np.minimum(legal[:, :, 1:3], cards.shape[1] - 1).reshape(len(obs), -1), 1)
        keys = np.concatenate([legal, named.reshape(*legal.shape[:2], 2)], 2)
        valid = np.arange(legal.shape[1]) < count[:, None]
        for k, j, key in zip(*np.nonzero(valid), map(tuple, keys[valid].tolist())):
            if key not in self.memo:
                self.memo[key] = describe(legal[k, j], obs[k], self.pool, OWN_SIDE)
        texts = [self.memo[key] for key in map(tuple, keys[valid].tolist())]
        ends = np.cumsum(count).tolist()
        return [texts[end - n : end] for end, n in zip(ends, count.tolist())]


@dataclass
class Batch:
    """The recorded decisions of one `decided` call, as raw arrays: which tape each belongs to,
    the decider's observation row and the action played; for a policy (`policy` set) the LSTM
    state the decision was taken from, its value and the action it drew (before any search),
    left on the policy's device (no host read during the match)."""

    tapes: np.ndarray  # [m] tape index
    seats: np.ndarray  # [m] the deciding seat
    obs: np.ndarray  # uint8 [m, obs_size]
    actions: np.ndarray  # int [m, 4]
    policy: PolicyActor | None = None
    state: tuple[torch.Tensor, ...] = ()  # (h [m, hidden], c [m, hidden], value [m], drawn [m, 4])


def policy_batch(actor: Actor, picked: np.ndarray) -> tuple[PolicyActor | None, tuple]:
    """The policy behind `actor` (itself, or a lookahead's) and, at positions `picked` of the
    rows of its latest `act`, what it decided from: (h, c, value, drawn) copied on its
    device; (None, ()) for a bot."""
    policy = actor.inner if isinstance(actor, LookaheadActor) else actor
    decision = getattr(actor, "last_decision", None)
    if not isinstance(policy, PolicyActor) or decision is None:
        return None, ()
    at = torch.from_numpy(picked).to(policy.device, non_blocking=True)
    return policy, tuple(
        t.index_select(0, at) for t in (decision.state_h, decision.state_c, decision.value, decision.actions)
    )


def policy_views(batches: list[Batch]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each recorded decision's legal-action probabilities [N, MAX_LEGAL] (NaN: a bot's), value
    [N] and drawn action [N, 4]: the sampler's own probabilities (`PolicyActor.legal_log_probs`,
    a pure function of the observation and state), computed once per policy over all of its
    recorded decisions."""
    sizes = np.cumsum([0] + [len(b.tapes) for b in batches])
    probs = np.full((sizes[-1], legal_actions(batches[0].obs[:1])[0].shape[1]), np.nan, dtype=np.float32)
    values, drawn = np.zeros(sizes[-1], dtype=np.float32), np.zeros((sizes[-1], 4), dtype=np.int64)
    for policy in {id(b.policy): b.policy for b in batches if b.policy is not None}.values():
        mine = [k for k, b in enumerate(batches) if b.policy is policy]
        at = np.concatenate([np.arange(sizes[k], sizes[k + 1]) for k in mine])
        obs = torch.from_numpy(np.concatenate([batches[k].obs for k in mine])).to(policy.device)
        h, c, value, action = (torch.cat([batches[k].state[i] for k in mine]) for i in range(4))
        logprob = [
            policy.legal_log_probs(obs[s : s + BATCH], h[s : s + BATCH], c[s : s + BATCH])
            for s in range(0, len(at), BATCH)
        ]
        probs[at] = torch.cat(logprob).exp().cpu().numpy()
        values[at], drawn[at] = value.float().cpu().numpy(), action.cpu().numpy()
    return probs, values, drawn


def positions(legal: np.ndarray, count: np.ndarray, actions: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Where each of `actions` [n, 4] is in its legal list (the engine lists each action once);
    one that is not there where `need` says it must be is a bug."""
    match = (legal == actions[:, None, :]).all(2) & (np.arange(legal.shape[1]) < count[:, None])
    if not match.any(1)[need].all():
        raise RuntimeError("a recorded action is not in its decision's legal list")
    return match.argmax(1)


def choices(obs: np.ndarray, actions: np.ndarray, probs: np.ndarray, values: np.ndarray, drawn: np.ndarray):
    """A game's decisions' legal lists (legal, count) and what the format stores of each
    besides its board and that list: the action played ("a") and for a policy (probabilities
    not NaN) its top actions ("p"), value ("v") and the move it drew where that was not played
    ("x"), computed over all the decisions at once."""
    legal, count = legal_actions(obs)
    legal = legal[:, : max(1, int(count.max()))]
    policy = ~np.isnan(probs[:, 0])
    changed = policy & (drawn != actions).any(1)
    played, picked = positions(legal, count, actions, np.ones(len(obs), bool)), positions(legal, count, drawn, changed)
    order = np.argsort(-np.nan_to_num(probs[:, : legal.shape[1]]), axis=1, kind="stable")  # zeros past the count last
    top = order[:, :TOP_K]
    top_probs = np.take_along_axis(probs, top, 1).astype(np.float64).tolist()
    fields = []
    for k, (a, n, value) in enumerate(zip(played.tolist(), count.tolist(), values.astype(np.float64).tolist())):
        step = {"a": a}
        if policy[k]:
            step["p"] = [[i, round(p, DIGITS)] for i, p in zip(top[k, :n].tolist(), top_probs[k][:n])]
            step["v"] = round(value, DIGITS)
            if changed[k]:
                step["x"] = int(picked[k])
        fields.append(step)
    return legal, count, fields


@dataclass
class GameTape:
    """One recorded game: where it was dealt from, and once it ended, its record."""

    game: int
    deal: Deal
    swapped: bool
    record: GameRecord | None = None


def write_up(env: TCGEnv, words: Describer, tape: GameTape, names: tuple[str, str], *decisions) -> dict:
    """The game as the format stores it, its decisions (in order: the deciding seat, its
    observation row, the action played, the policy's view: NaN probabilities for a bot)
    re-played in the 1-game `env` from the tape's deal, each board drawn from the engine as
    the decider saw it. A re-played observation that differs from the recorded one is a bug."""
    seats, obs = decisions[:2]
    legal, count, fields = choices(obs, *decisions[2:])
    texts = words(legal, count, obs)
    deal_game(env, 0, tape.deal, tape.swapped)
    strings, steps, step_actions = Strings(), [], np.zeros((2, 4), dtype=np.int32)
    replayed = np.empty_like(obs)
    for k, seat in enumerate(seats.tolist()):
        if not env.masks[seat]:
            raise RuntimeError(f"replay of game {tape.game}: seat {seat} does not decide at decision {k}")
        replayed[k] = env.observations[seat]
        board = strings.ids(board_text(env, hidden_seat=1 - seat, game=0).splitlines())
        steps.append({"s": seat, "b": board, "l": strings.ids(texts[k]), **fields[k]})
        step_actions[:] = 0
        step_actions[seat] = legal[k, fields[k]["a"]]
        _, _, terminals, truncations, _ = env.step(step_actions)
        if (terminals[0] or truncations[0]) != (k == len(seats) - 1):
            raise RuntimeError(f"replay of game {tape.game}: it ended at decision {k} of {len(seats)}")
    differ = np.flatnonzero((replayed != obs).any(1))
    if len(differ):
        raise RuntimeError(f"replay of game {tape.game}: decision {differ[0]} re-played differently from the match")
    record = tape.record
    mine = record.seat
    winner = None if record.result == 0 else (mine if record.result > 0 else 1 - mine)
    by_seat = lambda learner, opponent: [learner, opponent] if mine == 0 else [opponent, learner]  # noqa: E731
    return {
        "game": tape.game,
        "deal": [tape.deal.seed, tape.deal.deck_x, tape.deal.deck_y, tape.swapped],
        "players": by_seat(*names),
        "decks": by_seat(record.deck, record.opp_deck),
        "first": mine if record.went_first else 1 - mine,
        "winner": winner,
        "turns": record.turns,
        "truncated": record.truncated,
        "strings": strings.texts,
        "steps": steps,
    }


class ReplayRecorder:
    """A `match.MatchRecorder` that records the first `games` scheduled games of a match (the
    runner deals them first, so they are played from the start).

    During the match it only keeps raw arrays of the recorded rows (a slot lookup per call, a
    few array copies; a policy's state stays on its device); the others cost one array lookup
    per call. `games()` does the rest once: every policy's probabilities in one batched pass,
    and each game re-played from its deal in a 1-game env to draw its boards and name its
    actions. `names`: the learner's and the opponent's, as the viewer shows them."""

    def __init__(self, games: int, names: tuple[str, str]):
        self.wanted, self.names = games, names
        self.tapes: list[GameTape] = []
        self.slot_tape = np.full(0, -1, dtype=np.int64)  # env game slot -> the tape it plays, -1: none
        self.live = 0
        self.batches: list[Batch] = []
        self.turn_cap: int | None = None
        self.written: list[dict] | None = None

    def game_started(self, slot: int, game: int, deal: Deal, swapped: bool) -> None:
        if slot >= len(self.slot_tape):
            self.slot_tape = np.concatenate([self.slot_tape, np.full(slot + 1, -1, dtype=np.int64)])
        if game < self.wanted:
            self.slot_tape[slot] = len(self.tapes)
            self.tapes.append(GameTape(game, deal, swapped))
            self.live += 1

    def decided(self, env: TCGEnv, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray, actor: Actor) -> None:
        if not self.live:
            return
        tapes = self.slot_tape[game_of(rows)]
        picked = np.flatnonzero(tapes >= 0)
        if not len(picked):
            return
        self.turn_cap = env.turn_cap
        policy, state = policy_batch(actor, picked)
        at = rows[picked]
        self.batches.append(Batch(tapes[picked], seat_of(at), obs[at], actions[picked], policy, state))

    def game_ended(self, slot: int, record: GameRecord) -> None:
        tape = self.slot_tape[slot]
        if tape >= 0:
            self.tapes[tape].record = record
            self.slot_tape[slot] = -1
            self.live -= 1

    def games(self) -> list[dict]:
        """The finished recorded games, in schedule order (written up on the first call)."""
        if self.written is None:
            self.written = self.write_up()
        return self.written

    def write_up(self) -> list[dict]:
        finished = [k for k, tape in enumerate(self.tapes) if tape.record is not None]
        if not finished or not self.batches:
            return []
        probs, values, drawn = policy_views(self.batches)
        tapes = np.concatenate([b.tapes for b in self.batches])
        obs = np.concatenate([b.obs for b in self.batches])
        seats, actions = (np.concatenate([getattr(b, f) for b in self.batches]) for f in ("seats", "actions"))
        order = np.argsort(tapes, kind="stable")  # each tape's decisions, in the order they were taken
        bounds = np.searchsorted(tapes[order], np.arange(len(self.tapes) + 1))
        env = TCGEnv(num_games=1, seed=0, turn_cap=self.turn_cap)
        env.reset(0)
        out, words = [], Describer(env.pool)
        for k in finished:
            at = order[bounds[k] : bounds[k + 1]]
            views = (seats[at], obs[at], actions[at], probs[at], values[at], drawn[at])
            out.append(write_up(env, words, self.tapes[k], self.names, *views))
        return sorted(out, key=lambda g: g["game"])
