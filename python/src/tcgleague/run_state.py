"""What a checkpoint holds about a run, and putting it back: `Trainer.state_dict()` /
`load_state_dict()` are these functions. (The file format around it is checkpoint/files.py's;
which parts a resume applies is resume.py's.)

A rank's own part (`rank_state`): its games with the env buffers, the learner's LSTM state per
row, episode flags, last actions, its sampling generator and its opponent side's running state.
The job's state (`job_state`) adds what every rank shares (weights, optimizer, LR scheduler,
counters, anneals, global RNG streams, metrics). Rank 0's part sits at the top level - the
single-process format every reader knows - and the other ranks' under `dist.ranks["<r>"]`,
with every rank's weight digest."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from .anneal import anneal_values
from .dist import weights_digest
from .policy.tcg_policy import strip_compile_prefix, unwrap
from .rng import global_state, restore_generator, set_global_state

if TYPE_CHECKING:  # the functions read a trainer's public fields; the trainer imports this module
    from .trainer import Trainer


def rank_state(trainer: Trainer) -> dict:
    """What this rank alone holds: its games, its LSTM state, its sampling stream and its
    opponent side's running state."""
    return {
        "run_state": {
            "num_agents": int(trainer.env.num_agents),
            "env": trainer.env.state_dict() if trainer.obs is not None else None,  # None: before the first rollout
            "state_h": trainer.learner.state.h.detach().cpu().clone(),
            "state_c": trainer.learner.state.c.detach().cpu().clone(),
            "episode_start": torch.from_numpy(trainer.episode_start.copy()),
            "actions": torch.from_numpy(trainer.actions.copy()),
        },
        "generator": trainer.generator.get_state(),
        "generator_device": trainer.device.type,
        "league": trainer.opponents.state_dict(),
    }


def job_state(trainer: Trainer) -> dict | None:
    """Everything a checkpoint holds about the run (checkpoint/files.py adds format and
    fingerprint). Every rank calls it at once: rank 0 gets the whole job's state, the other
    ranks None."""
    module = unwrap(trainer.policy)
    gathered = trainer.dist.gather((rank_state(trainer), weights_digest(module.state_dict())))
    if gathered is None:
        return None
    ranks = [part for part, _ in gathered]
    mine = ranks[0]
    metrics = {  # the finite figures: a rolled-back update reports NaN losses
        k: float(v) for k, v in trainer.last_metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)
    }
    return {
        "policy": strip_compile_prefix(module.state_dict()),
        "policy_config": module.config.to_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "global_step": int(trainer.global_step),
        "epoch": int(trainer.epoch),
        "anneal_offset": int(trainer.anneal_offset),
        "anneal": anneal_values(trainer.anneals, trainer.global_step, trainer.total_steps, trainer.anneal_offset),
        "sampling_params": trainer.sampler.get_sampling_params(),
        "rng": {**global_state(), "generator": mine["generator"], "generator_device": mine["generator_device"]},
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
        "config": trainer.cfg.to_dict(),
        "resumed_from": str(trainer.resumed_from) if trainer.resumed_from else None,
    }


def load_job_state(trainer: Trainer, state: dict, log=print) -> bool:
    """Restores `job_state()` in full: weights, optimizer, LR scheduler, counters, RNG streams,
    and - when they fit this env and this job's world size - the running games with their LSTM
    state. Returns whether the continuation is exact (the running games were restored)."""
    unwrap(trainer.policy).load_state_dict(state["policy"], strict=True)
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    trainer.global_step, trainer.epoch = int(state["global_step"]), int(state["epoch"])
    trainer.anneal_offset = int(state.get("anneal_offset") or 0)
    if "rng" in state:
        set_global_state(state["rng"])
    mine = rank_part(trainer, state, log)
    if mine is None:  # another world size: fresh games and streams from this rank's seed
        trainer.opponents.load_state_dict(state.get("league"), False, log)
        return False
    exact = load_games(trainer, mine["run_state"], log) if mine.get("run_state") is not None else False
    if mine.get("generator") is not None:
        load_generator(trainer, mine["generator"], mine.get("generator_device", "cpu"), log)
    trainer.opponents.load_state_dict(mine.get("league"), exact, log)
    return exact


def rank_part(trainer: Trainer, state: dict, log) -> dict | None:
    """This rank's part of a checkpoint (as rank_state() made it), or None when it was written
    by a job of another world size: then only the shared state (weights, optimizer, step) applies."""
    dist = trainer.dist
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


def load_generator(trainer: Trainer, saved: torch.Tensor, saved_device: str, log) -> None:
    """The rollout generator's stream; one saved on another kind of device (a CPU run resumed
    on a GPU) has another state format, so that stream restarts from the seed, with a warning."""
    if restore_generator(trainer.generator, saved, trainer.seed):
        return
    log(
        f"[resume] WARNING: the checkpoint's sampling stream was saved on {saved_device}, "
        f"this run is on {trainer.device.type}: it restarts from seed {trainer.seed} (the continuation is "
        "not exact)"
    )


def load_games(trainer: Trainer, run: dict, log) -> bool:
    """Engine, env buffers, LSTM state and episode flags; False (with a warning) if they do not fit."""
    fresh = "games restart from fresh deals (the continuation is not exact)"
    if run["num_agents"] != trainer.env.num_agents:
        log(
            f"[resume] WARNING: the checkpoint ran {run['num_agents']} rows, this run {trainer.env.num_agents}: {fresh}"
        )
        return False
    if run["env"] is None:
        log(
            "[resume] WARNING: the checkpoint holds no engine state (saved before the first rollout or from the "
            f"multiprocessing backend): {fresh}"
        )
        return False
    try:
        trainer.obs = trainer.env.load_state_dict(run["env"], trainer.seed)
    except ValueError as err:
        trainer.obs = None
        log(f"[resume] WARNING: engine state not restored ({err}): {fresh}")
        return False
    trainer.learner.state.load_state_dict({"h": run["state_h"], "c": run["state_c"]})
    trainer.episode_start[:] = run["episode_start"].numpy()
    trainer.actions[:] = run["actions"].numpy()
    return True
