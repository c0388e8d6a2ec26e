"""Emberfront as the framework sees it (game.py's `Game`): the C engine's env, the TCGPolicy
family, duplicate matches against the scripted bots as its evaluation, its config keys and card
data, the turn-ahead search, a person's session and the replay recorder."""

from __future__ import annotations

from ...config import Config
from ...game import Evaluate, Game
from ...match import Runner
from ...policy.family import PolicyFamily
from .bots import BOTS, GREEDY, SCRIPTED, training_bots
from .engine import LAYOUT
from .engine.cards import CardDataError, deck_weights, load_card_pool
from .env import TCGEnv
from .layout import ACTION_SPACE, ACTION_WIDTH, NAME
from .lookahead import lookahead_side
from .match import bot_side, evaluate_vs_bots, play_match
from .old_rows import CONVERTIBLE_LAYOUTS
from .play import play_emberfront
from .policy import FAMILY, OPTIONAL_WIDTHS, PolicyConfig, build_policy, policy_from_state
from .replay import ReplayRecorder
from .sampler import TCGSampler

EMBERFRONT_RUNNER = Runner(play_match, bot_side, training_bots, BOTS, GREEDY, SCRIPTED, ReplayRecorder)
TCG_FAMILY = PolicyFamily(
    FAMILY, PolicyConfig.from_dict, build_policy, policy_from_state, TCGSampler.from_params, OPTIONAL_WIDTHS
)

# Keys only Emberfront's env and policy read; another game's config that sets one is refused
# rather than silently run without it.
OWN_KEYS = (
    ("env", "turn_cap"),
    ("env", "reward_shaping"),
    ("env", "deck_pool"),
    ("env", "num_threads"),
    ("policy", "card_embed_dim"),
    ("policy", "entity_dim"),
    ("policy", "entity_attention_layers"),
    ("policy", "legal_scorer_dim"),
    ("policy", "legal_effect_dim"),
    ("policy", "subaction_temperature_initial"),
    ("policy", "subaction_temperature_final"),
)


def env_kwargs(cfg: Config, seed: int) -> dict:
    return dict(
        num_games=cfg.env.num_games,
        seed=seed,
        turn_cap=cfg.env.turn_cap,
        reward_shaping=cfg.env.reward_shaping,
        deck_pool=cfg.env.deck_pool or None,
        num_threads=cfg.env.num_threads,
    )


def policy_config(cfg: Config) -> PolicyConfig:
    """The architecture an Emberfront run with this config builds (its card table: the code's pool)."""
    p = cfg.policy
    return PolicyConfig(
        n_cards=load_card_pool().n_cards,
        card_embed_dim=p.card_embed_dim,
        entity_dim=p.entity_dim,
        hidden_size=p.hidden_size,
        entity_attention_layers=p.entity_attention_layers,
        legal_scorer_dim=p.legal_scorer_dim,
        legal_effect_dim=p.legal_effect_dim,
    )


def bots_evaluation(cfg: Config) -> Evaluate:
    """eval/winrate_vs_<bot>: duplicate matches against the scripted bots."""
    return lambda policy, sampler, seed: evaluate_vs_bots(policy, sampler, cfg.train.eval_games, seed, cfg.env.turn_cap)


def check_files(cfg: Config) -> list[str]:
    """The deck pool must parse against the card pool."""
    if not cfg.env.deck_pool:
        return []
    try:
        deck_weights(load_card_pool(), cfg.env.deck_pool)
    except CardDataError as err:
        return [f"[env] deck_pool = {cfg.env.deck_pool!r}: {err}"]
    return []


def fixed_architecture(stored: dict) -> dict:
    """The policy embeds the code's card table: a stored card count must be today's."""
    return dict(stored, n_cards=load_card_pool().n_cards)


EMBERFRONT = Game(
    name=NAME,
    env_class=TCGEnv,
    env_kwargs=env_kwargs,
    family=TCG_FAMILY,
    policy_config=policy_config,
    sampler=lambda cfg: TCGSampler(primary_temperature=cfg.policy.primary_temperature),
    evaluation=bots_evaluation,
    runner=EMBERFRONT_RUNNER,
    obs_layout=LAYOUT,
    action_space=ACTION_SPACE,
    action_width=ACTION_WIDTH,
    own_keys=OWN_KEYS,
    overlaps=True,
    check_files=check_files,
    convertible_layouts=CONVERTIBLE_LAYOUTS,
    fixed_architecture=fixed_architecture,
    search=lookahead_side,
    bench_engine=f"{__package__}.bench_engine",
    benches={"peer": f"{__package__}.peers.bench"},
    play=play_emberfront,
)
GAMES = {NAME: EMBERFRONT}
