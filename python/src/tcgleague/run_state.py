"""What a checkpoint holds about a run: its format, and the checks and restores that need no
trainer. (`Trainer.state_dict()` / `load_state_dict()` own the trainer's side; the file format
around it is checkpoint/files.py's; which parts a resume applies is resume.py's.)

A rank's own part (`Trainer.rank_state`): its games with the env buffers, the learner's LSTM
state per row, episode flags, last actions, its sampling generator and its opponent side's
running state. The job's state (`job_state`) adds what every rank shares (weights, optimizer,
LR scheduler, counters, anneals, global RNG streams, metrics). Rank 0's part sits at the top
level - the single-process format every reader knows - and the other ranks' under
`dist.ranks["<r>"]`, with every rank's weight digest."""

from __future__ import annotations

import math

import numpy as np
import torch

from .checkpoint import CheckpointError
from .dist import Dist
from .rng import restore_generator
from .vecenv import VecEnv

FRESH_GAMES = "games restart from fresh deals (the continuation is not exact)"


def job_state(gathered: list[tuple[dict, str]], shared: dict) -> dict:
    """The checkpoint's run state from every rank's (part, weight digest), rank 0 first, and the
    shared part (checkpoint/files.py adds format and fingerprint)."""
    ranks = [part for part, _ in gathered]
    mine = ranks[0]
    metrics = {  # the finite figures: a rolled-back update reports NaN losses
        k: float(v) for k, v in shared["metrics"].items() if isinstance(v, (int, float)) and math.isfinite(v)
    }
    keys = ("policy", "policy_config", "optimizer", "scheduler", "global_step", "epoch", "anneal_offset", "anneal")
    return {
        **{k: shared[k] for k in (*keys, "sampling_params", "magnet", "average")},
        "rng": {**shared["rng"], "generator": mine["generator"], "generator_device": mine["generator_device"]},
        "run_state": mine["run_state"],
        "metrics": metrics,
        "health": {
            "entropy": metrics.get("sampler/rollout_entropy"),
            "noop_rate": metrics.get("sampler/rollout_noop_rate"),
        },
        "league": mine["league"],
        "dist": {
            "world_size": len(ranks),
            "ranks": {str(r): part for r, part in enumerate(ranks) if r > 0},
            "weight_digests": [digest for _, digest in gathered],  # equal: the replicas are identical
        },
        "normalizer": None,  # no observation/reward normaliser exists (fixed feature scales)
        "config": shared["config"],
        "resumed_from": str(shared["resumed_from"]) if shared["resumed_from"] else None,
    }


def rank_part(state: dict, dist: Dist, log) -> dict | None:
    """This rank's part of a checkpoint (as `Trainer.rank_state()` made it), or None when it was
    written by a job of another world size: then only the shared state (weights, optimizer, step) applies."""
    saved_world = int((state.get("dist") or {}).get("world_size", 1))
    if saved_world != dist.world_size:
        if dist.is_main:
            log(
                f"[resume] WARNING: the checkpoint was written by {saved_world} rank(s), this job has "
                f"{dist.world_size}: weights, optimizer, LR scheduler and step are restored; every rank's "
                "env shard is re-seeded (fresh deals) and its sampling stream restarts from its seed (the "
                "continuation is not exact)"
            )
        return None
    if dist.rank > 0:
        return state["dist"]["ranks"][str(dist.rank)]
    rng = state.get("rng") or {}
    return {
        "run_state": state.get("run_state"),
        "generator": rng.get("generator"),
        "generator_device": rng.get("generator_device", "cpu"),
        "league": state.get("league"),
    }


def restore_games(env: VecEnv, run: dict, seed: int, log, required: bool = False) -> np.ndarray | None:
    """Puts the checkpoint's running games (engine state and env buffers) back into `env`;
    returns the observation buffer, or None (with a warning) when they do not fit this run. An
    engine state the engine rejects (a damaged game) is refused when `required` (the resume asked
    for an exact continuation): fresh deals would silently make it another run."""
    if run["num_agents"] != env.num_rows:
        log(f"[resume] WARNING: the checkpoint ran {run['num_agents']} rows, this run {env.num_rows}: {FRESH_GAMES}")
        return None
    if run["env"] is None:
        log(
            "[resume] WARNING: the checkpoint holds no engine state (saved before the first rollout or from the "
            f"multiprocessing backend): {FRESH_GAMES}"
        )
        return None
    try:
        return env.load_state_dict(run["env"], seed)
    except ValueError as err:
        if required:
            raise CheckpointError(
                f"{err}: the running games cannot be restored, so the continuation cannot be exact; "
                "--resume-accept-fresh-deals restarts them from fresh deals instead"
            ) from None
        log(f"[resume] WARNING: engine state not restored ({err}): {FRESH_GAMES}")
        return None


def restore_sampling_stream(generator: torch.Generator, saved: torch.Tensor, saved_device: str, seed: int, log) -> None:
    """The rollout generator's stream; one saved on another kind of device (a CPU run resumed
    on a GPU) has another state format, so that stream restarts from the seed, with a warning."""
    if restore_generator(generator, saved, seed):
        return
    log(
        f"[resume] WARNING: the checkpoint's sampling stream was saved on {saved_device}, "
        f"this run is on {generator.device.type}: it restarts from seed {seed} (the continuation is "
        "not exact)"
    )
