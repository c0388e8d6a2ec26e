"""Leduc or Kuhn poker in the terminal (`python play.py CKPT` with a poker checkpoint): at each of
the person's decisions their hand in words (words.py: card, board card, bets, pot)
and their legal actions numbered; the agent's action with its probabilities; at the end of a
hand both cards (a showdown's) and the chips won. With --opponent a bot or another checkpoint
plays the person's seat and the hands are watched."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.panel import Panel

from ...actors import PolicyActor
from ...checkpoint import LoadedCheckpoint, load_checkpoint
from ...checkpoint.deployed import checkpoint_sampler
from ...errors import ArgumentError
from ...fingerprint import checkpoint_game
from ...match import policy_side
from ...rng import stream_seed
from ...rows import seat_of
from .match import poker_bot
from .replay import policy_view
from .rows import PokerPufferEnv
from .rules import ACTION_WIDTH, FOLD, PokerRules, rules_named
from .words import action_word, card_name, hand_text, legal_actions


def action_probabilities(actor: PolicyActor, obs: np.ndarray, row: int) -> tuple[int, np.ndarray]:
    """The agent's action for `row` and its probability of each action (0 where illegal)."""
    action = int(actor.act(obs, np.array([row]))[0, 0])
    probs, _ = policy_view(actor, obs[[row]], np.array([0]))
    return action, probs[0]


def agent_says(rules: PokerRules, obs_row: np.ndarray, action: int, probs: np.ndarray) -> str:
    legal = legal_actions(rules, obs_row)
    shown = ", ".join(f"{action_word(rules, obs_row, a)} {probs[a]:.0%}" for a in legal)
    return f"{action_word(rules, obs_row, action)}   (its policy: {shown})"


def human_action(rules: PokerRules, obs_row: np.ndarray, console: Console, read: Callable[[str], str]) -> int:
    legal = legal_actions(rules, obs_row)
    for i, a in enumerate(legal, 1):
        console.print(f"  {i}. {action_word(rules, obs_row, a)}", markup=False)
    while True:
        answer = read(f"your action [1-{len(legal)}]: ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(legal):
            return legal[int(answer) - 1]
        console.print(f"enter a number from 1 to {len(legal)} (got {answer!r})", markup=False)


def play_poker(
    args: argparse.Namespace, loaded: LoadedCheckpoint, console: Console, read: Callable[[str], str]
) -> list[int]:
    """Plays args.games hands of the agent `loaded`; its results: +1 won chips, 0 split, -1 lost."""
    if args.deck is not None:
        raise ArgumentError("--deck: poker has no decks (each hand is dealt from the one deck)")
    game = checkpoint_game(loaded.state)
    rules = rules_named(game)
    env = PokerPufferEnv(game, num_games=1, seed=args.seed)
    agent = policy_side(loaded.policy.eval(), checkpoint_sampler(loaded), args.seed, name="agent")(env)
    opponent = None
    if args.opponent is not None:
        seed = stream_seed(args.seed, "second_side")
        try:
            opponent = poker_bot(args.opponent, seed)
        except ValueError:
            other = load_checkpoint(args.opponent, policy_config=None, game=game)
            opponent = policy_side(other.policy.eval(), checkpoint_sampler(other), seed, name="opponent")(env)
    me, results, chips = args.seat, [], 0.0
    obs, _ = env.reset(args.seed)
    actions = np.zeros((2, ACTION_WIDTH), dtype=np.int32)
    while len(results) < args.games:
        row = int(np.flatnonzero(env.masks)[0])
        private = env.stepper.cards[0, :2].copy()  # this hand's (a finished hand's game is dealt anew)
        if seat_of(row) == me and opponent is None:
            console.print(Panel(hand_text(rules, obs[row]), title=f"hand {len(results) + 1}"))
            if args.reveal:
                console.print(f"(the agent holds {card_name(rules, private[1 - me])})")
            actions[row] = human_action(rules, obs[row], console, read)
        elif seat_of(row) == me and isinstance(opponent, PolicyActor):
            actions[row], probs = action_probabilities(opponent, obs, row)
            console.print(f"[bold]opponent[/bold]: {agent_says(rules, obs[row], int(actions[row, 0]), probs)}")
        elif seat_of(row) == me:
            actions[row] = opponent.act(obs, np.array([row]))[0]
            console.print(f"[bold]{args.opponent}[/bold]: {action_word(rules, obs[row], int(actions[row, 0]))}")
        else:
            actions[row], probs = action_probabilities(agent, obs, row)
            console.print(f"[bold]agent[/bold]: {agent_says(rules, obs[row], int(actions[row, 0]), probs)}")
        folded = actions[row, 0] == FOLD
        obs, _, terminals, truncations, infos = env.step(actions)
        if terminals[0] or truncations[0]:
            won = float(infos[0]["returns"][1 - me])
            results.append(int(np.sign(won)))
            chips += won
            cards = (
                ""
                if folded
                else f"; cards: agent {card_name(rules, private[1 - me])}, "
                + (f"{'you' if opponent is None else args.opponent} {card_name(rules, private[me])}")
            )
            verdict = f"won {won:g} chips" if won > 0 else f"lost {-won:g} chips" if won < 0 else "split the pot"
            console.print(f"[bold]hand {len(results)}: the agent {verdict}[/bold]{cards}")
            agent.reset_rows(np.arange(2))
            if isinstance(opponent, PolicyActor):
                opponent.reset_rows(np.arange(2))
    console.print(f"the agent's chips over {len(results)} hand(s): {chips:+g}")
    return results
