"""Run configuration: `.ini` files (PufferLib convention) parsed into dataclasses, plus CLI
overrides.

    cfg = load_config("configs/smoke.ini", ["--train.learning-rate", "1e-3"])

    sections   one dataclass per section ([base] [env] [vec] [policy] [train] [league] [dist] [wandb])
    loader     files and `--section.key value` overrides, coerced to each field's type
    validate   impossible values and combinations, named by `[section] key` with a valid value
"""

from .loader import config_from_dict, load_config, parse_overrides
from .sections import (
    ANNEAL_KEYS,
    ANNEALS,
    CHECKPOINT_UNITS,
    COMPILE_MODES,
    DIST_BACKENDS,
    EXPLOITER_OPPONENTS,
    LR_SCHEDULES,
    PFSP_WEIGHTINGS,
    RATINGS,
    SECTIONS,
    VEC_BACKENDS,
    WANDB_MODES,
    Anneal,
    BaseSection,
    Config,
    ConfigError,
    DistSection,
    EnvSection,
    LeagueSection,
    PolicySection,
    TrainSection,
    VecSection,
    WandbSection,
    anneal_settings,
)

__all__ = [
    "ANNEAL_KEYS",
    "ANNEALS",
    "CHECKPOINT_UNITS",
    "COMPILE_MODES",
    "DIST_BACKENDS",
    "EXPLOITER_OPPONENTS",
    "LR_SCHEDULES",
    "PFSP_WEIGHTINGS",
    "RATINGS",
    "SECTIONS",
    "VEC_BACKENDS",
    "WANDB_MODES",
    "Anneal",
    "BaseSection",
    "Config",
    "ConfigError",
    "DistSection",
    "EnvSection",
    "LeagueSection",
    "PolicySection",
    "TrainSection",
    "VecSection",
    "WandbSection",
    "anneal_settings",
    "config_from_dict",
    "load_config",
    "parse_overrides",
]
