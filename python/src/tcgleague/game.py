"""The games a run can play (`[env] game`): what the trainer is handed for each, so nothing below
`build.py` names a game (the game is a plug-in).

A `Game` is its env class (a PufferLib env keeping the row contract of rows.py: two rows per
game, the acting row masked, the legal actions in the row), the env's arguments from a config,
the policy family and its architecture from a config, the sampler, the periodic evaluation
(Emberfront's duplicate matches against the scripted bots, and the poker games' exact
exploitability by OpenSpiel: `eval/exploitability`, chips per game; the `[exact]` extra), and the
league's matches and bots (`match.Runner`: Emberfront's runner with random and greedy, greedy
the baseline; poker's runner with random and always-call, always-call the baseline)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint.files import read_state
from .config import Config
from .exact import (
    Exploitability,
    checkpoint_exploitability,
    members_exploitability,
    mixture_exploitability,
    policy_exploitability,
)
from .games.emberfront.engine.cards import load_card_pool
from .games.emberfront.env import TCGEnv
from .games.emberfront.match import EMBERFRONT_RUNNER, evaluate_vs_bots
from .games.emberfront.play import play_emberfront
from .games.emberfront.policy import PolicyConfig
from .games.emberfront.sampler import TCGSampler
from .games.poker.match import ALWAYS_CALL, POKER_BOTS, PokerTable, poker_bot_side, poker_training_bots
from .games.poker.play import play_poker
from .games.poker.replay import PokerReplayRecorder
from .games.poker.rows import PokerPufferEnv
from .games.poker.rules import EMBERFRONT, GAMES, NUM_ACTIONS
from .league.mixture import MixtureEvaluate, is_mixture
from .match import MatchRecorder, Runner, play_duplicate
from .policy.families import FAMILIES, FLAT, TCG, PolicyFamily
from .policy.family import Policy, Sampler
from .policy.flat import FlatPolicyConfig, FlatSampler
from .replay import ReplayRecorder

Evaluate = Callable[[Policy, Sampler, int], dict]  # (policy, sampler, the evaluation's seed) -> eval/* metrics


@dataclass(frozen=True)
class Game:
    name: str
    env_class: type
    env_kwargs: Callable[[Config, int], dict]
    """(config, the rank's seed) -> the env class's arguments"""
    family: PolicyFamily
    policy_config: Callable[[Config], Any]
    """config -> the family's architecture"""
    sampler: Callable[[Config], Sampler]
    evaluation: Callable[[Config], Evaluate]
    """the trainer's periodic evaluation of its policy, for this config"""
    runner: Runner
    """its matches and bots, as the league plays them"""
    evaluate_mixture: Callable[[Config], MixtureEvaluate] | None = None
    """the league's Nash mixture judged at the trainer's evaluations ([league] deliverable =
    nash_mixture); None: the game has no judge of a mixture"""
    default_config: str = "configs/default.ini"
    """the config a tool trains this game with when given none (an exploit run's)"""
    searches: bool = False
    """whether lookahead.py can search its games (a turn ahead inside Emberfront's engine)"""
    judge: Callable[[Path], Exploitability] | None = None
    """a checkpoint or league mixture file -> its exact exploitability; None: no exact judge"""
    points_unit: str | None = None
    """what a game's return counts (chips), where it is more than a win or a loss"""
    play: Callable | None = None
    """(args, loaded checkpoint, console, read) -> the agent's results: a person plays it in the
    terminal (play.py)"""
    recorder: Callable[[int, tuple[str, str]], MatchRecorder] | None = None
    """(games, the two players' names) -> a match recorder for the replay viewer; None: none"""


def emberfront_env_kwargs(cfg: Config, seed: int) -> dict:
    return dict(
        num_games=cfg.env.num_games,
        seed=seed,
        turn_cap=cfg.env.turn_cap,
        reward_shaping=cfg.env.reward_shaping,
        deck_pool=cfg.env.deck_pool or None,
        num_threads=cfg.env.num_threads,
    )


def emberfront_policy_config(cfg: Config, n_cards: int) -> PolicyConfig:
    """The architecture an Emberfront run with this config builds."""
    p = cfg.policy
    return PolicyConfig(
        n_cards=n_cards,
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


def exact_evaluation(cfg: Config) -> Evaluate:
    """eval/exploitability and eval/nash_conv: OpenSpiel's exact figures, chips per game."""
    rules = GAMES[cfg.env.game]

    def evaluate(policy: Policy, sampler: Sampler, seed: int) -> dict:
        judged = policy_exploitability(rules, policy, sampler)
        return {"eval/exploitability": judged.exploitability, "eval/nash_conv": judged.nash_conv}

    return evaluate


def exact_mixture_evaluation(cfg: Config) -> MixtureEvaluate:
    """eval/mixture_exploitability and eval/mixture_nash_conv: the mixture's reach-weighted
    average policy judged exactly (exact.members_exploitability)."""
    rules = GAMES[cfg.env.game]

    def evaluate(members, weights) -> dict:
        judged = members_exploitability(rules, members, weights)
        return {"eval/mixture_exploitability": judged.exploitability, "eval/mixture_nash_conv": judged.nash_conv}

    return evaluate


EMBERFRONT_GAME = Game(
    EMBERFRONT,
    TCGEnv,
    emberfront_env_kwargs,
    FAMILIES[TCG],
    lambda cfg: emberfront_policy_config(cfg, load_card_pool().n_cards),
    lambda cfg: TCGSampler(primary_temperature=cfg.policy.primary_temperature),
    bots_evaluation,
    EMBERFRONT_RUNNER,
    searches=True,
    play=play_emberfront,
    recorder=ReplayRecorder,
)


def exact_judge(name: str) -> Callable[[Path], Exploitability]:
    """OpenSpiel's exact exploitability of a `name` checkpoint or league mixture file."""

    def judge(path: Path) -> Exploitability:
        return (mixture_exploitability if is_mixture(read_state(path)) else checkpoint_exploitability)(path, name)

    return judge


def poker_play(name: str) -> Callable:
    """The poker runner as `Runner.play`: `play_duplicate` on the game's table (no turn cap:
    a poker game ends within a few bets)."""

    def play(learner, opponent, episodes: int, seed: int, parallel: int = 256, turn_cap=None, recorder=None):
        return play_duplicate(PokerTable(name), learner, opponent, episodes, seed, parallel, recorder)

    return play


def poker_game(name: str) -> Game:
    return Game(
        name,
        PokerPufferEnv,
        lambda cfg, seed: dict(game=name, num_games=cfg.env.num_games, seed=seed),
        FAMILIES[FLAT],
        lambda cfg: FlatPolicyConfig(GAMES[name].obs_width, NUM_ACTIONS, cfg.policy.hidden_size),
        lambda cfg: FlatSampler(primary_temperature=cfg.policy.primary_temperature),
        exact_evaluation,
        Runner(
            poker_play(name),
            poker_bot_side,
            poker_training_bots,
            POKER_BOTS,
            ALWAYS_CALL,
            False,
            POKER_BOTS,
        ),
        exact_mixture_evaluation,
        f"configs/{name}.ini",
        judge=exact_judge(name),
        points_unit="chips",
        play=play_poker,
        recorder=lambda games, names: PokerReplayRecorder(GAMES[name], games, names),
    )


PLAYABLE = {EMBERFRONT: EMBERFRONT_GAME, **{name: poker_game(name) for name in GAMES}}


def game_of(cfg: Config) -> Game:
    return PLAYABLE[cfg.env.game]


def game_named(name: str) -> Game:
    """The game `name` (a checkpoint's fingerprint.checkpoint_game)."""
    return PLAYABLE[name]
