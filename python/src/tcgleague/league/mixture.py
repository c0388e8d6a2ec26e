"""The league's deliverable as a Nash mixture: `league_policy.pt` in the run directory.

PSRO and fictitious play converge in their mixture, not in their last iterate ([league]
deliverable = nash_mixture). The file is a checkpoint (the one writer: format, fingerprint, JSON
sidecar, every field checked) whose `mixture` field holds each member's weights, architecture and
sampler with its meta-Nash weight; its top-level policy is the heaviest member's, so the file
reads like any checkpoint. A mixture plays by drawing one member per game; its exact judge
(`python -m tcgleague.exact`) takes the members' reach-weighted average policy, which is what that
draw plays; `evaluate_checkpoint` plays it as that draw (`mixture_side`). Tools that play one
policy refuse the file in one line (checkpoint.load_checkpoint without `mixture_ok`).

`load_mixture` validates it (weights finite, non-negative, summing to 1; every member's weights
fit its architecture) and refuses a bad file in one line (CheckpointError)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..actors import PolicyActor
from ..checkpoint import CheckpointError, LoadedCheckpoint, load_checkpoint
from ..checkpoint.deployed import checkpoint_sampler
from ..checkpoint.files import write_checkpoint
from ..fingerprint import checkpoint_game
from ..game import family_of
from ..match import policy_side
from ..policy.family import Policy, Sampler, freeze
from .manager import LeagueManager

MIXTURE_FILE = "league_policy.pt"
MIN_WEIGHT = 1e-3  # members the meta-Nash weighs less are left out (the rest renormalised)
WEIGHT_TOLERANCE = 1e-6  # how far from 1 the stored weights may sum


@dataclass
class Mixture:
    """A loaded mixture: its members (frozen policy, sampler) and their weights, summing to 1."""

    path: Path
    game: str
    ids: list[str]
    weights: list[float]
    members: list[tuple[Policy, Sampler]]


MixtureEvaluate = Callable[[list[tuple[Policy, Sampler]], list[float]], dict]
"""A game's judge of a mixture: (members, weights) -> eval/* figures (game.py)."""


def delivered_ids(manager: LeagueManager) -> list[str]:
    """The members the deliverable mixes: those ingested at or after `[league] deliverable_start`
    learner steps (its burn-in, like the average policy's `average_start`: the first candidates
    are far from equilibrium and the meta-game weighs them in), or the whole pool while none is."""
    late = [m for m in manager.pool_ids() if manager.store.members[m].step >= manager.cfg.deliverable_start]
    return late or manager.pool_ids()


def mixture_weights(manager: LeagueManager) -> tuple[list[str], list[float]]:
    """The delivered members' meta-Nash, heaviest first, and their weights renormalised after
    dropping those under MIN_WEIGHT (none while the pool is empty)."""
    nash = {m: w for m, w in manager.meta_nash(delivered_ids(manager)).items() if w >= MIN_WEIGHT}
    total = sum(nash.values())
    ids = sorted(nash, key=lambda m: -nash[m])
    return ids, [nash[m] / total for m in ids]


def write_mixture(run_dir: Path, manager: LeagueManager, global_step: int, epoch: int) -> Path | None:
    """The pool's meta-Nash mixture as `<run_dir>/league_policy.pt` (None while the pool is empty)."""
    ids, weights = mixture_weights(manager)
    if not ids:
        return None
    members = []
    for m, weight in zip(ids, weights):
        member = manager.store.members[m]
        members.append(
            {
                "id": m,
                "weight": weight,
                "policy": manager.store.weights(m),
                "policy_config": dict(member.policy_config),
                "sampling_params": dict(member.sampling_params),
            }
        )
    return write_mixture_file(run_dir / MIXTURE_FILE, members, manager.store.game, global_step, epoch)


def write_mixture_file(path: Path, members: list[dict], game: str, global_step: int, epoch: int) -> Path:
    """Any mixture (the league's, the run's average policy: average.py) as a checkpoint file at
    `path`: `members` are dicts of id, weight, policy, policy_config and sampling_params; the
    file's top-level policy is the first member's."""
    first = members[0]
    state = {
        "policy": first["policy"],
        "policy_config": first["policy_config"],
        "sampling_params": first["sampling_params"],
        "global_step": int(global_step),
        "epoch": int(epoch),
        "mixture": {"members": members},
    }
    return write_checkpoint(path, state, game=game)


def is_mixture(state: dict) -> bool:
    return "mixture" in state


class MixtureActor:
    """A mixture as a match side: each game its seat is played by one member, drawn with the
    mixture's weights when the game starts (`reset_rows`) from the side's own seeded stream."""

    def __init__(self, actors: list[PolicyActor], weights: list[float], num_rows: int, seed: int):
        self.actors, self.weights = actors, np.asarray(weights, dtype=np.float64)
        self.rng = np.random.default_rng(seed)
        self.member = np.zeros(num_rows, dtype=np.int64)  # who plays each row's current game

    def reset_rows(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.member[rows] = self.rng.choice(len(self.actors), size=len(rows), p=self.weights)
        for actor in self.actors:
            actor.reset_rows(rows)

    def act(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        actions = None
        for k, actor in enumerate(self.actors):
            mine = self.member[rows] == k
            if mine.any():
                theirs = actor.act(obs, rows[mine])
                if actions is None:
                    actions = np.zeros((len(rows), *theirs.shape[1:]), dtype=theirs.dtype)
                actions[mine] = theirs
        return actions if actions is not None else np.zeros((0, 1), dtype=np.int32)


def mixture_side(mixture: Mixture, seed: int, argmax: bool = False) -> Callable:
    """The mixture as a match side (a `match.ActorFactory`): one member per game (MixtureActor),
    each member sampling from its own generator."""

    def make(env) -> MixtureActor:
        actors = []
        for k, (policy, sampler) in enumerate(mixture.members):
            generator = torch.Generator(device=next(policy.parameters()).device).manual_seed(seed + 1 + k)
            actors.append(PolicyActor(policy, sampler, env.num_agents, generator, argmax, mixture.ids[k]))
        return MixtureActor(actors, mixture.weights, env.num_agents, seed)

    return make


def deployed_side(
    loaded: LoadedCheckpoint,
    seed: int,
    argmax: bool = False,
    sampler: Sampler | None = None,
    name: str = "policy",
    log=print,
) -> Callable:
    """A loaded file as a match side, played as deployed: a league mixture draws one member per
    game, a checkpoint samples at `sampler` (default: the one it was saved with)."""
    if is_mixture(loaded.state):
        return mixture_side(load_mixture(loaded.path, log), seed, argmax)
    return policy_side(loaded.policy.eval(), sampler or checkpoint_sampler(loaded), seed, argmax, name)


def member_policy(weights: dict, policy_config: dict, sampling_params: dict | None) -> tuple[Policy, Sampler]:
    """A member's frozen policy and its sampler, from what a mixture file keeps of it (raises
    RuntimeError, ValueError, TypeError or KeyError where the weights do not fit the architecture)."""
    family = family_of(policy_config)
    policy = family.from_state(weights, family.config_from_dict(policy_config))
    return freeze(policy), family.sampler_from_params(sampling_params)


def load_mixture(path: Path, log=print) -> Mixture:
    """A mixture file, validated: refused in one line (CheckpointError) when it is not one, when its
    weights are not a distribution, or when a member's weights do not fit its architecture."""
    loaded = load_checkpoint(path, log=log, mixture_ok=True)
    mixture = loaded.state.get("mixture")
    if not isinstance(mixture, dict) or not isinstance(mixture.get("members"), list) or not mixture["members"]:
        raise CheckpointError(f"{path} is not a league mixture (no members in its 'mixture' field)")
    ids, weights, members = [], [], []
    for k, entry in enumerate(mixture["members"]):
        where = f"{path}: mixture member {k}"
        if not isinstance(entry, dict) or any(f not in entry for f in ("id", "weight", "policy", "policy_config")):
            raise CheckpointError(f"{where} is missing its id, weight, policy or policy_config")
        weight = entry["weight"]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise CheckpointError(f"{where} ({entry['id']!r}): weight {weight!r} is not a finite number >= 0")
        weights_ok = isinstance(entry["policy"], dict) and all(
            torch.is_tensor(v) and (not v.is_floating_point() or torch.isfinite(v).all())
            for v in entry["policy"].values()
        )
        if not weights_ok:
            raise CheckpointError(f"{where} ({entry['id']!r}): its weights are not finite tensors")
        try:
            members.append(member_policy(entry["policy"], entry["policy_config"], entry.get("sampling_params")))
        except (RuntimeError, ValueError, TypeError, KeyError) as err:
            raise CheckpointError(f"{where} ({entry['id']!r}): weights do not fit the architecture: {err}") from None
        ids.append(str(entry["id"]))
        weights.append(float(weight))
    if abs(sum(weights) - 1.0) > WEIGHT_TOLERANCE:
        raise CheckpointError(f"{path}: the mixture's weights sum to {sum(weights):.6g}, not 1 ({weights})")
    game = checkpoint_game(loaded.state)
    return Mixture(Path(path), game, ids, weights, members)
