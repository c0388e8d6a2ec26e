"""Resuming a run from a checkpoint, and the post-resume health probe (SPEC §7).

With --resume-load-optimizer the whole run state comes back, so on CPU with the native or
serial backend training N epochs, saving and resuming for M more is bit-identical to N + M
epochs straight: weights, optimizer, LR scheduler, global_step, epoch, anneal offset, the RNG
states (python, numpy, torch, the trainer's Generator), every game's engine state with the env
buffers (observations, masks, ...), the per-row LSTM state and the episode-start flags.

Without it only the weights are loaded: global_step starts at 0 and the anneals continue from
the checkpoint's step through `trainer.anneal_offset`. If the reward definition changed
([env] reward_shaping, [train] gamma) the value head is re-initialised (unless
--no-resume-auto-reset-critic), since its targets no longer mean the same thing.

The health probe: the first rollout after a resume logs `resume/entropy`, `resume/noop_rate`
and the checkpoint's `resume/stored_*` values, and warns loudly when the policy looks collapsed
(seed 001: resumed checkpoints collapsed to entropy ~1e-5 and 99 % pass).
"""
from __future__ import annotations

import random
import sys
from dataclasses import dataclass

import numpy as np
import torch

from .checkpoint import LoadedCheckpoint, uncompiled_state_dict, unwrap
from .policy.tcg_policy import TCGPolicy

REWARD_KEYS = (("env", "reward_shaping"), ("train", "gamma"))
# Collapse thresholds of the health probe.
ENTROPY_ABS_MIN = 0.01
ENTROPY_REL_MIN = 0.1
NOOP_ABS_MAX = 0.9
NOOP_REL_MAX = 0.3


@dataclass
class ResumeOptions:
    checkpoint: str            # a path, or "latest"
    load_optimizer: bool = False
    strict: bool = False
    auto_reset_critic: bool = True


# ---- capture --------------------------------------------------------------------------------
def _numpy_rng_state() -> dict:
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}


def _set_numpy_rng_state(s: dict) -> None:
    np.random.set_state((s["kind"], s["keys"].numpy().astype(np.uint32), s["pos"], s["has_gauss"],
                         s["cached_gaussian"]))


def capture_state(trainer) -> dict:
    """Everything a checkpoint holds about the trainer (checkpoint.save_checkpoint adds the
    format, fingerprint and run name)."""
    from .anneal import anneal_values
    env_state = trainer.env.get_state() if trainer.obs is not None else None
    if env_state is not None:
        env_state["buffers"] = {k: torch.from_numpy(v) for k, v in env_state["buffers"].items()}
    metrics = {k: float(v) for k, v in (trainer.last_metrics or {}).items() if isinstance(v, (int, float))}
    return {
        "policy": uncompiled_state_dict(trainer.policy),
        "policy_config": trainer.policy_config.to_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "global_step": int(trainer.global_step),
        "epoch": int(trainer.epoch),
        "anneal_offset": int(trainer.anneal_offset),
        "anneal": anneal_values(trainer.anneals, trainer.global_step, trainer.total_steps, trainer.anneal_offset),
        "sampling_params": trainer.sampler.get_sampling_params(),
        "rng": {"python": random.getstate(), "numpy": _numpy_rng_state(), "torch": torch.get_rng_state(),
                "generator": trainer.generator.get_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None},
        "run_state": {
            "num_agents": int(trainer.env.num_agents),
            "env": env_state,            # None before the first rollout, or with the multiprocessing backend
            "state_h": trainer.state_h.detach().cpu().clone(),
            "state_c": trainer.state_c.detach().cpu().clone(),
            "episode_start": torch.from_numpy(trainer.episode_start.copy()),
            "actions": torch.from_numpy(trainer.actions.copy()),
        },
        "metrics": metrics,
        "health": {"entropy": metrics.get("sampler/rollout_entropy"),
                   "noop_rate": metrics.get("sampler/rollout_noop_rate")},
        "league": league_state(trainer),
        "normalizer": None,   # no observation/reward normaliser exists (fixed feature scales)
        "config": trainer.cfg.to_dict(),
        "resumed_from": str(trainer.resumed_from) if trainer.resumed_from else None,
    }


def league_state(trainer) -> dict | None:
    """The league's manager state (pool, ratings, payoff; also saved as league_state.json) and
    its per-game matchups and opponent LSTM states; None without a league."""
    if trainer.league is None:
        return None
    manager = trainer.league.manager
    manager.save()
    return {"manager": manager.state_dict(), "league": trainer.league.state_dict(),
            "state_file": str(manager.state_path)}


def restore_league(trainer, state: dict | None, exact: bool, log) -> None:
    """Pool, ratings and payoff always; running matchups only with the exact run state."""
    if trainer.league is None:
        if state is not None:
            log("[resume] note: the checkpoint has league state but [league] enable is false: ignored")
        return
    if state is None:
        log("[resume] note: the checkpoint has no league state: the league starts empty")
        return
    trainer.league.manager.load_state_dict(state["manager"])
    trainer.league.manager.save()
    trainer.league.sync_pool()
    if exact:
        trainer.league.load_state_dict(state["league"])


# ---- restore -----------------------------------------------------------------------------------
def _restore_run_state(trainer, run: dict, log) -> bool:
    """Engine, env buffers, LSTM state and episode flags; False (with a warning) if they do not fit."""
    if run["num_agents"] != trainer.env.num_agents:
        log(f"[resume] WARNING: the checkpoint ran {run['num_agents']} rows, this run {trainer.env.num_agents}: "
            "games restart from fresh deals (the continuation is not exact)")
        return False
    if run["env"] is None:
        log("[resume] WARNING: the checkpoint holds no engine state (saved before the first rollout or from the "
            "multiprocessing backend): games restart from fresh deals (the continuation is not exact)")
        return False
    env_state = dict(run["env"], buffers={k: v.numpy() for k, v in run["env"]["buffers"].items()})
    try:
        trainer.obs = trainer.env.set_state(env_state, trainer.cfg.base.seed)
    except ValueError as err:
        trainer.obs = None
        log(f"[resume] WARNING: engine state not restored ({err}): games restart from fresh deals "
            "(the continuation is not exact)")
        return False
    trainer.state_h.copy_(run["state_h"])
    trainer.state_c.copy_(run["state_c"])
    trainer.episode_start[:] = run["episode_start"].numpy()
    trainer.actions[:] = run["actions"].numpy()
    return True


def _restore_rng(rng: dict, trainer) -> None:
    random.setstate(rng["python"])
    _set_numpy_rng_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    trainer.generator.set_state(rng["generator"])
    if rng.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])


def reset_value_head(policy: torch.nn.Module) -> None:
    """Re-initialise the value head exactly as a new policy's (TCGPolicy's own init)."""
    module = unwrap(policy)
    fresh = TCGPolicy(module.config)
    module.value_head.load_state_dict(fresh.value_head.state_dict())


def reward_changes(stored_config: dict, cfg) -> list[str]:
    out = []
    for section, key in REWARD_KEYS:
        old = (stored_config.get(section) or {}).get(key)
        new = getattr(getattr(cfg, section), key)
        if old != new:
            out.append(f"[{section}] {key} {old!r} -> {new!r}")
    return out


def config_changes(stored: dict, current: dict) -> list[str]:
    out = []
    for section in sorted(set(stored) | set(current)):
        a, b = stored.get(section) or {}, current.get(section) or {}
        out += [f"[{section}] {k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return out


def apply_resume(trainer, loaded: LoadedCheckpoint, options: ResumeOptions, log=print) -> None:
    """Loads a validated checkpoint (checkpoint.load_checkpoint) into a freshly built trainer."""
    s = loaded.state
    unwrap(trainer.policy).load_state_dict(s["policy"], strict=True)
    trainer.resumed_from = loaded.path
    for note in loaded.notes:
        log(f"[resume] note: {note}")
    differs = [c for c in config_changes(s.get("config") or {}, trainer.cfg.to_dict())
               if not c.startswith(("[base] experiments_dir", "[wandb]"))]
    if differs:
        more = f" (+{len(differs) - 8} more)" if len(differs) > 8 else ""
        log(f"[resume] note: config differs from the checkpoint's: {'; '.join(differs[:8])}{more}"
            f"{' - the continuation follows the new config' if options.load_optimizer else ''}")
    changes = reward_changes(s.get("config") or {}, trainer.cfg)
    if options.load_optimizer:
        if "optimizer" not in s or "scheduler" not in s:
            raise ValueError(f"checkpoint {loaded.path} holds no optimizer/scheduler state")
        trainer.optimizer.load_state_dict(s["optimizer"])
        trainer.scheduler.load_state_dict(s["scheduler"])
        trainer.global_step, trainer.epoch = int(s["global_step"]), int(s["epoch"])
        trainer.anneal_offset = int(s.get("anneal_offset") or 0)
        exact = _restore_run_state(trainer, s["run_state"], log) if "run_state" in s else False
        if "rng" in s:
            _restore_rng(s["rng"], trainer)
        restore_league(trainer, s.get("league"), exact, log)
        log(f"[resume] {loaded.path}: weights, optimizer, LR scheduler and run state restored at epoch "
            f"{trainer.epoch}, global_step {trainer.global_step} (anneal_offset {trainer.anneal_offset}"
            f"{'; exact continuation' if exact else ''})")
        if changes:
            log(f"[resume] note: the reward definition changed ({'; '.join(changes)}); the value head is kept "
                "because the optimizer state was restored with it")
    else:
        trainer.global_step, trainer.epoch = 0, 0
        trainer.anneal_offset = loaded.anneal_step
        restore_league(trainer, s.get("league"), False, log)
        log(f"[resume] {loaded.path}: weights only; global_step starts at 0, anneals continue from the "
            f"checkpoint's step: anneal_offset = {trainer.anneal_offset}")
        if changes and options.auto_reset_critic:
            reset_value_head(trainer.policy)
            log(f"[resume] the reward definition changed ({'; '.join(changes)}): value head re-initialised "
                "(--no-resume-auto-reset-critic keeps it)")
        elif changes:
            log(f"[resume] the reward definition changed ({'; '.join(changes)}); value head kept "
                "(--no-resume-auto-reset-critic)")
    health = s.get("health") or {}
    trainer.resume_probe = {"entropy": health.get("entropy"), "noop_rate": health.get("noop_rate")}


# ---- health probe ----------------------------------------------------------------------------------
def health_problems(entropy: float, noop_rate: float, stored_entropy: float | None,
                    stored_noop_rate: float | None) -> list[str]:
    """Signs of collapse: entropy below 0.1 x the stored value or below 0.01; noop (pass) rate
    above max(0.9, stored + 0.3)."""
    problems = []
    if entropy < ENTROPY_ABS_MIN or (stored_entropy is not None and entropy < ENTROPY_REL_MIN * stored_entropy):
        problems.append(f"entropy {entropy:.4g} (checkpoint {_fmt(stored_entropy)}; collapse below "
                        f"max({ENTROPY_ABS_MIN}, {ENTROPY_REL_MIN} x checkpoint))")
    limit = max(NOOP_ABS_MAX, (stored_noop_rate or 0.0) + NOOP_REL_MAX)
    if noop_rate > limit:
        problems.append(f"noop rate {noop_rate:.3f} (checkpoint {_fmt(stored_noop_rate)}; collapse above {limit:.2f})")
    return problems


def _fmt(v) -> str:
    return "unknown" if v is None else f"{v:.4g}"


def probe_metrics(stored: dict, metrics: dict, log=print) -> dict:
    """`resume/*` metrics from the first post-resume rollout's metrics; warns loudly on collapse."""
    entropy, noop = metrics["sampler/rollout_entropy"], metrics["sampler/rollout_noop_rate"]
    out = {"resume/entropy": entropy, "resume/noop_rate": noop}
    if stored.get("entropy") is not None:
        out["resume/stored_entropy"] = float(stored["entropy"])
    if stored.get("noop_rate") is not None:
        out["resume/stored_noop_rate"] = float(stored["noop_rate"])
    problems = health_problems(entropy, noop, stored.get("entropy"), stored.get("noop_rate"))
    if problems:
        bar = "!" * 100
        text = (f"{bar}\n[resume] WARNING: the policy looks COLLAPSED after resume: {'; '.join(problems)}.\n"
                "[resume] Check the source-hash warnings, the sampler settings (temperatures, smoothing) and the "
                "checkpoint itself before training on.\n" + bar)
        log(text)
        if log is print:
            print(text, file=sys.stderr)
    else:
        log(f"[resume] health probe ok: entropy {entropy:.3f} (checkpoint {_fmt(stored.get('entropy'))}), "
            f"noop rate {noop:.3f} (checkpoint {_fmt(stored.get('noop_rate'))})")
    out["resume/collapsed"] = float(bool(problems))
    return out
