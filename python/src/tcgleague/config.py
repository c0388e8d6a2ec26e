"""Run configuration: `.ini` files (PufferLib convention) parsed into dataclasses, plus CLI
overrides.

Sections: [base] [env] [vec] [policy] [train] [league] [wandb]. Each section is a dataclass
below; a key is one annotated field with its default, so adding a key is a one-line change
(add a validation line in `_validate` if it has constraints).

    cfg = load_config("configs/smoke.ini", ["--train.learning-rate", "1e-3",
                                            "--train.compile=False"])

Keys may be written with dashes or underscores, in files and on the command line. Values are
coerced to the field's type: booleans accept true/false/1/0/yes/no/on/off (any case),
`Optional[int]` fields accept `none`/`null`/empty, ints accept `10_000_000` and integral
floats such as `1e7`. Unknown sections or keys, badly typed values and impossible
combinations raise `ConfigError` naming `[section] key` and a valid value.
"""
from __future__ import annotations

import configparser
import dataclasses
import difflib
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional


class ConfigError(ValueError):
    """A config file or override is malformed, unknown or inconsistent."""


# --------------------------------------------------------------------------------------------
# Sections. One annotated field per key; the default is the value used when no file/override
# sets it.
# --------------------------------------------------------------------------------------------


@dataclass
class BaseConfig:
    run_name: str = "emberfront"
    seed: int = 1
    device: str = "cpu"  # cpu | cuda | cuda:N
    torch_threads: int = 0  # 0 = leave torch's default
    experiments_dir: str = "experiments"


@dataclass
class EnvConfig:
    num_games: int = 1024
    turn_cap: int = 30
    reward_shaping: float = 0.0
    deck_pool: str = ""  # "" = uniform starter decks; else a JSON path


@dataclass
class VecConfig:
    backend: str = "native"  # native | serial | multiprocessing
    num_envs: int = 1
    num_workers: int = 1


@dataclass
class PolicyConfig:
    card_embed_dim: int = 32
    entity_dim: int = 64
    hidden_size: int = 128
    primary_temperature: float = 1.0
    subaction_temperature_initial: float = 1.0
    subaction_temperature_final: float = 1.0
    subaction_temperature_anneal_start_frac: float = 0.0
    subaction_temperature_anneal_end_frac: float = 1.0
    subaction_temperature_anneal_start_step: Optional[int] = None
    subaction_temperature_anneal_end_step: Optional[int] = None
    smoothing_eps_initial: float = 0.0
    smoothing_eps_final: float = 0.0
    smoothing_eps_anneal_start_frac: float = 0.0
    smoothing_eps_anneal_end_frac: float = 1.0
    smoothing_eps_anneal_start_step: Optional[int] = None
    smoothing_eps_anneal_end_step: Optional[int] = None


@dataclass
class TrainConfig:
    total_timesteps: int = 8_000_000
    batch_size: int = 16384
    minibatch_size: int = 2048
    bptt_horizon: int = 16
    update_epochs: int = 1
    learning_rate: float = 6e-4
    lr_schedule: str = "linear"  # linear | cosine | constant
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    vf_clip_coef: float = 0.2
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    adam_eps: float = 1e-5
    ent_coef_initial: float = 0.01
    ent_coef_final: float = 0.01
    ent_coef_anneal_start_frac: float = 0.0
    ent_coef_anneal_end_frac: float = 1.0
    ent_coef_anneal_start_step: Optional[int] = None
    ent_coef_anneal_end_step: Optional[int] = None
    compile: bool = False
    compile_mode: str = "reduce-overhead"
    checkpoint_interval: int = 50
    checkpoint_interval_unit: str = "epochs"  # epochs | steps
    max_checkpoints: int = 5
    eval_interval: int = 60  # epochs; 0 = off
    eval_games: int = 512
    dashboard: bool = True


@dataclass
class LeagueConfig:
    """[league]: opponent pool, matchmaking, evaluation and promotion (SPEC 7, "League")."""
    enable: bool = False
    activate_after_steps: int = 0      # global steps of pure self-play before the league starts
    latest_ratio: float = 0.8          # share of games vs the latest self (OpenAI Five's 80/20)
    bot_ratio: float = 0.1             # share vs scripted bots, split between random and greedy
    pfsp_weighting: str = "squared"    # squared | variance | linear | uniform
    checkpoint_add_interval: int = 20  # epochs between ingesting the learner as a candidate
    pool_size: int = 8                 # frozen members kept (champion included)
    keep_recent: int = 3               # newest members always kept
    keep_old: int = 2                  # oldest members always kept
    eval_games: int = 128              # games per evaluation match
    promotion_min_games: int = 128     # games vs the champion needed before a promotion
    promotion_min_winrate: float = 0.5  # Wilson lower bound vs the champion must clear this
    promotion_z: float = 1.96          # z of that Wilson interval
    baseline_min_winrate: float = 0.5  # win rate vs the greedy baseline a candidate needs
    payoff_decay: float = 0.99         # payoff counts are multiplied by this on every update
    rating: str = "openskill"          # rating system (OpenSkill Plackett-Luce)
    opponent_batch: int = 256          # max rows per member in one stacked frozen forward (padded)


@dataclass
class WandbConfig:
    enable: bool = False
    project: str = "tcgleague"
    group: str = ""
    tags: str = ""  # comma-separated
    name: str = ""  # "" = the run's own name
    mode: str = "auto"  # auto | online | offline | disabled

    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.tags.split(",") if t.strip()]


SECTIONS: dict[str, type] = {
    "base": BaseConfig,
    "env": EnvConfig,
    "vec": VecConfig,
    "policy": PolicyConfig,
    "train": TrainConfig,
    "league": LeagueConfig,
    "wandb": WandbConfig,
}

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
VEC_BACKENDS = ("native", "serial", "multiprocessing")
LR_SCHEDULES = ("linear", "cosine", "constant")
CHECKPOINT_UNITS = ("epochs", "steps")
WANDB_MODES = ("auto", "online", "offline", "disabled")
PFSP_WEIGHTINGS = ("squared", "variance", "linear", "uniform")
RATINGS = ("openskill",)
ANNEALS = {  # anneal name -> section holding its keys
    "subaction_temperature": "policy",
    "smoothing_eps": "policy",
    "ent_coef": "train",
}

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_NONE = {"", "none", "null"}


@dataclass
class Config:
    base: BaseConfig = field(default_factory=BaseConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    vec: VecConfig = field(default_factory=VecConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """{section: {key: value}} with plain Python values (JSON-serialisable)."""
        return {name: dataclasses.asdict(getattr(self, name)) for name in SECTIONS}

    def to_ini(self) -> str:
        """The resolved config as `.ini` text; `load_config` reads it back to an equal Config."""
        lines: list[str] = []
        for name, section in self.to_dict().items():
            lines.append(f"[{name}]")
            for key, value in section.items():
                if value is None:
                    text = "none"
                elif isinstance(value, bool):
                    text = "true" if value else "false"
                else:
                    text = str(value)
                lines.append(f"{key} = {text}")
            lines.append("")
        return "\n".join(lines)

    @classmethod
    def from_dict(cls, data: dict[str, dict[str, Any]]) -> "Config":
        """Build and validate a Config from `to_dict()` output (e.g. a checkpoint's copy)."""
        cfg = cls()
        for section, values in data.items():
            for key, value in values.items():
                _set(cfg, section, key, value)
        _validate(cfg)
        return cfg


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Defaults, then the `.ini` file at `path` (if any), then `overrides`; then validate."""
    cfg = Config()
    if path is not None:
        _apply_file(cfg, Path(path))
    for section, key, value in parse_overrides(overrides or []):
        _set(cfg, section, key, value, origin="on the command line")
    _validate(cfg)
    return cfg


def _norm_key(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def _apply_file(cfg: Config, path: Path) -> None:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    parser = configparser.ConfigParser(
        interpolation=None,
        inline_comment_prefixes=("#", ";"),
        default_section="\x00no-default-section",  # so a [DEFAULT] section is reported
        strict=True,
    )
    parser.optionxform = _norm_key  # type: ignore[method-assign, assignment]
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f, source=str(path))
    except configparser.Error as e:
        raise ConfigError(f"{path}: cannot parse config: {e}") from e
    for section in parser.sections():
        for key, value in parser.items(section):
            _set(cfg, section.strip().lower(), key, value, origin=f"in {path}")


def parse_overrides(tokens: list[str]) -> list[tuple[str, str, str | None]]:
    """Split CLI tokens into (section, key, raw value).

    Accepted forms: `--section.key value`, `--section.key=value`; a boolean key given with no
    value (`--train.compile` followed by another option or nothing) means true, and a bare
    `--section` for a section with an `enable` key (`--wandb`, `--league`) means
    `--section.enable true`. Keys use dashes or underscores.
    """
    out: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("--") or len(tok) <= 2:
            raise ConfigError(
                f"unexpected command-line argument {tok!r}: overrides look like "
                f"--section.key value or --section.key=value (e.g. --train.learning-rate 1e-3)"
            )
        body = tok[2:]
        value: str | None
        if "=" in body:
            name, value = body.split("=", 1)
        else:
            name, value = body, None
        if "." not in name:
            section = _norm_key(name)
            if section in SECTIONS and "enable" in _fields(SECTIONS[section]) and value is None:
                out.append((section, "enable", "true"))
                continue
            raise ConfigError(
                f"command-line option {tok!r} is not of the form --section.key "
                f"(sections: {', '.join(SECTIONS)})"
            )
        section, key = name.split(".", 1)
        section, key = section.strip().lower(), _norm_key(key)
        if value is None:
            _field_type(section, key, origin="on the command line")  # unknown key -> error first
            if i < len(tokens) and not tokens[i].startswith("--"):
                value = tokens[i]
                i += 1
            elif _base_type(_field_type(section, key)) is bool:
                value = "true"
            else:
                raise ConfigError(f"[{section}] {key}: command-line option {tok} needs a value")
        out.append((section, key, value))
    return out


# --------------------------------------------------------------------------------------------
# Types and coercion
# --------------------------------------------------------------------------------------------


def _fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _unknown_key_error(section: str, key: str, origin: str | None) -> ConfigError:
    where = f" ({origin})" if origin else ""
    if section not in SECTIONS:
        close = difflib.get_close_matches(section, list(SECTIONS), n=1)
        hint = f"; did you mean [{close[0]}]?" if close else ""
        return ConfigError(
            f"unknown config key [{section}] {key}{where}: there is no section [{section}]{hint} "
            f"Valid sections: {', '.join('[' + s + ']' for s in SECTIONS)}"
        )
    keys = list(_fields(SECTIONS[section]))
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ConfigError(
        f"unknown config key [{section}] {key}{where}{hint} "
        f"Valid keys in [{section}]: {', '.join(keys)}"
    )


def _field_type(section: str, key: str, origin: str | None = None) -> Any:
    cls = SECTIONS.get(section)
    if cls is None:
        raise _unknown_key_error(section, key, origin)
    fields = _fields(cls)
    if key not in fields:
        raise _unknown_key_error(section, key, origin)
    return fields[key]


def _is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _base_type(tp: Any) -> Any:
    if _is_optional(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0]
    return tp


def _coerce(section: str, key: str, tp: Any, value: Any) -> Any:
    name = f"[{section}] {key}"
    optional = _is_optional(tp)
    base = _base_type(tp)
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        if optional and text.lower() in _NONE:
            return None
        if base is str:
            return text
        if base is bool:
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ConfigError(
                f"{name}: expected a boolean (true/false, 1/0, yes/no, on/off), got {value!r}"
            )
        if base is int:
            try:
                return int(text.replace("_", ""), 10)
            except ValueError:
                pass
            try:
                f = float(text.replace("_", ""))
            except ValueError:
                f = math.nan
            if math.isfinite(f) and f.is_integer():
                return int(f)
            extra = ", or none" if optional else ""
            raise ConfigError(f"{name}: expected an integer (e.g. 16{extra}), got {value!r}")
        if base is float:
            try:
                f = float(text.replace("_", ""))
            except ValueError:
                f = math.nan
            if not math.isfinite(f):
                raise ConfigError(f"{name}: expected a finite number (e.g. 0.5), got {value!r}")
            return f
        raise ConfigError(f"{name}: unsupported field type {tp!r}")  # pragma: no cover
    # Native Python values (from_dict, programmatic use).
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{name}: may not be none")
    if base is bool:
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ConfigError(f"{name}: expected a boolean, got {value!r}")
    if base is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        return int(value)
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{name}: expected a finite number, got {value!r}")
        return float(value)
    if base is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{name}: unsupported field type {tp!r}")  # pragma: no cover


def _set(cfg: Config, section: str, key: str, value: Any, origin: str | None = None) -> None:
    section, key = section.strip().lower(), _norm_key(key)
    tp = _field_type(section, key, origin)
    setattr(getattr(cfg, section), key, _coerce(section, key, tp, value))


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


def _validate(cfg: Config) -> None:
    errors: list[str] = []

    def check(ok: bool, section: str, key: str, msg: str) -> None:
        if not ok:
            value = getattr(getattr(cfg, section), key)
            errors.append(f"[{section}] {key} = {value!r}: {msg}")

    b, e, v, p, t, w = cfg.base, cfg.env, cfg.vec, cfg.policy, cfg.train, cfg.wandb

    # [base]
    check(bool(b.run_name.strip()), "base", "run_name", "must not be empty (e.g. emberfront)")
    check(bool(re.fullmatch(r"cpu|cuda|cuda:\d+", b.device)), "base", "device",
          "must be cpu, cuda or cuda:N (e.g. cpu)")
    check(b.torch_threads >= 0, "base", "torch_threads", "must be >= 0 (0 = torch default)")
    check(bool(b.experiments_dir.strip()), "base", "experiments_dir",
          "must not be empty (e.g. experiments)")

    # [env]
    check(e.num_games >= 1, "env", "num_games", "must be >= 1 (e.g. 1024)")
    check(e.turn_cap >= 1, "env", "turn_cap", "must be >= 1 (e.g. 30)")

    # [vec]
    check(v.backend in VEC_BACKENDS, "vec", "backend", f"must be one of {', '.join(VEC_BACKENDS)}")
    check(v.num_envs >= 1, "vec", "num_envs", "must be >= 1 (e.g. 1)")
    check(v.num_workers >= 1, "vec", "num_workers", "must be >= 1 (e.g. 1)")
    if v.backend == "multiprocessing" and v.num_envs >= 1 and v.num_workers >= 1:
        check(v.num_envs % v.num_workers == 0, "vec", "num_workers",
              f"must divide [vec] num_envs = {v.num_envs} (e.g. num_workers = "
              f"{_nearest_divisor(v.num_envs, v.num_workers)})")

    # [policy]
    for key in ("card_embed_dim", "entity_dim", "hidden_size"):
        check(getattr(p, key) >= 1, "policy", key, "must be >= 1 (e.g. 64)")
    for key in ("primary_temperature", "subaction_temperature_initial",
                "subaction_temperature_final"):
        check(getattr(p, key) > 0, "policy", key, "temperatures must be > 0 (e.g. 1.0)")
    for key in ("smoothing_eps_initial", "smoothing_eps_final"):
        check(0 <= getattr(p, key) < 1, "policy", key, "must be in [0, 1) (e.g. 0.05)")

    # [train]
    for key, example in (("total_timesteps", 10_000_000), ("batch_size", 32768),
                         ("minibatch_size", 4096), ("bptt_horizon", 16), ("update_epochs", 1),
                         ("eval_games", 512)):
        check(getattr(t, key) >= 1, "train", key, f"must be >= 1 (e.g. {example})")
    if t.batch_size >= 1 and t.minibatch_size >= 1 and t.bptt_horizon >= 1:
        if t.batch_size % t.minibatch_size != 0:
            sugg = _nearest_divisor(t.batch_size, t.minibatch_size, t.bptt_horizon)
            hint = (f"e.g. minibatch_size = {sugg}" if sugg is not None else
                    f"e.g. batch_size = {-(-t.batch_size // t.minibatch_size) * t.minibatch_size}")
            check(False, "train", "minibatch_size",
                  f"[train] batch_size = {t.batch_size} must be divisible by minibatch_size ({hint})")
        if t.minibatch_size % t.bptt_horizon != 0:
            sugg = _nearest_divisor(t.batch_size, t.minibatch_size, t.bptt_horizon)
            hint = (f"e.g. minibatch_size = {sugg}" if sugg is not None else
                    f"e.g. bptt_horizon = {_nearest_divisor(t.minibatch_size, t.bptt_horizon)}")
            check(False, "train", "bptt_horizon",
                  f"[train] minibatch_size = {t.minibatch_size} must be divisible by "
                  f"bptt_horizon ({hint})")
    check(t.learning_rate > 0, "train", "learning_rate", "must be > 0 (e.g. 3e-4)")
    check(t.lr_schedule in LR_SCHEDULES, "train", "lr_schedule",
          f"must be one of {', '.join(LR_SCHEDULES)}")
    check(0 < t.gamma <= 1, "train", "gamma", "must be in (0, 1] (e.g. 0.99)")
    check(0 <= t.gae_lambda <= 1, "train", "gae_lambda", "must be in [0, 1] (e.g. 0.95)")
    check(t.clip_coef > 0, "train", "clip_coef", "must be > 0 (e.g. 0.2)")
    check(t.vf_clip_coef > 0, "train", "vf_clip_coef", "must be > 0 (e.g. 0.2)")
    check(t.vf_coef >= 0, "train", "vf_coef", "must be >= 0 (e.g. 0.5)")
    check(t.max_grad_norm > 0, "train", "max_grad_norm", "must be > 0 (e.g. 0.5)")
    check(t.adam_eps > 0, "train", "adam_eps", "must be > 0 (e.g. 1e-5)")
    for key in ("ent_coef_initial", "ent_coef_final"):
        check(getattr(t, key) >= 0, "train", key, "must be >= 0 (e.g. 0.01)")
    check(t.compile_mode in COMPILE_MODES, "train", "compile_mode",
          f"must be one of {', '.join(COMPILE_MODES)}")
    check(t.checkpoint_interval >= 1, "train", "checkpoint_interval", "must be >= 1 (e.g. 50)")
    check(t.checkpoint_interval_unit in CHECKPOINT_UNITS, "train", "checkpoint_interval_unit",
          f"must be one of {', '.join(CHECKPOINT_UNITS)}")
    check(t.max_checkpoints >= 1, "train", "max_checkpoints", "must be >= 1 (e.g. 5)")
    check(t.eval_interval >= 0, "train", "eval_interval", "must be >= 0 (0 = off; e.g. 25)")

    # Anneals: fracs in [0, 1], steps >= 0, resolved start <= end.
    for name, section in ANNEALS.items():
        sec = getattr(cfg, section)
        sf, ef = f"{name}_anneal_start_frac", f"{name}_anneal_end_frac"
        ss, es = f"{name}_anneal_start_step", f"{name}_anneal_end_step"
        for key in (sf, ef):
            check(0 <= getattr(sec, key) <= 1, section, key, "must be in [0, 1] (e.g. 0.5)")
        for key in (ss, es):
            val = getattr(sec, key)
            check(val is None or val >= 0, section, key, "must be >= 0 or none (e.g. none)")
        check(getattr(sec, sf) <= getattr(sec, ef), section, sf,
              f"must be <= {ef} = {getattr(sec, ef)} (e.g. {sf} = 0.0)")
        start = getattr(sec, ss) if getattr(sec, ss) is not None else getattr(sec, sf) * t.total_timesteps
        end = getattr(sec, es) if getattr(sec, es) is not None else getattr(sec, ef) * t.total_timesteps
        if (getattr(sec, ss) is not None or getattr(sec, es) is not None) and start > end:
            key = ss if getattr(sec, ss) is not None else es
            check(False, section, key,
                  f"anneal start ({start:g}) is after its end ({end:g}) with [train] "
                  f"total_timesteps = {t.total_timesteps}; set {ss} <= {es} (e.g. {ss} = 0)")

    # [league] (checked even when disabled, so a bad value never waits for --league to surface)
    lg = cfg.league
    check(lg.activate_after_steps >= 0, "league", "activate_after_steps",
          "must be >= 0 (0 = league from the start; e.g. 5_000_000)")
    for key in ("latest_ratio", "bot_ratio"):
        check(0 <= getattr(lg, key) <= 1, "league", key, "must be in [0, 1] (e.g. 0.8)")
    if 0 <= lg.latest_ratio <= 1 and 0 <= lg.bot_ratio <= 1:
        check(lg.latest_ratio + lg.bot_ratio <= 1 + 1e-9, "league", "bot_ratio",
              f"latest_ratio + bot_ratio must be <= 1 (the rest is the frozen-pool share; "
              f"e.g. bot_ratio = {max(0.0, round(1 - lg.latest_ratio, 6))})")
    check(lg.pfsp_weighting in PFSP_WEIGHTINGS, "league", "pfsp_weighting",
          f"must be one of {', '.join(PFSP_WEIGHTINGS)}")
    check(lg.checkpoint_add_interval >= 1, "league", "checkpoint_add_interval", "must be >= 1 (e.g. 10)")
    check(lg.pool_size >= 1, "league", "pool_size", "must be >= 1 (e.g. 8)")
    for key in ("keep_recent", "keep_old"):
        check(getattr(lg, key) >= 0, "league", key, "must be >= 0 (e.g. 2)")
    if lg.pool_size >= 1 and lg.keep_recent >= 0 and lg.keep_old >= 0:
        check(1 + lg.keep_recent + lg.keep_old <= lg.pool_size, "league", "pool_size",
              f"must hold the champion plus keep_recent ({lg.keep_recent}) and keep_old "
              f"({lg.keep_old}) members (e.g. pool_size = {1 + lg.keep_recent + lg.keep_old})")
    check(lg.eval_games >= 1, "league", "eval_games", "must be >= 1 (e.g. 64)")
    check(lg.promotion_min_games >= 1, "league", "promotion_min_games", "must be >= 1 (e.g. 64)")
    for key in ("promotion_min_winrate", "baseline_min_winrate"):
        check(0 <= getattr(lg, key) <= 1, "league", key, "must be in [0, 1] (e.g. 0.55)")
    check(lg.promotion_z > 0, "league", "promotion_z", "must be > 0 (e.g. 1.96)")
    check(0 < lg.payoff_decay <= 1, "league", "payoff_decay", "must be in (0, 1] (1 = no decay; e.g. 0.99)")
    check(lg.rating in RATINGS, "league", "rating", f"must be one of {', '.join(RATINGS)}")
    check(lg.opponent_batch >= 1, "league", "opponent_batch", "must be >= 1 (e.g. 256)")

    # [wandb]
    check(w.mode in WANDB_MODES, "wandb", "mode", f"must be one of {', '.join(WANDB_MODES)}")
    check(not w.enable or bool(w.project.strip()), "wandb", "project",
          "must not be empty when W&B is enabled (e.g. tcgleague)")

    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
