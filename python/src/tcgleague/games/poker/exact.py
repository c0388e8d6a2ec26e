"""Leduc and Kuhn poker for the exact judge (openspiel_judge.py, OpenSpiel's best responses):
the rows a seat saw along an OpenSpiel state's history, replayed in a `PokerEnv` dealt the same
cards, and our fold / call / raise under OpenSpiel's action ids (openspiel.py)."""

from __future__ import annotations

import functools

import numpy as np
import pyspiel

from ...openspiel_judge import JudgedGame
from .env import PokerEnv
from .openspiel import openspiel_action, our_action
from .rules import GAMES, NUM_ACTIONS, PokerRules


def decision_rows(rules: PokerRules, state: pyspiel.State) -> np.ndarray:
    """The rows `state`'s player saw at each of its decisions along `state`'s history, this one
    last, as a PokerEnv dealt the same cards writes them. A public card not yet turned is dealt
    as any other card: no row before the second round shows it."""
    chance, bets, replay = [], [], state.get_game().new_initial_state()
    for action in state.history():
        (chance if replay.is_chance_node() else bets).append(action)
        replay.apply_action(action)
    unseen = [card for card in range(rules.deck_size) if card not in chance]
    env = PokerEnv(rules, 1)
    env.set_deal([0], [(chance + unseen)[: rules.cards_dealt]])
    seat, rows = state.current_player(), []
    for bet in bets + [None]:
        acting = int(env.acting_rows()[0])
        if acting == seat:
            rows.append(env.obs[acting].copy())
        if bet is not None:
            actions = np.zeros(env.num_rows, dtype=np.int64)
            actions[acting] = our_action(rules, env.obs[acting, rules.legal_offset :], bet)
            env.step(actions)
    return np.stack(rows)


def judged(rules: PokerRules) -> JudgedGame:
    return JudgedGame(
        name=rules.name,
        openspiel_name=rules.openspiel_name,
        num_actions=NUM_ACTIONS,
        legal_offset=rules.legal_offset,
        obs_width=rules.obs_width,
        decision_rows=functools.partial(decision_rows, rules),
        openspiel_action=functools.partial(openspiel_action, rules),
    )


JUDGED = {name: judged(rules) for name, rules in GAMES.items()}
