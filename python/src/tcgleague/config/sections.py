"""Run configuration sections: one dataclass per `.ini` section, one annotated field per key
with its default (adding a key is a one-line change; add its check to config/validate.py if
it has constraints). A linear anneal is one `name: Anneal = Anneal(...)` line that stands for
its six keys (`<name>_initial` ... `<name>_anneal_end_step`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserInputError


class ConfigError(UserInputError, ValueError):
    """A config file or override is malformed, unknown or inconsistent."""

    label = "config error"


# --------------------------------------------------------------------------------------------
# Anneals. A section declares each linear anneal as one `name: Anneal = Anneal(...)` line;
# `anneal_section` expands it in place into the flat keys `<name>_<suffix>` (ANNEAL_KEYS), which
# are what files, the command line and to_dict() see.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Anneal:
    """One anneal's keys, their types and defaults (the fields of anneal.LinearAnneal)."""

    initial: float
    final: float
    start_frac: float = 0.0
    end_frac: float = 1.0
    start_step: int | None = None  # absolute step; overrides start_frac
    end_step: int | None = None  # absolute step; overrides end_frac


ANNEAL_KEYS = {  # Anneal field -> key suffix: [section] <name>_<suffix>
    "initial": "initial",
    "final": "final",
    "start_frac": "anneal_start_frac",
    "end_frac": "anneal_end_frac",
    "start_step": "anneal_start_step",
    "end_step": "anneal_end_step",
}


def anneal_key(name: str, field_name: str) -> str:
    """The config key of Anneal field `field_name` of anneal `name` (e.g. ent_coef_anneal_end_step)."""
    return f"{name}_{ANNEAL_KEYS[field_name]}"


def anneal_settings(section: Any, name: str) -> dict[str, Any]:
    """{Anneal field: value} of anneal `name` as a section instance holds it."""
    return {f: getattr(section, anneal_key(name, f)) for f in ANNEAL_KEYS}


def anneal_section(cls: type) -> type:
    """`@dataclass`, after replacing each `name: Anneal = Anneal(...)` line with its flat keys at
    that position (so key order, defaults and type hints are those of hand-written fields)."""
    hints = Anneal.__annotations__  # strings under `from __future__ import annotations`, like cls's
    annotations: dict[str, Any] = {}
    names: list[str] = []
    for key, hint in cls.__annotations__.items():
        spec = cls.__dict__.get(key)
        if not isinstance(spec, Anneal):
            annotations[key] = hint
            continue
        delattr(cls, key)
        names.append(key)
        for f in dataclasses.fields(Anneal):
            annotations[anneal_key(key, f.name)] = hints[f.name]
            setattr(cls, anneal_key(key, f.name), getattr(spec, f.name))
    cls.__annotations__ = annotations
    cls.__anneals__ = tuple(names)  # type: ignore[attr-defined]
    return dataclass(cls)


# --------------------------------------------------------------------------------------------
# Sections. One annotated field per key; the default is the value used when no file/override
# sets it.
# --------------------------------------------------------------------------------------------


@dataclass
class BaseSection:
    run_name: str = "emberfront"
    seed: int = 1
    device: str = "auto"  # auto | cpu | cuda | cuda:N (auto = cuda when torch sees a GPU)
    torch_threads: int = 0  # 0 = leave torch's default
    experiments_dir: str = "experiments"


@dataclass
class EnvSection:
    game: str = "emberfront"  # emberfront | leduc | kuhn (game.py: env, policy family, evaluation)
    num_games: int = 1024
    turn_cap: int = 30
    reward_shaping: float = 0.0
    deck_pool: str = ""  # "" = uniform starter decks; else a JSON path
    num_threads: int = 1  # engine threads per step (results identical for any value)
    overlap: str = "auto"  # auto | true | false: two halves of the games take turns (auto = on for cuda)


@dataclass
class VecSection:
    backend: str = "native"  # native | serial | multiprocessing
    num_envs: int = 1
    num_workers: int = 1


@anneal_section
class PolicySection:
    card_embed_dim: int = 32
    entity_dim: int = 64
    hidden_size: int = 128
    entity_attention_layers: int = 0
    legal_scorer_dim: int = 32
    legal_effect_dim: int = 16
    primary_temperature: float = 1.0
    subaction_temperature: Anneal = Anneal(initial=1.0, final=1.0)
    smoothing_eps: Anneal = Anneal(initial=0.0, final=0.0)


@anneal_section
class TrainSection:
    total_timesteps: int = 8_000_000
    batch_size: int = 16384
    minibatch_size: int = 1024
    bptt_horizon: int = 16
    update_epochs: int = 2
    learning_rate: float = 1.2e-3
    lr_schedule: str = "linear"  # linear | cosine | constant | magnet_stage (restarts with a frozen magnet)
    # A factor on the scheduled rate, annealed on global_step like the coefficients below: a rate
    # that steps down late, after the learner has travelled, so the iterates the average mixes
    # swing less (a no-regret learner's average at a constant step stalls at a level set by it).
    lr_scale: Anneal = Anneal(initial=1.0, final=1.0)
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    vf_clip_coef: float = 0.2
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    adam_eps: float = 1e-5
    ent_coef: Anneal = Anneal(initial=0.01, final=0.01)
    # The magnet-regularized objective (magnet.py): + magnet_coef * KL(pi || magnet) per decision.
    magnet: str = "uniform"  # uniform | frozen (replaced every magnet_interval steps: R-NaD) | ema
    magnet_coef: Anneal = Anneal(initial=0.0, final=0.0)  # 0 and 0: off (no KL computed)
    magnet_interval: int = 1_000_000  # learner steps between a frozen magnet's replacements
    magnet_ema: float = 0.01  # share of the way an ema magnet moves toward the learner per update
    # How the policy's logits move (ppo.py): ppo (the clipped surrogate) | neurd (by the advantage
    # itself, an action's probability no longer scaling its gradient: neural replicator dynamics)
    update_rule: str = "ppo"
    neurd_min_prob: float = 0.05  # neurd: the probability below which a sample's weight stops growing
    # Exploration (exploration.py): this share of the learner's training decisions drawn uniformly
    # among the legal actions (or, with explore_temperature T > 0, from the policy at temperature T),
    # left out of the loss with the returns they changed.
    explore_share: float = 0.0
    explore_temperature: float = 0.0
    # Counterfactual weighting (counterfactual.py): each decision weighs in the loss by 1 / its
    # seat's own reach of it, capped at this (0 = off, every decision weighs 1).
    own_reach_cap: float = 0.0
    # The average policy (average.py): an equal mixture of the newest snapshots, average_policy.pt.
    average_snapshots: int = 0  # snapshots the average keeps (0 = no average policy)
    average_interval: int = 250_000  # learner steps between snapshots
    average_start: int = 0  # learner steps before which no snapshot is kept (the average's burn-in)
    compile: str = "auto"  # auto | true | false (auto = on for cuda, off on cpu)
    compile_mode: str = "reduce-overhead"
    precision: str = "fp32"  # fp32 | bf16 (the loss's forward under bf16 autocast)
    nan_policy: str = "stop"  # a non-finite loss/gradient/weight: stop | skip_batch (drop that epoch's update)
    checkpoint_interval: int = 50
    checkpoint_interval_unit: str = "epochs"  # epochs | steps
    max_checkpoints: int = 5
    eval_interval: int = 60  # epochs; 0 = off
    eval_games: int = 512
    dashboard: bool = True


@dataclass
class LeagueSection:
    """[league]: opponent pool, matchmaking, evaluation and promotion (see README, "League training")."""

    enable: bool = False
    activate_after_steps: int = 0  # global steps of pure self-play before the league starts
    latest_ratio: float = 0.8  # share of games vs the latest self (OpenAI Five's 80/20)
    bot_ratio: float = 0.1  # share vs scripted bots, split between random and greedy
    pfsp_weighting: str = "squared"  # squared | variance | linear | uniform
    # PSRO: the pool's meta-Nash over the members' payoff (league/meta_nash.py). Either makes every
    # candidate also play each pool member (the payoff matrix filled, role "population").
    opponent_sampling: str = "pfsp"  # pfsp | nash: frozen members drawn by PFSP or by the meta-Nash
    deliverable: str = "learner"  # learner | nash_mixture: also league_policy.pt, the meta-Nash mixture
    nash_min_games: int = 64  # meta-game entries measured on fewer games are left out (taken as even)
    nash_temperature: float = 0.0  # > 0: the meta-game's logit equilibrium at this many points (its noise)
    deliverable_start: int = 0  # learner steps before which candidates are left out of league_policy.pt
    checkpoint_add_interval: int = 20  # epochs between ingesting the learner as a candidate
    pool_size: int = 8  # frozen members kept (champion included)
    keep_recent: int = 3  # newest members always kept
    keep_old: int = 2  # oldest members always kept
    eval_games: int = 128  # games per evaluation match
    promotion_min_games: int = 128  # games vs the champion needed before a promotion
    promotion_min_winrate: float = 0.5  # Wilson lower bound vs the champion must clear this
    promotion_z: float = 1.96  # z of that Wilson interval
    baseline_min_winrate: float = 0.5  # win rate vs the greedy baseline a candidate needs
    payoff_decay: float = 0.99  # payoff counts are multiplied by this on every update
    rating: str = "openskill"  # rating system (OpenSkill Plackett-Luce)
    opponent_batch: int = 256  # max rows per member in one stacked frozen forward (padded)
    verification_members: int = 0  # members a candidate also plays: those the learner has played least
    evaluation: str = "auto"  # auto | background | inline: where candidates' matches play (auto: devices.py)
    replay_games: int = 2  # games of each evaluation match recorded for the replay viewer (0 = none)
    exploiter_ratio: float = 0.0  # share of games vs the main exploiter (0 = no exploiter)
    exploiter_join_winrate: float = 0.7  # its win rate vs the main agent (or snapshot) that makes it a member
    exploiter_reset_epochs: int = 300  # epochs after which an exploiter that never joined restarts
    learner_trains_vs_exploiter: bool = False  # the learner also trains on its seat of exploiter games
    exploiter_opponent: str = "learner"  # learner (live) | snapshot (the learner's weights at its restart)

    @property
    def uses_meta_nash(self) -> bool:
        """Opponents drawn from, or the run delivering, the pool's meta-Nash."""
        return self.opponent_sampling == "nash" or self.deliverable == "nash_mixture"

    @property
    def exploiter_plays_snapshot(self) -> bool:
        """The exploiter's games are against its frozen snapshot of the learner, not the learner."""
        return self.exploiter_opponent == "snapshot"


@dataclass
class DistSection:
    """[dist]: used only under torchrun (one process per rank; see README, "Training on several GPUs")."""

    backend: str = "auto"  # auto | gloo | nccl (auto = nccl on CUDA, gloo on the CPU)
    timeout_seconds: int = 900  # a collective waiting longer than this fails the job (a hung rank)


@dataclass
class WandbSection:
    enable: bool = False
    project: str = "tcgleague"
    group: str = ""
    tags: str = ""  # comma-separated
    name: str = ""  # "" = the run's own name
    mode: str = "auto"  # auto | online | offline | disabled

    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.tags.split(",") if t.strip()]


SECTIONS: dict[str, type] = {
    "base": BaseSection,
    "env": EnvSection,
    "vec": VecSection,
    "policy": PolicySection,
    "train": TrainSection,
    "league": LeagueSection,
    "dist": DistSection,
    "wandb": WandbSection,
}

# Rows and rollout slots travel as int32 in the rollout's one upload (transfer.py).
INDEX_LIMIT = 2**31
SWITCHES = ("auto", "true", "false")  # a boolean key that also has "auto"
EVALUATION_MODES = ("auto", "background", "inline")  # [league] evaluation
PRECISIONS = ("fp32", "bf16")
NAN_POLICIES = ("stop", "skip_batch")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
VEC_BACKENDS = ("native", "serial", "multiprocessing")
LR_SCHEDULES = ("linear", "cosine", "constant", "magnet_stage")
CHECKPOINT_UNITS = ("epochs", "steps")
WANDB_MODES = ("auto", "online", "offline", "disabled")
MAGNET_KINDS = ("uniform", "frozen", "ema")
UPDATE_RULES = ("ppo", "neurd")
OPPONENT_SAMPLINGS = ("pfsp", "nash")
DELIVERABLES = ("learner", "nash_mixture")
PFSP_WEIGHTINGS = ("squared", "variance", "linear", "uniform")
EXPLOITER_OPPONENTS = ("learner", "snapshot")
RATINGS = ("openskill",)
DIST_BACKENDS = ("auto", "gloo", "nccl")
MAX_DIST_TIMEOUT = 86400
# Anneal name -> section holding its keys, in declaration order.
ANNEALS: dict[str, str] = {
    name: section for section, cls in SECTIONS.items() for name in getattr(cls, "__anneals__", ())
}


@dataclass
class Config:
    base: BaseSection = field(default_factory=BaseSection)
    env: EnvSection = field(default_factory=EnvSection)
    vec: VecSection = field(default_factory=VecSection)
    policy: PolicySection = field(default_factory=PolicySection)
    train: TrainSection = field(default_factory=TrainSection)
    league: LeagueSection = field(default_factory=LeagueSection)
    dist: DistSection = field(default_factory=DistSection)
    wandb: WandbSection = field(default_factory=WandbSection)

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
