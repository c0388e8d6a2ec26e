"""Leduc and Kuhn poker as the framework sees them (game.py's `Game`): the numpy env behind the
row contract, the flat LSTM family over its rows, OpenSpiel's exact exploitability as the
periodic evaluation and as the judge of a checkpoint or league mixture, the random and
always-call bots, a person's session and the replay recorder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from ...config import Config
from ...game import Evaluate, Game
from ...match import Runner, play_duplicate
from ...policy.family import Policy, Sampler
from ...policy.flat import FLAT_FAMILY, FlatPolicyConfig, FlatSampler
from .exact import file_exploitability, members_exploitability, policy_exploitability
from .match import ALWAYS_CALL, POKER_BOTS, PokerTable, poker_bot_side, poker_training_bots
from .play import play_poker
from .replay import PokerReplayRecorder
from .rows import PokerPufferEnv
from .rules import ACTION_WIDTH, NUM_ACTIONS
from .rules import GAMES as RULES


def exact_evaluation(cfg: Config) -> Evaluate:
    """eval/exploitability and eval/nash_conv: OpenSpiel's exact figures, chips per game."""
    rules = RULES[cfg.env.game]

    def evaluate(policy: Policy, sampler: Sampler, seed: int) -> dict:
        judged = policy_exploitability(rules, policy, sampler)
        return {"eval/exploitability": judged.exploitability, "eval/nash_conv": judged.nash_conv}

    return evaluate


def exact_mixture_evaluation(cfg: Config) -> Callable:
    """eval/mixture_exploitability and eval/mixture_nash_conv: the mixture's reach-weighted
    average policy judged exactly (exact.members_exploitability)."""
    rules = RULES[cfg.env.game]

    def evaluate(members, weights) -> dict:
        judged = members_exploitability(rules, members, weights)
        return {"eval/mixture_exploitability": judged.exploitability, "eval/mixture_nash_conv": judged.nash_conv}

    return evaluate


def poker_play(name: str) -> Callable:
    """The poker runner as `Runner.play`: `play_duplicate` on the game's table (no turn cap:
    a poker game ends within a few bets)."""

    def play(learner, opponent, episodes: int, seed: int, parallel: int = 256, turn_cap=None, recorder=None):
        return play_duplicate(PokerTable(name), learner, opponent, episodes, seed, parallel, recorder)

    return play


def poker_game(name: str) -> Game:
    rules = RULES[name]
    return Game(
        name=name,
        env_class=PokerPufferEnv,
        env_kwargs=lambda cfg, seed: dict(game=name, num_games=cfg.env.num_games, seed=seed),
        family=FLAT_FAMILY,
        policy_config=lambda cfg: FlatPolicyConfig(rules.obs_width, NUM_ACTIONS, cfg.policy.hidden_size),
        sampler=lambda cfg: FlatSampler(primary_temperature=cfg.policy.primary_temperature),
        evaluation=exact_evaluation,
        runner=Runner(
            poker_play(name),
            poker_bot_side,
            poker_training_bots,
            POKER_BOTS,
            ALWAYS_CALL,
            POKER_BOTS,
            lambda games, names: PokerReplayRecorder(rules, games, names),
        ),
        obs_layout={**asdict(rules), "obs_width": rules.obs_width},
        action_space={"game": name, "num_actions": NUM_ACTIONS},
        action_width=ACTION_WIDTH,
        evaluate_mixture=exact_mixture_evaluation,
        default_config=f"configs/{name}.ini",
        judge=lambda path: file_exploitability(path, name),
        points_unit="chips",
        bench_engine=f"{__package__}.bench_engine",
        play=play_poker,
    )


GAMES = {name: poker_game(name) for name in RULES}
