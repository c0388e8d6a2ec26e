"""Resume policy: how a checkpoint is applied to a freshly built trainer, and the post-resume
health probe. (The file format and its validation are the checkpoint package's; the run state itself is
`Trainer.state_dict()` / `load_state_dict()`.)

With --resume-load-optimizer the whole run state comes back, so on CPU with the native or
serial backend training N epochs, saving and resuming for M more is bit-identical to N + M
epochs straight: weights, optimizer, LR scheduler, global_step, epoch, anneal offset, the RNG
streams, every game's engine state with the env buffers, the per-row LSTM state, the
episode-start flags and the league's running matchups.

Without it only the weights are loaded: global_step starts at 0 and the anneals continue from
the checkpoint's step through `trainer.anneal_offset`. If the reward definition changed
([env] reward_shaping, [train] gamma) the value head is re-initialised (unless
--no-resume-auto-reset-critic), since its targets no longer mean the same thing.

The health probe: the first epoch after a resume logs `resume/entropy`, `resume/noop_rate` and
the checkpoint's `resume/stored_*` values, and warns loudly when the policy looks collapsed
(resumed policies have been seen to collapse to entropy ~1e-5 and 99 % pass when the sampler
settings or the sources changed under them).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import CheckpointError, FieldError, LoadedCheckpoint
from .game import family_of
from .opponent_side import Origin
from .policy.family import Policy, unwrap
from .trainer import Trainer

REWARD_KEYS = (("env", "reward_shaping"), ("train", "gamma"))
# Collapse thresholds of the health probe.
ENTROPY_ABS_MIN = 0.01
ENTROPY_REL_MIN = 0.1
NOOP_ABS_MAX = 0.9
NOOP_REL_MAX = 0.3


@dataclass
class ResumeOptions:
    checkpoint: str  # a path, or "latest"
    load_optimizer: bool = False
    strict: bool = False
    auto_reset_critic: bool = True
    accept_fresh_deals: bool = False  # with load_optimizer: a rejected engine state restarts the games
    allow_missing_members: bool = False  # league members whose files are gone leave the pool (warned)


def reset_value_head(policy: Policy, seed: int) -> None:
    """Re-initialise the value head exactly as a new policy of this run's seed has it."""
    module = unwrap(policy)
    fresh = family_of(module.config.to_dict()).build(module.config, seed)
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
        out += [
            f"[{section}] {k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
        ]
    return out


@contextmanager
def named_field_errors(loaded: LoadedCheckpoint):
    """A FieldError raised while the state is applied (the league's, whose contents are checked
    where the league reads them) becomes a refusal naming the file and the field."""
    try:
        yield
    except FieldError as err:
        raise CheckpointError(f"checkpoint {loaded.path} is damaged: {err}") from None


def apply_resume(trainer: Trainer, loaded: LoadedCheckpoint, options: ResumeOptions, log=print) -> None:
    """Loads a validated checkpoint (checkpoint.load_checkpoint) into a freshly built trainer."""
    s = loaded.state
    for note in loaded.notes:
        log(f"[resume] note: {note}")
    differs = [
        c
        for c in config_changes(s.get("config") or {}, trainer.cfg.to_dict())
        if not c.startswith(("[base] experiments_dir", "[wandb]"))
    ]
    if differs:
        more = f" (+{len(differs) - 8} more)" if len(differs) > 8 else ""
        log(
            f"[resume] note: config differs from the checkpoint's: {'; '.join(differs[:8])}{more}"
            f"{' - the continuation follows the new config' if options.load_optimizer else ''}"
        )
    changes = reward_changes(s.get("config") or {}, trainer.cfg)
    origin = Origin(Path(loaded.path), options.allow_missing_members, loaded.global_step)
    if options.load_optimizer:
        with named_field_errors(loaded):
            required = not options.accept_fresh_deals
            exact = trainer.load_state_dict(s, log, origin, strict=required)
        log(
            f"[resume] {loaded.path}: weights, optimizer, LR scheduler and run state restored at epoch "
            f"{trainer.epoch}, global_step {trainer.global_step} (anneal_offset {trainer.anneal_offset}"
            f"{'; exact continuation' if exact else ''})"
        )
        if changes:
            log(
                f"[resume] note: the reward definition changed ({'; '.join(changes)}); the value head is kept "
                "because the optimizer state was restored with it"
            )
    else:
        with named_field_errors(loaded):
            trainer.load_weights(s, loaded.anneal_step, log, origin)
        log(
            f"[resume] {loaded.path}: weights only; global_step starts at 0, anneals continue from the "
            f"checkpoint's step: anneal_offset = {trainer.anneal_offset}"
        )
        if changes and options.auto_reset_critic:
            reset_value_head(trainer.policy, trainer.cfg.base.seed)
            log(
                f"[resume] the reward definition changed ({'; '.join(changes)}): value head re-initialised "
                "(--no-resume-auto-reset-critic keeps it)"
            )
        elif changes:
            log(
                f"[resume] the reward definition changed ({'; '.join(changes)}); value head kept "
                "(--no-resume-auto-reset-critic)"
            )
    health = s.get("health") or {}
    trainer.add_epoch_hook(HealthProbe(health.get("entropy"), health.get("noop_rate"), log))


# ---- health probe ----------------------------------------------------------------------------------
def health_problems(
    entropy: float, noop_rate: float, stored_entropy: float | None, stored_noop_rate: float | None
) -> list[str]:
    """Signs of collapse: entropy below 0.1 x the stored value or below 0.01; noop (pass) rate
    above max(0.9, stored + 0.3)."""
    problems = []
    if entropy < ENTROPY_ABS_MIN or (stored_entropy is not None and entropy < ENTROPY_REL_MIN * stored_entropy):
        problems.append(
            f"entropy {entropy:.4g} (checkpoint {_fmt(stored_entropy)}; collapse below "
            f"max({ENTROPY_ABS_MIN}, {ENTROPY_REL_MIN} x checkpoint))"
        )
    limit = max(NOOP_ABS_MAX, (stored_noop_rate or 0.0) + NOOP_REL_MAX)
    if noop_rate > limit:
        problems.append(f"noop rate {noop_rate:.3f} (checkpoint {_fmt(stored_noop_rate)}; collapse above {limit:.2f})")
    return problems


def _fmt(v) -> str:
    return "unknown" if v is None else f"{v:.4g}"


class HealthProbe:
    """An epoch hook that probes once, on the first epoch after a resume (then adds nothing)."""

    def __init__(self, entropy: float | None, noop_rate: float | None, log=print):
        self.stored, self.log, self.done = {"entropy": entropy, "noop_rate": noop_rate}, log, False

    def __call__(self, metrics: dict) -> dict:
        if self.done:
            return {}
        self.done = True
        return probe_metrics(self.stored, metrics, self.log)


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
        text = (
            f"{bar}\n[resume] WARNING: the policy looks COLLAPSED after resume: {'; '.join(problems)}.\n"
            "[resume] Check the source-hash warnings, the sampler settings (temperatures, smoothing) and the "
            "checkpoint itself before training on.\n" + bar
        )
        log(text)
        if log is print:
            print(text, file=sys.stderr)
    else:
        log(
            f"[resume] health probe ok: entropy {entropy:.3f} (checkpoint {_fmt(stored.get('entropy'))}), "
            f"noop rate {noop:.3f} (checkpoint {_fmt(stored.get('noop_rate'))})"
        )
    out["resume/collapsed"] = float(bool(problems))
    return out
