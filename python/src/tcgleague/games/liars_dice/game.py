"""Liar's Dice as the framework sees it (game.py's `Game`): its numpy env behind the row
contract, the flat LSTM family over its rows, OpenSpiel's exact exploitability as the periodic
evaluation and as the judge of a checkpoint or league mixture, the random and honest bots, a
person's session and the replay recorder (the framework's table-game ones, in its words)."""

from __future__ import annotations

import functools

from ...game import Game
from ...match import Runner, play_duplicate
from ...openspiel_judge import file_exploitability, mixture_evaluation, periodic_evaluation
from ...play_table import play_table
from ...policy.flat import FLAT_FAMILY, FlatPolicyConfig, FlatSampler
from ...replay.table import TableReplayRecorder
from .exact import JUDGED
from .match import BOTS, HONEST, LiarsDiceTable, bot, bot_side, training_bots
from .rows import LiarsDicePufferEnv
from .rules import ACTION_WIDTH, DICE, FACES, INFO_WIDTH, LEGAL_OFFSET, NAME, NUM_ACTIONS, OBS_WIDTH
from .words import LIARS_DICE_WORDS


def liars_dice_play(learner, opponent, episodes: int, seed: int, parallel: int = 256, turn_cap=None, recorder=None):
    """`Runner.play`: `play_duplicate` on the Liar's Dice table (a game ends within 13 decisions)."""
    return play_duplicate(LiarsDiceTable(), learner, opponent, episodes, seed, parallel, recorder)


LIARS_DICE = Game(
    name=NAME,
    env_class=LiarsDicePufferEnv,
    env_kwargs=lambda cfg, seed: dict(num_games=cfg.env.num_games, seed=seed),
    family=FLAT_FAMILY,
    policy_config=lambda cfg: FlatPolicyConfig(OBS_WIDTH, NUM_ACTIONS, cfg.policy.hidden_size),
    sampler=lambda cfg: FlatSampler(primary_temperature=cfg.policy.primary_temperature),
    evaluation=periodic_evaluation(JUDGED),
    runner=Runner(
        liars_dice_play,
        bot_side,
        training_bots,
        BOTS,
        HONEST,
        BOTS,
        lambda games, names: TableReplayRecorder(LIARS_DICE_WORDS, games, names),
    ),
    obs_layout=dict(
        game=NAME, faces=FACES, dice=DICE, info_width=INFO_WIDTH, legal_offset=LEGAL_OFFSET, obs_width=OBS_WIDTH
    ),
    action_space={"game": NAME, "num_actions": NUM_ACTIONS},
    action_width=ACTION_WIDTH,
    evaluate_mixture=mixture_evaluation(JUDGED),
    default_config="configs/liars_dice.ini",
    judge=lambda path: file_exploitability(path, JUDGED),
    judged_game=JUDGED,
    points_unit="points",
    bench_engine=f"{__package__}.bench_engine",
    play=functools.partial(play_table, LIARS_DICE_WORDS, lambda game, seed: LiarsDicePufferEnv(1, seed), bot),
)

GAMES = {NAME: LIARS_DICE}
