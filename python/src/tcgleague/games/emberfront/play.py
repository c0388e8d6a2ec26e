"""Emberfront in the terminal (`python play.py CKPT`, play.py): the board drawn at each of the
person's decisions, their legal actions a numbered list in words, the agent's move shown with
its most likely alternatives (cards still in its hand unnamed, unless --reveal); or, with
--opponent, the agent watched playing a bot or another checkpoint, move by move."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from ...actors import PolicyActor
from ...checkpoint import LoadedCheckpoint, load_checkpoint
from ...checkpoint.deployed import checkpoint_sampler, checkpoint_turn_cap
from ...errors import ArgumentError
from ...match import policy_side
from ...rng import stream_seed
from ...rows import seat_of
from .bots import BOTS, make_bot
from .engine.cards import CardPool, load_card_pool
from .env import TCGEnv
from .layout import ACTION_WIDTH, DRAW, NAME, legal_actions
from .lookahead import LookaheadActor, lookahead_side
from .words import board_text, describe

TOP_K = 3  # the agent's alternatives shown with its move


# ---- players ---------------------------------------------------------------------------------------
def agent_actor(
    loaded: LoadedCheckpoint, env: TCGEnv, seed: int, name: str, lookahead: float | None = None
) -> PolicyActor | LookaheadActor:
    """A checkpoint as an actor for `env`'s rows: the side evaluate_checkpoint plays (with
    `lookahead`, searching a turn ahead at that value weight)."""
    side = policy_side(loaded.policy.eval(), checkpoint_sampler(loaded), seed, name=name)
    return side(env) if lookahead is None else lookahead_side(side, seed, lookahead)(env)


def agent_move(
    actor: PolicyActor | LookaheadActor,
    obs: np.ndarray,
    row: int,
    cards: CardPool,
    console: Console,
    label: str,
    hide_hand: bool,
):
    """The agent's action for `row`, printed with its policy's top alternatives (with
    `hide_hand`, cards it keeps in hand are not named: the move it makes reveals only the card
    it plays); a lookahead that overrode the sampled move says so."""
    policy = actor.inner if isinstance(actor, LookaheadActor) else actor
    if isinstance(actor, LookaheadActor):
        d, chosen = actor.search(obs, np.array([row]))
    else:
        d = actor.decide(torch.as_tensor(obs[row][None], device=actor.device), torch.tensor([row], device=actor.device))
        chosen = d.actions.cpu().numpy().astype(np.int32)
    action = chosen[0]
    legal, count = legal_actions(obs[row][None])
    logprob = policy.legal_log_probs(torch.as_tensor(obs[row][None], device=policy.device), d.state_h, d.state_c)
    probs = logprob[0, : int(count[0])].exp().cpu().numpy()
    top = np.argsort(-probs)[:TOP_K]
    alternatives = ", ".join(f"{describe(legal[0, i], obs[row], cards, 'its', hide_hand)} {probs[i]:.0%}" for i in top)
    move = escape(describe(action, obs[row], cards, "its"))
    if not np.array_equal(action, d.actions[0].cpu().numpy()):
        move += " (lookahead's choice)"
    console.print(f"[bold]{label}[/bold]: {move}   [dim](top: {escape(alternatives)})[/dim]")
    return action


def human_move(obs_row: np.ndarray, cards: CardPool, console: Console, read: Callable[[str], str]) -> np.ndarray:
    legal, count = legal_actions(obs_row[None])
    n = int(count[0])
    for i in range(n):
        console.print(f"  {i + 1:>3}. {describe(legal[0, i], obs_row, cards)}", markup=False)
    while True:
        answer = read(f"your move [1-{n}]: ").strip()
        if answer.isdigit() and 1 <= int(answer) <= n:
            return legal[0, int(answer) - 1].astype(np.int32)
        console.print(f"enter a number from 1 to {n} (got {answer!r})", markup=False)


# ---- the game loop ---------------------------------------------------------------------------------
def play_emberfront(
    args: argparse.Namespace, loaded: LoadedCheckpoint, console: Console, read: Callable[[str], str]
) -> list[int]:
    """Plays args.games games of the agent `loaded`; returns its results: +1 win, 0 draw, -1 loss."""
    cards = load_card_pool()
    me = args.seat  # the human's seat, or, watching, the opponent's
    env = make_env(args, cards, checkpoint_turn_cap(loaded))  # the agent's games are played at its run's cap
    agent = agent_actor(loaded, env, args.seed, "agent", args.lookahead)
    opponent = None
    if args.opponent in BOTS:
        opponent = make_bot(args.opponent, env, stream_seed(args.seed, "second_side"))
    elif args.opponent is not None:
        checkpoint = load_checkpoint(args.opponent, policy_config=None, game=NAME)
        opponent = agent_actor(checkpoint, env, stream_seed(args.seed, "second_side"), "opponent")
    obs, _ = env.reset(args.seed)
    results: list[int] = []
    actions = np.zeros((2, ACTION_WIDTH), dtype=np.int32)
    human = opponent is None
    while len(results) < args.games:
        row = int(np.flatnonzero(env.masks)[0])
        if seat_of(row) == me:
            if opponent is None:
                board = escape(board_text(env, None if args.reveal else 1 - me))
                console.print(Panel(board, title=f"game {len(results) + 1}"))
                actions[row] = human_move(obs[row], cards, console, read)
            elif isinstance(opponent, PolicyActor):
                actions[row] = agent_move(opponent, obs, row, cards, console, "opponent", hide_hand=False)
            else:
                actions[row] = opponent.act(obs, np.array([row]))[0]
                console.print(f"[bold]{args.opponent}[/bold]: {escape(describe(actions[row], obs[row], cards, 'its'))}")
        else:
            actions[row] = agent_move(agent, obs, row, cards, console, "agent", hide_hand=human and not args.reveal)
        obs, _, terminals, truncations, infos = env.step(actions)
        if terminals[0] or truncations[0]:
            winner = infos[0]["winner"]
            results.append(0 if winner == DRAW else (-1 if winner == me else 1))
            who = "you" if opponent is None else args.opponent
            verdict = {-1: f"{who} won", 0: "a draw", 1: "the agent won"}[results[-1]]
            console.print(f"[bold]game {len(results)}: {verdict}[/bold] ({infos[0]['turns']} turns)")
            agent.reset_rows(np.arange(2))
            if isinstance(opponent, PolicyActor):
                opponent.reset_rows(np.arange(2))
    return results


def make_env(args: argparse.Namespace, cards: CardPool, turn_cap: int) -> TCGEnv:
    """One game; with --deck the human's (or watched opponent's) seat plays that deck."""
    pool = None
    if args.deck is not None:
        if args.deck not in cards.deck_names:
            raise ArgumentError(f"--deck {args.deck!r}: not a deck (decks: {', '.join(cards.deck_names)})")
        pool = {f"seat{args.seat}": [args.deck], f"seat{1 - args.seat}": list(cards.deck_names)}
    return TCGEnv(num_games=1, seed=args.seed, deck_pool=pool, turn_cap=turn_cap)
