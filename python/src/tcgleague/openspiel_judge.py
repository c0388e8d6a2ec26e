"""The exact NashConv and exploitability of a policy in a game OpenSpiel has, computed by
OpenSpiel's best responses (the `[exact]` extra): the judge a game hands `Game.judge` and its
periodic `eval/exploitability`, whatever the game, through a `JudgedGame` adapter.

Why OpenSpiel: on these games the truth is computable, and a judge nobody here wrote settles
whether a league buys robustness. A policy reaches it as a `StatePolicy` (OpenSpiel's decision
state -> probabilities of its legal action ids), from which `tabular_policy` fills OpenSpiel's
`TabularPolicy`, one row per information state (12 in Kuhn, 936 in Leduc, 24,576 in Liar's
Dice), and `measure` asks OpenSpiel's best responses for NashConv.

What a game adapts (`JudgedGame`): OpenSpiel's name for it, the rows its player saw at each of
its decisions along a state's history (`decision_rows`: the game replays the history in its own
env), and its action ids in OpenSpiel's numbering (`openspiel_action`). Three policies plug in:
- a table, {information-state string: probabilities over OpenSpiel's action ids}, saved with
  `torch.save` as plain values (`load_table`, `table_policy`): what the command reads;
- a policy over the env's rows (`rows_policy`): the acting seat's rows along the state's history;
- a trained recurrent policy (`recurrent_policy`; a checkpoint of the game, the trainer's learner
  for `eval/exploitability`): its LSTM run along those rows, every information state in one batch."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyspiel
import torch
from open_spiel.python import policy as openspiel_policy

from .checkpoint.deployed import checkpoint_sampler
from .checkpoint.files import load_checkpoint, read_state, verify_archive
from .dist import weights_digest
from .errors import UserInputError
from .fingerprint import checkpoint_game
from .league.mixture import is_mixture, load_mixture
from .policy.family import Policy, Sampler, freeze, unwrap

StatePolicy = Callable[[pyspiel.State], Mapping[int, float]]
"""OpenSpiel's view of a policy: a decision state -> the probability of each legal action id."""
RowsPolicy = Callable[[np.ndarray], np.ndarray]
"""Our env's view: the acting seat's rows at its decisions so far ([decisions, obs_width], this
one last) -> probabilities over the game's actions (zero on illegal actions)."""
PROBABILITY_TOLERANCE = 1e-4  # how far from 1 a policy's probabilities may sum (float32 softmax)


def same_ids(legal: np.ndarray, action: int) -> int:
    """`JudgedGame.openspiel_action` of a game whose action ids are OpenSpiel's."""
    return int(action)


@dataclass(frozen=True)
class JudgedGame:
    """What the judge needs of a game (its rows and actions in OpenSpiel's terms)."""

    name: str
    """our name for it (`[env] game`, a checkpoint's game)"""
    openspiel_name: str
    num_actions: int
    legal_offset: int
    """where the legal mask starts in a row (it runs to the row's end)"""
    obs_width: int
    decision_rows: Callable[[pyspiel.State], np.ndarray] = field(compare=False)
    """a decision state -> the rows its player saw at each of its decisions so far, this one last"""
    openspiel_action: Callable[[np.ndarray, int], int] = field(default=same_ids, compare=False)
    """(a row's legal mask, our action) -> OpenSpiel's id of it"""


@dataclass(frozen=True)
class Exploitability:
    """OpenSpiel's measures of a policy, in chips per game."""

    game: str
    nash_conv: float
    """the sum over seats of what a best response to the policy gains over the policy's own value"""
    exploitability: float
    """NashConv / players (OpenSpiel's `exploitability`): 0 exactly at a Nash equilibrium"""


def openspiel_game(game: JudgedGame) -> pyspiel.Game:
    return pyspiel.load_game(game.openspiel_name)


@functools.cache
def empty_table(game: JudgedGame) -> openspiel_policy.TabularPolicy:
    """OpenSpiel's table of the game's information states, built once a process (building one
    walks the whole game: seconds for Liar's Dice); copied for every policy judged."""
    return openspiel_policy.TabularPolicy(openspiel_game(game))


class TablePolicy:
    """A policy that carries its whole table: `table[i]`, the probabilities over OpenSpiel's action
    ids at information state `keys[i]` (`recurrent_policy`'s, in OpenSpiel's state order, which
    `tabular_policy` copies in at once)."""

    def __init__(self, keys: list[str], table: np.ndarray):
        self.keys, self.table = keys, table
        self.index = {key: i for i, key in enumerate(keys)}

    def __call__(self, state: pyspiel.State) -> dict[int, float]:
        row = self.table[self.index[state.information_state_string()]]
        return {a: float(row[a]) for a in state.legal_actions()}


def tabular_policy(game: JudgedGame, policy: StatePolicy) -> openspiel_policy.TabularPolicy:
    """OpenSpiel's table of `policy`: its probabilities at one state of each information state
    (a policy that sees only the information state gives the same at every other). A
    `TablePolicy` in the table's state order is copied in at once: a mixture judges many."""
    tabular = copy.copy(empty_table(game))  # its own probabilities over the shared list of states
    if isinstance(policy, TablePolicy) and policy.keys == list(tabular.state_lookup):
        tabular.action_probability_array[:] = policy.table
        return tabular
    for state, probabilities in zip(tabular.states, tabular.action_probability_array):
        given = dict(policy(state))
        where = f"information state {state.information_state_string()!r}"
        if set(given) - set(state.legal_actions()):
            raise UserInputError(
                f"{where}: probabilities for illegal actions {sorted(set(given) - set(state.legal_actions()))}"
            )
        # written so NaN fails it (NaN compares false)
        if not (min(given.values(), default=-1.0) >= 0 and abs(sum(given.values()) - 1) <= PROBABILITY_TOLERANCE):
            raise UserInputError(
                f"{where}: the probabilities {given} are not a distribution over {state.legal_actions()}"
            )
        total = sum(given.values())
        probabilities[:] = 0.0
        for action, p in given.items():
            probabilities[action] = p / total
    return tabular


def measure(game: JudgedGame, policy: StatePolicy) -> Exploitability:
    """NashConv and exploitability of `policy`, by OpenSpiel's best responses: its C++ ones, which
    give the Python module's figures to the last bit in 60% of the time (Liar's Dice: 8-10 s)."""
    spiel = openspiel_game(game)
    table = openspiel_policy.python_policy_to_pyspiel_policy(tabular_policy(game, policy))
    nash_conv = float(pyspiel.nash_conv(spiel, table, use_state_get_policy=False))
    return Exploitability(game.name, nash_conv, nash_conv / spiel.num_players())


# -- a table of probabilities per information state ---------------------------------------------


def table_of(tabular: openspiel_policy.TabularPolicy) -> dict[str, list[float]]:
    """An OpenSpiel TabularPolicy (CFR's average policy, say) as a table of plain values."""
    return {key: tabular.action_probability_array[index].tolist() for key, index in tabular.state_lookup.items()}


def table_policy(table: Mapping[str, Sequence[float]]) -> StatePolicy:
    """The policy a table gives: each state's row, read at its legal actions."""

    def probabilities(state: pyspiel.State) -> dict[int, float]:
        key, legal = state.information_state_string(), state.legal_actions()
        if key not in table:
            raise UserInputError(f"the table has no entry for information state {key!r} (is it another game's?)")
        if len(table[key]) <= max(legal):
            raise UserInputError(f"information state {key!r}: {len(table[key])} probabilities, legal actions {legal}")
        return {action: float(table[key][action]) for action in legal}

    return probabilities


def load_table(path: Path) -> dict[str, list[float]]:
    """A table saved by `torch.save` (read with weights_only: no code runs), checked for shape."""
    verify_archive(path)
    table = read_state(path)
    for key, row in table.items():
        if (
            not isinstance(key, str)
            or not isinstance(row, (list, tuple))
            or not all(isinstance(p, (int, float)) for p in row)
        ):
            raise UserInputError(
                f"{path}: not a policy table: {key!r} -> {type(row).__name__}; valid: "
                "{information-state string: [probability per OpenSpiel action id], ...}"
            )
    return table


# -- a policy over our env's rows ------------------------------------------------------------------


def rows_policy(game: JudgedGame, policy: RowsPolicy) -> StatePolicy:
    """OpenSpiel's view of a policy over our rows: its probabilities of fold / call / raise at
    the state's last row, each under the OpenSpiel id it is there."""

    def probabilities(state: pyspiel.State) -> dict[int, float]:
        rows = game.decision_rows(state)
        legal = rows[-1, game.legal_offset :]
        ours = np.asarray(policy(rows), dtype=np.float64)
        if ours.shape != (game.num_actions,) or (ours[legal == 0] != 0).any():
            raise ValueError(
                f"a rows policy gives {game.num_actions} probabilities, zero where illegal: {ours} (mask {legal})"
            )
        return {game.openspiel_action(legal, a): float(ours[a]) for a in range(game.num_actions) if legal[a]}

    return probabilities


# -- a trained recurrent policy ----------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionSequences:
    """Every information state of a game with the rows its player saw at its decisions so far:
    what a recurrent policy runs its LSTM along to reach that state."""

    keys: list[str]
    """information-state strings, in OpenSpiel's TabularPolicy order"""
    rows: np.ndarray
    """[states, longest, obs_width] uint8, zero past each state's length"""
    lengths: np.ndarray
    """decisions of each state's player up to and including this one"""


@functools.cache
def decision_sequences(game: JudgedGame) -> DecisionSequences:
    states = empty_table(game).states
    seqs = [game.decision_rows(state) for state in states]
    rows = np.zeros((len(seqs), max(map(len, seqs)), game.obs_width), dtype=np.uint8)
    for i, seq in enumerate(seqs):
        rows[i, : len(seq)] = seq
    keys = [state.information_state_string() for state in states]
    return DecisionSequences(keys, rows, np.array([len(seq) for seq in seqs]))


@torch.no_grad()
def recurrent_policy(game: JudgedGame, policy: Policy, sampler: Sampler) -> TablePolicy:
    """OpenSpiel's view of a recurrent policy over our rows (a trained checkpoint's, the trainer's
    learner): its LSTM run from a zero state along each information state's rows, every state in
    one batch, and the sampler's probabilities at the last row (its current parameters)."""
    seqs = decision_sequences(game)
    device = next(policy.parameters()).device
    rows = torch.from_numpy(seqs.rows).to(device)
    last_step = torch.from_numpy(seqs.lengths - 1).to(device)
    h = torch.zeros(len(rows), policy.hidden_size, device=device)
    c, last = torch.zeros_like(h), torch.zeros_like(h)
    for t in range(rows.shape[1]):
        x, _ = policy.encode(rows[:, t])
        out, (h, c) = policy.step(x, (h, c))
        last = torch.where((last_step == t)[:, None], out, last)
    final = rows[torch.arange(len(rows), device=device), last_step]
    _, ent = policy.encode(final)
    probabilities = sampler.listed_log_probs(policy, last, ent, final).exp().cpu().numpy().astype(np.float64)
    legal = final[:, game.legal_offset :].cpu().numpy()
    table = np.zeros((len(seqs.keys), openspiel_game(game).num_distinct_actions()))
    for i, mask in enumerate(legal):  # our action ids -> OpenSpiel's; the softmax renormalised in float64
        ours = np.flatnonzero(mask)
        table[i, [game.openspiel_action(mask, int(a)) for a in ours]] = (
            probabilities[i, ours] / probabilities[i, ours].sum()
        )
    return TablePolicy(seqs.keys, table)


def mixture_policy(game: JudgedGame, policies: Sequence[StatePolicy], weights: Sequence[float]) -> StatePolicy:
    """The policy a mixture plays when it draws one of `policies` per game with `weights`: at each
    information state, the members' probabilities weighted by `weights` times each member's own
    reach of it (the state's player's probability of its own actions so far; perfect recall makes
    it the same at every history of the state), or by `weights` alone where no member reaches it."""
    tables = [tabular_policy(game, p) for p in policies]
    w = np.asarray(weights, dtype=np.float64)
    rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # state -> (weight x reach [members], probabilities)

    def walk(state: pyspiel.State, reach: np.ndarray) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action), reach)
            return
        player, key = state.current_player(), state.information_state_string()
        probs = np.stack([t.action_probability_array[t.state_lookup[key]] for t in tables])
        rows.setdefault(key, (w * reach[player], probs))
        for action in state.legal_actions():
            child_reach = reach.copy()
            child_reach[player] = reach[player] * probs[:, action]
            walk(state.child(action), child_reach)

    spiel = openspiel_game(game)
    walk(spiel.new_initial_state(), np.ones((spiel.num_players(), len(tables))))
    average = {}
    for key, (weighted_reach, probs) in rows.items():
        total = weighted_reach.sum()
        average[key] = ((weighted_reach @ probs) / total if total > 0 else w @ probs).tolist()
    return table_policy(average)


def policy_exploitability(game: JudgedGame, policy: Policy, sampler: Sampler) -> Exploitability:
    """The exact exploitability of a recurrent policy (at the sampler's current parameters)."""
    return measure(game, recurrent_policy(game, policy, sampler))


def refuse_other_game(path: Path, played: str, game: JudgedGame) -> None:
    if played != game.name:
        raise UserInputError(f"{path} plays {played}; the exact judge takes {game.name} checkpoints")


def checkpoint_policy(path: Path, game: JudgedGame) -> TablePolicy:
    """A checkpoint's policy, at the sampler it was saved with, as OpenSpiel sees it."""
    loaded = load_checkpoint(path)
    refuse_other_game(path, checkpoint_game(loaded.state), game)
    return recurrent_policy(game, freeze(loaded.policy), checkpoint_sampler(loaded))


def members_exploitability(
    game: JudgedGame,
    members: Sequence[tuple[Policy, Sampler]],
    weights: Sequence[float],
    judged: dict[tuple, StatePolicy] | None = None,
) -> Exploitability:
    """A mixture of recurrent policies (one drawn per game with `weights`) judged exactly.
    `judged`: the members' tables by `member_key` from a previous call, reused where a member is
    unchanged and left holding this call's (a run judges the same snapshots or members again)."""
    keys = [member_key(policy, sampler) for policy, sampler in members]
    known = judged if judged is not None else {}
    tables = {key: known[key] if key in known else recurrent_policy(game, *m) for key, m in zip(keys, members)}
    known.clear()
    known.update(tables)
    return measure(game, mixture_policy(game, [tables[key] for key in keys], weights))


def member_key(policy: Policy, sampler: Sampler) -> tuple:
    """What a recurrent policy's table depends on: its class, weights and sampling parameters."""
    params = tuple(sorted(sampler.get_sampling_params().items()))
    return type(unwrap(policy)).__name__, weights_digest(unwrap(policy).state_dict()), params


def file_policy(path: Path, game: JudgedGame) -> StatePolicy:
    """A checkpoint (at its saved sampler), a league mixture (league_policy.pt, average_policy.pt:
    its members' reach-weighted average) or a policy table, as OpenSpiel sees it; a checkpoint or
    mixture of another game than `game` is refused."""
    verify_archive(path)
    state = read_state(path)
    if is_mixture(state):
        mixture = load_mixture(path)
        refuse_other_game(path, mixture.game, game)
        return mixture_policy(game, [recurrent_policy(game, *m) for m in mixture.members], mixture.weights)
    if "policy_config" in state:
        return checkpoint_policy(path, game)
    return table_policy(load_table(path))


def file_exploitability(path: Path, game: JudgedGame) -> Exploitability:
    """A checkpoint, a league mixture or a policy table (`file_policy`), judged exactly."""
    return measure(game, file_policy(path, game))


def periodic_evaluation(game: JudgedGame) -> Callable:
    """`Game.evaluation`: eval/exploitability and eval/nash_conv, the trainer's learner judged exactly."""

    def evaluation(cfg) -> Callable[[Policy, Sampler, int], dict]:
        def evaluate(policy: Policy, sampler: Sampler, seed: int) -> dict:
            judged = policy_exploitability(game, policy, sampler)
            return {"eval/exploitability": judged.exploitability, "eval/nash_conv": judged.nash_conv}

        return evaluate

    return evaluation


def mixture_evaluation(game: JudgedGame) -> Callable:
    """`Game.evaluate_mixture`: eval/mixture_exploitability and eval/mixture_nash_conv, the
    league's Nash mixture judged exactly as its members' reach-weighted average policy."""

    def evaluation(cfg) -> Callable:
        tables: dict[tuple, StatePolicy] = {}  # the last evaluation's members: most are judged again

        def evaluate(members, weights) -> dict:
            judged = members_exploitability(game, members, weights, tables)
            return {"eval/mixture_exploitability": judged.exploitability, "eval/mixture_nash_conv": judged.nash_conv}

        return evaluate

    return evaluation
