"""Decision-time lookahead: a trained policy that looks a turn ahead before it acts.

At each decision the policy samples its move as usual; then every legal action is tried on a
copy of the game (engine: lookahead.c) and scored

    score(a) = log pi(a) + value_weight * Q(a)

where Q(a) is the policy's own value of where `a` leads: +1 / -1 / 0 when the game ends on the
way, else V(the decider's observation at its first decision in a later turn). On the way, the
greedy bot's heuristic plays both seats (the rest of this turn, the opponent's turn), so every
candidate is judged at the same horizon. The copy re-deals what the decider cannot see (its
deck's order, the opponent's hand), so the search never reads hidden information.

The prior keeps the search honest: a pure value argmax (value_weight -> inf) plays worse than a
balance, because V is noisy between nearby states. Where every candidate has the same Q the
sampled move stands. Training is unchanged: this is how a trained checkpoint can be played
(evaluate_checkpoint --lookahead, play --lookahead, bench learn's second final evaluation).

It costs one engine copy and about a turn and a half of heuristic play per legal action, and
one batched value pass per step: about 10x a plain evaluation on our 2-core CPU."""

from __future__ import annotations

import numpy as np
import torch

from ...actors import Decision, PolicyActor
from ...match import ActorFactory
from ...rows import game_of
from ...search import DEFAULT_VALUE_WEIGHT, check_value_weight
from .engine import LOOKAHEAD_STATUS
from .env import TCGEnv
from .layout import MAX_LEGAL, OBS_BYTES, legal_actions, legal_counts

STATUS = LOOKAHEAD_STATUS  # where a candidate leads: decide / win / loss / draw / wait
TERMINAL_Q = {STATUS["win"]: 1.0, STATUS["loss"]: -1.0, STATUS["draw"]: 0.0}
ENDED, WAITED = -1, -2  # a candidate's slot when the game ended / the play-out did not come back


class LookaheadActor:
    """A PolicyActor that searches a turn ahead before it acts (an Actor: act / reset_rows).

    `searched` counts decisions with more than one legal action, `overridden` those where the
    search changed the sampled move. The salts of the re-drawn decks come from `seed`, so a
    seeded match is reproducible."""

    def __init__(self, inner: PolicyActor, env: TCGEnv, seed: int, value_weight: float = DEFAULT_VALUE_WEIGHT):
        if not isinstance(inner, PolicyActor):
            raise TypeError(f"lookahead needs a policy to search with, got {type(inner).__name__}")
        if not isinstance(env, TCGEnv):
            raise TypeError(f"lookahead needs the engine's games (a TCGEnv), got {type(env).__name__}")
        self.inner, self.env, self.value_weight = inner, env, check_value_weight(value_weight)
        self.name = inner.name
        self.salts = np.random.default_rng([seed, 0x100C])
        self.next_obs = np.zeros((MAX_LEGAL, OBS_BYTES), dtype=np.uint8)
        self.status = np.zeros(MAX_LEGAL, dtype=np.int8)
        self.searched = self.overridden = 0
        self.last_decision: Decision | None = None  # `act`'s latest policy decision (before the search)

    def state_dict(self) -> dict:
        """The search's own stream (the policy it wraps, `inner`, keeps its own state)."""
        return {"salts": self.salts.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.salts.bit_generator.state = state["salts"]

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        decision, actions = self.search(obs, rows)
        self.inner.entropy_sum += decision.entropy.sum()
        self.last_decision = decision
        return actions

    def reset_rows(self, rows: np.ndarray) -> None:
        self.inner.reset_rows(rows)

    @property
    def entropy_sum(self) -> torch.Tensor:
        return self.inner.entropy_sum

    def search(self, obs: np.ndarray, rows: np.ndarray) -> tuple[Decision, np.ndarray]:
        """The policy's decision for env rows `rows` (its LSTM state advances as usual) and the
        actions after the search, int32 [len(rows), 4]."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self.env.masks[rows].all():
            raise ValueError(
                f"{self.name}: lookahead asked for rows that are not deciding: {rows[~self.env.masks[rows]]}"
            )
        device = self.inner.device
        decision = self.inner.decide(torch.from_numpy(obs[rows]).to(device), torch.from_numpy(rows).to(device))
        actions = decision.actions.cpu().numpy().astype(np.int32)
        q = self.action_values(obs, rows, decision.value.cpu().numpy())
        contested = [k for k, qk in enumerate(q) if qk is not None and np.ptp(qk) > 0]
        self.searched += sum(qk is not None for qk in q)
        if not contested:
            return decision, actions
        pick = torch.tensor(contested, device=device)
        obs_contested = torch.from_numpy(obs[rows[contested]]).to(device)
        prior = self.inner.legal_log_probs(obs_contested, decision.state_h[pick], decision.state_c[pick])
        prior = prior.cpu().numpy()
        legal, _ = legal_actions(obs[rows[contested]])
        for j, k in enumerate(contested):
            best = int(np.argmax(prior[j, : len(q[k])] + self.value_weight * q[k]))
            if not np.array_equal(legal[j, best], actions[k]):
                actions[k] = legal[j, best]
                self.overridden += 1
        return decision, actions

    def action_values(self, obs: np.ndarray, rows: np.ndarray, values_now: np.ndarray) -> list[np.ndarray | None]:
        """Q of each legal action of each of `rows` (whose decisions were just taken: their LSTM
        states are the ones their next turns start from), None where a row has one legal action.
        `values_now` are the rows' values before their decisions, the fallback for a candidate
        whose play-out never reached the decider's next turn. All the value lookups of all rows
        are one batched pass."""
        found = [self.candidates(obs[row], int(row)) for row in rows]
        for k, f in enumerate(found):
            if f is not None:
                f[0][f[2] == WAITED] = values_now[k]
        searched = [k for k, f in enumerate(found) if f is not None and len(f[1])]
        if searched:
            device = self.inner.device
            value_obs = np.concatenate([found[k][1] for k in searched])
            value_rows = np.concatenate([np.full(len(found[k][1]), rows[k]) for k in searched])
            values = self.inner.values(torch.from_numpy(value_obs).to(device), torch.from_numpy(value_rows).to(device))
            values = values.cpu().numpy().astype(np.float64)
            offset = 0
            for k in searched:
                q, next_obs, slot = found[k]
                decided = slot >= 0
                q[decided] = values[offset + slot[decided]]
                offset += len(next_obs)
        return [None if f is None else f[0] for f in found]

    def candidates(self, obs_row: np.ndarray, row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Where each legal action of env row `row` leads: (Q with the game-ending actions filled
        in; the decider's next-turn observations [m, OBS_BYTES]; each action's row in them, or
        ENDED / WAITED), or None with a single legal action (not searched; its salt is drawn
        all the same, so later searches do not depend on which rows had a choice)."""
        salt = int(self.salts.integers(0, 2**63))
        if legal_counts(obs_row[None])[0] <= 1:
            return None
        n = self.env.engine.lookahead(game_of(row), salt, self.next_obs, self.status)
        status = self.status[:n]
        q = np.array([TERMINAL_Q.get(int(s), 0.0) for s in status])
        decide = np.flatnonzero(status == STATUS["decide"])
        slot = np.where(status == STATUS["wait"], WAITED, ENDED)
        slot[decide] = np.arange(len(decide))
        return q, self.next_obs[decide].copy(), slot


def lookahead_side(
    side: ActorFactory, seed: int, value_weight: float, made: list[LookaheadActor] | None = None
) -> ActorFactory:
    """A policy side (match.policy_side) that searches a turn ahead before it acts; each actor it makes is
    appended to `made`, so a caller can read its counters after the match."""
    check_value_weight(value_weight)

    def make(env: TCGEnv) -> LookaheadActor:
        actor = LookaheadActor(side(env), env, seed, value_weight)
        if made is not None:
            made.append(actor)
        return actor

    return make
