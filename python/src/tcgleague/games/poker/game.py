"""Leduc and Kuhn poker as the framework sees them (game.py's `Game`): the numpy env behind the
row contract, the flat LSTM family over its rows, OpenSpiel's exact exploitability as the
periodic evaluation and as the judge of a checkpoint or league mixture, the random and
always-call bots, a person's session and the replay recorder."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict

from ...game import Game
from ...match import Runner, play_duplicate
from ...openspiel_judge import file_exploitability, mixture_evaluation, periodic_evaluation
from ...play_table import play_table
from ...policy.flat import FLAT_FAMILY, FlatPolicyConfig, FlatSampler
from ...replay.table import TableReplayRecorder
from .exact import JUDGED
from .match import ALWAYS_CALL, POKER_BOTS, PokerTable, poker_bot, poker_bot_side, poker_training_bots
from .rows import PokerPufferEnv
from .rules import ACTION_WIDTH, NUM_ACTIONS
from .rules import GAMES as RULES
from .words import poker_words


def poker_play(name: str) -> Callable:
    """The poker runner as `Runner.play`: `play_duplicate` on the game's table (no turn cap:
    a poker game ends within a few bets)."""

    def play(learner, opponent, episodes: int, seed: int, parallel: int = 256, turn_cap=None, recorder=None):
        return play_duplicate(PokerTable(name), learner, opponent, episodes, seed, parallel, recorder)

    return play


def make_env(game: str, seed: int) -> PokerPufferEnv:
    """One game of `game` (a person's session)."""
    return PokerPufferEnv(game, num_games=1, seed=seed)


def poker_game(name: str) -> Game:
    rules = RULES[name]
    return Game(
        name=name,
        env_class=PokerPufferEnv,
        env_kwargs=lambda cfg, seed: dict(game=name, num_games=cfg.env.num_games, seed=seed),
        family=FLAT_FAMILY,
        policy_config=lambda cfg: FlatPolicyConfig(rules.obs_width, NUM_ACTIONS, cfg.policy.hidden_size),
        sampler=lambda cfg: FlatSampler(primary_temperature=cfg.policy.primary_temperature),
        evaluation=periodic_evaluation(JUDGED[name]),
        runner=Runner(
            poker_play(name),
            poker_bot_side,
            poker_training_bots,
            POKER_BOTS,
            ALWAYS_CALL,
            POKER_BOTS,
            lambda games, names: TableReplayRecorder(poker_words(rules), games, names),
        ),
        obs_layout={**asdict(rules), "obs_width": rules.obs_width},
        action_space={"game": name, "num_actions": NUM_ACTIONS},
        action_width=ACTION_WIDTH,
        evaluate_mixture=mixture_evaluation(JUDGED[name]),
        default_config=f"configs/{name}.ini",
        judge=lambda path: file_exploitability(path, JUDGED[name]),
        judged_game=JUDGED[name],
        points_unit="chips",
        bench_engine=f"{__package__}.bench_engine",
        play=functools.partial(play_table, poker_words(rules), make_env, poker_bot),
    )


GAMES = {name: poker_game(name) for name in RULES}
