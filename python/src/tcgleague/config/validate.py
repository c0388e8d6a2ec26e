"""Config validation: impossible values and combinations, each named by `[section] key` with a
valid value (`validate`, which runs one small validator per section, in VALIDATORS order; the
[league] ones live in validate_league.py), and the files a config points at (`check_files`: the
game's data files, such as Emberfront's deck pool, and the experiments directory), checked before a run creates anything."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import torch

from ..game import GAME_NAMES, every_game, game_named
from ..rows import ROWS_PER_GAME
from .sections import (
    ANNEALS,
    CHECKPOINT_UNITS,
    COMPILE_MODES,
    DIST_BACKENDS,
    INDEX_LIMIT,
    LR_SCHEDULES,
    MAGNET_KINDS,
    MAX_DIST_TIMEOUT,
    NAN_POLICIES,
    PRECISIONS,
    SWITCHES,
    UPDATE_RULES,
    VEC_BACKENDS,
    WANDB_MODES,
    Config,
    ConfigError,
    anneal_key,
)
from .validate_league import Check, validate_league_mix, validate_league_pool

# Upper bounds past which a value is a typo, and would crash or hang rather than fail cleanly.
MAX_THREADS = max(64, 4 * (os.cpu_count() or 1))  # torch / OpenMP threads: thousands exhaust the process
MAX_TURN_CAP = 1000  # the engine counts turns in int16; real games end within ~40 turns
MAX_WIDTH = 8192  # policy widths: 8192 already needs gigabytes per layer
MAX_ATTENTION_LAYERS = 8  # [policy] entity_attention_layers (a checkpoint's too)
MAX_TIMESTEPS = 10**15

# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _nearest_divisor(n: int, near: int, multiple_of: int = 1) -> int | None:
    """The divisor of n that is a multiple of `multiple_of` closest to `near` (None if none)."""
    best = None
    for d in range(multiple_of, n + 1, multiple_of):
        if n % d == 0 and (best is None or abs(d - near) < abs(best - near)):
            best = d
    return best


def cuda_devices() -> int:
    """CUDA devices torch can use here (0 on a machine without CUDA, whatever nvcc says)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def validate(cfg: Config) -> None:
    """Runs every section's checks in a fixed order and raises one ConfigError listing all the
    failures, so a user fixes a config in one pass rather than one error per run."""
    errors: list[str] = []

    def check(ok: bool, section: str, key: str, msg: str) -> None:
        if not ok:
            value = getattr(getattr(cfg, section), key)
            errors.append(f"[{section}] {key} = {value!r}: {msg}")

    for validator in VALIDATORS:
        validator(cfg, check)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))


def validate_base(cfg: Config, check: Check) -> None:
    """[base]: names that become paths, and a device this machine actually has."""
    b = cfg.base
    check(
        bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", b.run_name)),
        "base",
        "run_name",
        "must be a plain name: letters, digits, '.', '_' or '-', starting with a letter or digit "
        "(it names the run's directory and files; e.g. emberfront)",
    )
    check(0 <= b.seed < 2**32, "base", "seed", "must be in [0, 2**32) (e.g. 1)")
    device_ok = bool(re.fullmatch(r"auto|cpu|cuda|cuda:\d+", b.device))
    check(device_ok, "base", "device", "must be auto, cpu, cuda or cuda:N (e.g. auto)")
    if device_ok and b.device not in ("auto", "cpu"):
        check(
            cuda_devices() > int(b.device.partition(":")[2] or 0),
            "base",
            "device",
            f"this machine has {cuda_devices()} CUDA device(s) visible to torch {torch.__version__}; valid here: "
            + ", ".join(["auto", "cpu", *(f"cuda:{k}" for k in range(cuda_devices()))]),
        )
    check(
        0 <= b.torch_threads <= MAX_THREADS,
        "base",
        "torch_threads",
        f"must be in [0, {MAX_THREADS}] (0 = torch default; this machine has {os.cpu_count()} cores)",
    )
    check(bool(b.experiments_dir.strip()), "base", "experiments_dir", "must not be empty (e.g. experiments)")


def validate_env(cfg: Config, check: Check) -> None:
    """[env]: sizes the engine can hold (int16 turns, int32 row indices)."""
    e = cfg.env
    check(e.game in GAME_NAMES, "env", "game", f"must be one of {', '.join(GAME_NAMES)}")
    check(e.num_games >= 1, "env", "num_games", "must be >= 1 (e.g. 1024)")
    limit = INDEX_LIMIT // ROWS_PER_GAME  # its rows' indices travel as int32
    check(e.num_games < limit, "env", "num_games", f"must be < {limit} (e.g. 1024)")
    check(1 <= e.turn_cap <= MAX_TURN_CAP, "env", "turn_cap", f"must be in [1, {MAX_TURN_CAP}] (e.g. 30)")
    check(
        1 <= e.num_threads <= MAX_THREADS,
        "env",
        "num_threads",
        f"must be in [1, {MAX_THREADS}] (e.g. 1, or the cores you can spare: this machine has {os.cpu_count()})",
    )
    check(e.overlap in SWITCHES, "env", "overlap", f"must be one of {', '.join(SWITCHES)} (auto = on for cuda)")
    if e.overlap == "true":
        check(cfg.vec.backend == "native", "env", "overlap", "true needs [vec] backend = native (one engine)")
        check(e.num_games >= 2, "env", "overlap", "true needs [env] num_games >= 2 (two halves)")
        overlapping = [game.name for game in every_game() if game.overlaps]
        check(
            e.game not in GAME_NAMES or game_named(e.game).overlaps,
            "env",
            "overlap",
            f"true needs [env] game = {' | '.join(overlapping)} (an env that steps half its games)",
        )


def validate_game_keys(cfg: Config, check: Check) -> None:
    """Another game's own keys (`Game.own_keys`) in this game's config: refused when changed from
    their defaults, rather than silently run without them."""
    if cfg.env.game not in GAME_NAMES:
        return
    defaults = Config()
    mine = set(game_named(cfg.env.game).own_keys)
    for game in every_game():
        for section, key in set(game.own_keys) - mine:
            check(
                getattr(getattr(cfg, section), key) == getattr(getattr(defaults, section), key),
                section,
                key,
                f"only [env] game = {game.name} reads it; [env] game = {cfg.env.game} would ignore it (remove it)",
            )


def validate_vec(cfg: Config, check: Check) -> None:
    """[vec]: a backend and an env/worker split it can run."""
    v = cfg.vec
    check(v.backend in VEC_BACKENDS, "vec", "backend", f"must be one of {', '.join(VEC_BACKENDS)}")
    check(v.num_envs >= 1, "vec", "num_envs", "must be >= 1 (e.g. 1)")
    check(v.num_workers >= 1, "vec", "num_workers", "must be >= 1 (e.g. 1)")
    check(
        v.backend != "native" or v.num_envs == 1,
        "vec",
        "num_envs",
        "must be 1 with backend = native (one env object steps every game); use backend = serial or "
        "multiprocessing for several env objects",
    )
    if v.backend == "multiprocessing" and v.num_envs >= 1 and v.num_workers >= 1:
        check(
            v.num_envs % v.num_workers == 0,
            "vec",
            "num_workers",
            f"must divide [vec] num_envs = {v.num_envs} (e.g. num_workers = "
            f"{_nearest_divisor(v.num_envs, v.num_workers)})",
        )


def validate_policy(cfg: Config, check: Check) -> None:
    """[policy]: widths that fit in memory, positive temperatures, smoothing below 1."""
    p = cfg.policy
    for key in ("card_embed_dim", "entity_dim", "hidden_size"):
        check(1 <= getattr(p, key) <= MAX_WIDTH, "policy", key, f"must be in [1, {MAX_WIDTH}] (e.g. 64)")
    check(
        0 <= p.entity_attention_layers <= MAX_ATTENTION_LAYERS,
        "policy",
        "entity_attention_layers",
        f"must be in [0, {MAX_ATTENTION_LAYERS}] (e.g. 1)",
    )
    check(
        0 <= p.legal_scorer_dim <= MAX_WIDTH,
        "policy",
        "legal_scorer_dim",
        f"must be in [0, {MAX_WIDTH}] (0 = the autoregressive heads; e.g. 64)",
    )
    check(
        0 <= p.legal_effect_dim <= MAX_WIDTH,
        "policy",
        "legal_effect_dim",
        f"must be in [0, {MAX_WIDTH}] (0 = the legal scorer ignores what each action does; e.g. 16)",
    )
    for key in ("primary_temperature", "subaction_temperature_initial", "subaction_temperature_final"):
        check(getattr(p, key) > 0, "policy", key, "temperatures must be > 0 (e.g. 1.0)")
    for key in ("smoothing_eps_initial", "smoothing_eps_final"):
        check(0 <= getattr(p, key) < 1, "policy", key, "must be in [0, 1) (e.g. 0.05)")


def validate_train_sizes(cfg: Config, check: Check) -> None:
    """[train] counts: positive, within float32-exact range, and a batch that splits evenly
    into minibatches of whole BPTT segments."""
    t = cfg.train
    for key, example in (
        ("total_timesteps", 10_000_000),
        ("batch_size", 32768),
        ("minibatch_size", 4096),
        ("bptt_horizon", 16),
        ("update_epochs", 1),
        ("eval_games", 512),
    ):
        check(getattr(t, key) >= 1, "train", key, f"must be >= 1 (e.g. {example})")
    check(t.batch_size < INDEX_LIMIT, "train", "batch_size", f"must be < {INDEX_LIMIT} (e.g. 32768)")
    check(t.total_timesteps <= MAX_TIMESTEPS, "train", "total_timesteps", f"must be <= {MAX_TIMESTEPS:.0e} (e.g. 1e9)")
    if t.batch_size >= 1 and t.minibatch_size >= 1 and t.bptt_horizon >= 1:
        _check_batch_split(cfg, check)


def _check_batch_split(cfg: Config, check: Check) -> None:
    """batch_size % minibatch_size and minibatch_size % bptt_horizon, each with a fix that works."""
    t = cfg.train
    if t.batch_size % t.minibatch_size != 0:
        sugg = _nearest_divisor(t.batch_size, t.minibatch_size, t.bptt_horizon)
        hint = (
            f"e.g. minibatch_size = {sugg}"
            if sugg is not None
            else f"e.g. batch_size = {-(-t.batch_size // t.minibatch_size) * t.minibatch_size}"
        )
        check(
            False,
            "train",
            "minibatch_size",
            f"[train] batch_size = {t.batch_size} must be divisible by minibatch_size ({hint})",
        )
    if t.minibatch_size % t.bptt_horizon != 0:
        sugg = _nearest_divisor(t.batch_size, t.minibatch_size, t.bptt_horizon)
        hint = (
            f"e.g. minibatch_size = {sugg}"
            if sugg is not None
            else f"e.g. bptt_horizon = {_nearest_divisor(t.minibatch_size, t.bptt_horizon)}"
        )
        check(
            False,
            "train",
            "bptt_horizon",
            f"[train] minibatch_size = {t.minibatch_size} must be divisible by bptt_horizon ({hint})",
        )


def validate_train_options(cfg: Config, check: Check) -> None:
    """[train] optimiser coefficients, named choices and checkpoint/eval cadence."""
    t = cfg.train
    check(t.learning_rate > 0, "train", "learning_rate", "must be > 0 (e.g. 3e-4)")
    check(t.lr_schedule in LR_SCHEDULES, "train", "lr_schedule", f"must be one of {', '.join(LR_SCHEDULES)}")
    check(0 < t.gamma <= 1, "train", "gamma", "must be in (0, 1] (e.g. 0.99)")
    check(0 <= t.gae_lambda <= 1, "train", "gae_lambda", "must be in [0, 1] (e.g. 0.95)")
    check(t.clip_coef > 0, "train", "clip_coef", "must be > 0 (e.g. 0.2)")
    check(t.vf_clip_coef > 0, "train", "vf_clip_coef", "must be > 0 (e.g. 0.2)")
    check(t.vf_coef >= 0, "train", "vf_coef", "must be >= 0 (e.g. 0.5)")
    check(t.max_grad_norm > 0, "train", "max_grad_norm", "must be > 0 (e.g. 0.5)")
    check(t.adam_eps > 0, "train", "adam_eps", "must be > 0 (e.g. 1e-5)")
    for key in ("ent_coef_initial", "ent_coef_final", "magnet_coef_initial", "magnet_coef_final"):
        check(getattr(t, key) >= 0, "train", key, "must be >= 0 (e.g. 0.01)")
    for key in ("lr_scale_initial", "lr_scale_final"):
        check(0 < getattr(t, key) <= 1, "train", key, "must be in (0, 1] (e.g. 0.25): a factor on learning_rate")
    check(t.magnet in MAGNET_KINDS, "train", "magnet", f"must be one of {', '.join(MAGNET_KINDS)}")
    check(t.magnet_interval >= 1, "train", "magnet_interval", "must be >= 1 learner steps (e.g. 1000000)")
    staged = t.magnet == "frozen" and max(t.magnet_coef_initial, t.magnet_coef_final) > 0
    why = "magnet_stage restarts the rate with each frozen magnet: it needs magnet = frozen and magnet_coef > 0"
    check(t.lr_schedule != "magnet_stage" or staged, "train", "lr_schedule", why)
    check(0 < t.magnet_ema <= 1, "train", "magnet_ema", "must be in (0, 1] (e.g. 0.01)")
    check(t.update_rule in UPDATE_RULES, "train", "update_rule", f"must be one of {', '.join(UPDATE_RULES)}")
    check(0 < t.neurd_min_prob <= 1, "train", "neurd_min_prob", "must be in (0, 1] (e.g. 0.05)")
    check(0 <= t.explore_share < 1, "train", "explore_share", "must be in [0, 1) (0 = off; e.g. 0.05)")
    why = "must be 0 (a uniform draw) or >= 1 (the policy's draw, flattened; e.g. 3)"
    check(t.explore_temperature == 0 or t.explore_temperature >= 1, "train", "explore_temperature", why)
    check(t.own_reach_cap == 0 or t.own_reach_cap >= 1, "train", "own_reach_cap", "must be 0 (off) or >= 1 (e.g. 5)")
    check(t.average_snapshots >= 0, "train", "average_snapshots", "must be >= 0 (0 = no average policy; e.g. 16)")
    check(t.average_interval >= 1, "train", "average_interval", "must be >= 1 learner steps (e.g. 250000)")
    check(
        t.average_start >= 0, "train", "average_start", "must be >= 0 learner steps (0 = from the start; e.g. 500000)"
    )
    check(t.compile in SWITCHES, "train", "compile", f"must be one of {', '.join(SWITCHES)} (auto = on for cuda)")
    check(t.precision in PRECISIONS, "train", "precision", f"must be one of {', '.join(PRECISIONS)}")
    check(t.nan_policy in NAN_POLICIES, "train", "nan_policy", f"must be one of {', '.join(NAN_POLICIES)}")
    check(t.compile_mode in COMPILE_MODES, "train", "compile_mode", f"must be one of {', '.join(COMPILE_MODES)}")
    check(t.checkpoint_interval >= 1, "train", "checkpoint_interval", "must be >= 1 (e.g. 50)")
    check(
        t.checkpoint_interval_unit in CHECKPOINT_UNITS,
        "train",
        "checkpoint_interval_unit",
        f"must be one of {', '.join(CHECKPOINT_UNITS)}",
    )
    check(t.max_checkpoints >= 1, "train", "max_checkpoints", "must be >= 1 (e.g. 5)")
    check(t.eval_interval >= 0, "train", "eval_interval", "must be >= 0 (0 = off; e.g. 25)")


def validate_anneals(cfg: Config, check: Check) -> None:
    """Every anneal: fracs in [0, 1], steps >= 0 or none, and a start no later than its end once
    steps and fracs are resolved against [train] total_timesteps (as LinearAnneal.bounds does)."""
    total = cfg.train.total_timesteps
    for name, section in ANNEALS.items():
        sec = getattr(cfg, section)
        sf, ef, ss, es = (anneal_key(name, f) for f in ("start_frac", "end_frac", "start_step", "end_step"))
        for key in (sf, ef):
            check(0 <= getattr(sec, key) <= 1, section, key, "must be in [0, 1] (e.g. 0.5)")
        for key in (ss, es):
            val = getattr(sec, key)
            check(val is None or val >= 0, section, key, "must be >= 0 or none (e.g. none)")
        check(
            getattr(sec, sf) <= getattr(sec, ef), section, sf, f"must be <= {ef} = {getattr(sec, ef)} (e.g. {sf} = 0.0)"
        )
        start = getattr(sec, ss) if getattr(sec, ss) is not None else getattr(sec, sf) * total
        end = getattr(sec, es) if getattr(sec, es) is not None else getattr(sec, ef) * total
        if (getattr(sec, ss) is not None or getattr(sec, es) is not None) and start > end:
            key = ss if getattr(sec, ss) is not None else es
            check(
                False,
                section,
                key,
                f"anneal start ({start:g}) is after its end ({end:g}) with [train] "
                f"total_timesteps = {total}; set {ss} <= {es} (e.g. {ss} = 0)",
            )


def validate_dist(cfg: Config, check: Check) -> None:
    """[dist]: a backend that matches [base] device, and a timeout that catches a hung rank."""
    d = cfg.dist
    check(d.backend in DIST_BACKENDS, "dist", "backend", f"must be one of {', '.join(DIST_BACKENDS)}")
    check(
        d.backend != "nccl" or cfg.base.device != "cpu",
        "dist",
        "backend",
        "nccl needs CUDA devices: use gloo (or auto) with [base] device = cpu",
    )
    check(
        1 <= d.timeout_seconds <= MAX_DIST_TIMEOUT,
        "dist",
        "timeout_seconds",
        f"must be in [1, {MAX_DIST_TIMEOUT}] (seconds a collective may wait; e.g. 900)",
    )


def validate_wandb(cfg: Config, check: Check) -> None:
    """[wandb]: a known mode, and a project to log to when enabled."""
    w = cfg.wandb
    check(w.mode in WANDB_MODES, "wandb", "mode", f"must be one of {', '.join(WANDB_MODES)}")
    check(
        not w.enable or bool(w.project.strip()),
        "wandb",
        "project",
        "must not be empty when W&B is enabled (e.g. tcgleague)",
    )


# The order errors are listed in.
VALIDATORS: tuple[Callable[[Config, Check], None], ...] = (
    validate_base,
    validate_env,
    validate_game_keys,
    validate_vec,
    validate_policy,
    validate_train_sizes,
    validate_train_options,
    validate_anneals,
    validate_league_mix,
    validate_league_pool,
    validate_dist,
    validate_wandb,
)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_files(cfg: Config) -> None:
    """The files and folders the config names: the game's data (Emberfront's deck pool must parse),
    and the experiments directory must be (or be creatable as) a writable directory."""
    game = game_named(cfg.env.game)
    errors: list[str] = game.check_files(cfg) if game.check_files else []
    experiments = Path(cfg.base.experiments_dir)
    existing = _nearest_existing(experiments.absolute())
    if not existing.is_dir():
        errors.append(
            f"[base] experiments_dir = {cfg.base.experiments_dir!r}: {existing} is a file, not a directory "
            "(e.g. experiments_dir = experiments)"
        )
    elif not os.access(existing, os.W_OK | os.X_OK):
        errors.append(f"[base] experiments_dir = {cfg.base.experiments_dir!r}: {existing} is not writable")
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
