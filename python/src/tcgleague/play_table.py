"""A small table game in the terminal (`python play.py CKPT` with a poker or Liar's Dice
checkpoint; `Game.play`): at each of the person's decisions what their seat knows in the game's
words (table_words.py) and their legal actions numbered; the agent's action with its
probabilities; at the end of a game both holdings (unless the game hides them, as a fold does)
and what was won. With --opponent a bot or another checkpoint plays the person's seat and the
games are watched."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.panel import Panel

from .actors import PolicyActor
from .checkpoint import LoadedCheckpoint, load_checkpoint
from .checkpoint.deployed import checkpoint_sampler
from .errors import ArgumentError
from .fingerprint import checkpoint_game
from .match import policy_side
from .replay.table import policy_view
from .rng import stream_seed
from .rows import seat_of
from .table_words import TableWords


def action_probabilities(actor: PolicyActor, obs: np.ndarray, row: int) -> tuple[int, np.ndarray]:
    """The agent's action for `row` and its probability of each action (0 where illegal)."""
    action = int(actor.act(obs, np.array([row]))[0, 0])
    probs, _ = policy_view(actor, obs[[row]], np.array([0]))
    return action, probs[0]


def agent_says(words: TableWords, row: np.ndarray, action: int, probs: np.ndarray) -> str:
    shown = ", ".join(f"{words.action(row, a)} {probs[a]:.0%}" for a in words.legal(row))
    return f"{words.action(row, action)}   (its policy: {shown})"


def human_action(words: TableWords, row: np.ndarray, console: Console, read: Callable[[str], str]) -> int:
    legal = words.legal(row)
    for i, a in enumerate(legal, 1):
        console.print(f"  {i}. {words.action(row, a)}", markup=False)
    while True:
        answer = read(f"your action [1-{len(legal)}]: ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(legal):
            return legal[int(answer) - 1]
        console.print(f"enter a number from 1 to {len(legal)} (got {answer!r})", markup=False)


def verdict(words: TableWords, won: float) -> str:
    if words.points is None:
        return "won" if won > 0 else "lost" if won < 0 else "drew"
    return f"won {won:g} {words.points}" if won > 0 else f"lost {-won:g} {words.points}" if won < 0 else "split the pot"


def play_table(
    words: TableWords,
    make_env: Callable[[str, int], object],
    make_bot: Callable[[str, int], object],
    args: argparse.Namespace,
    loaded: LoadedCheckpoint,
    console: Console,
    read: Callable[[str], str],
) -> list[int]:
    """Plays args.games games of the agent `loaded` (`make_env(game, seed)`: a one-game env of
    its game; `make_bot(name, seed)`: a bot, ValueError if none is so named); its results: +1
    won, 0 drawn or split, -1 lost."""
    game = checkpoint_game(loaded.state)
    if args.deck is not None:
        raise ArgumentError(f"--deck: {game} has no decks (a {words.noun} deals no deck)")
    env = make_env(game, args.seed)
    agent = policy_side(loaded.policy.eval(), checkpoint_sampler(loaded), args.seed, name="agent")(env)
    opponent = None
    if args.opponent is not None:
        seed = stream_seed(args.seed, "second_side")
        try:
            opponent = make_bot(args.opponent, seed)
        except ValueError:
            other = load_checkpoint(args.opponent, policy_config=None, game=game)
            opponent = policy_side(other.policy.eval(), checkpoint_sampler(other), seed, name="opponent")(env)
    me, you = args.seat, "you" if opponent is None else args.opponent
    results, total = [], 0.0
    obs, _ = env.reset(args.seed)
    actions = np.zeros((2, 1), dtype=np.int32)
    while len(results) < args.games:
        row = int(np.flatnonzero(env.masks)[0])
        held = words.held(env)  # this game's (a finished game's slot is dealt anew)
        if seat_of(row) == me and opponent is None:
            console.print(Panel(words.situation(obs[row]), title=f"{words.noun} {len(results) + 1}"))
            if args.reveal:
                console.print(f"(the agent holds {held[1 - me]})")
            actions[row] = human_action(words, obs[row], console, read)
        elif seat_of(row) == me and isinstance(opponent, PolicyActor):
            actions[row], probs = action_probabilities(opponent, obs, row)
            console.print(f"[bold]opponent[/bold]: {agent_says(words, obs[row], int(actions[row, 0]), probs)}")
        elif seat_of(row) == me:
            actions[row] = opponent.act(obs, np.array([row]))[0]
            console.print(f"[bold]{args.opponent}[/bold]: {words.action(obs[row], int(actions[row, 0]))}")
        else:
            actions[row], probs = action_probabilities(agent, obs, row)
            console.print(f"[bold]agent[/bold]: {agent_says(words, obs[row], int(actions[row, 0]), probs)}")
        shown = words.shows_holdings(obs[row], int(actions[row, 0]))
        obs, _, terminals, truncations, infos = env.step(actions)
        if terminals[0] or truncations[0]:
            won = float(infos[0]["returns"][1 - me])
            results.append(int(np.sign(won)))
            total += won
            holdings = f"; agent {held[1 - me]}, {you} {held[me]}" if shown else ""
            console.print(f"[bold]{words.noun} {len(results)}: the agent {verdict(words, won)}[/bold]{holdings}")
            agent.reset_rows(np.arange(2))
            if isinstance(opponent, PolicyActor):
                opponent.reset_rows(np.arange(2))
    if words.points is None:
        console.print(f"the agent won {results.count(1)} of {len(results)} {words.noun}(s)")
    else:
        console.print(f"the agent's {words.points} over {len(results)} {words.noun}(s): {total:+g}")
    return results
