"""Emberfront's part of a match (match.Table) and its matches: a deal is (seed, deck X, deck Y) -
the shuffles, the opening hands and who goes first - played as dealt and with the seats
exchanged (`env.set_deal(..., swapped)`), so the learner plays both hands of every deal, once
going first, once second; the trainer's periodic evaluation against the bots; the league's
`Runner` for this game.

    report = play_match(policy_side(policy, sampler, seed=0), bot_side("greedy"), episodes=1000, seed=0)
    report.winrate, report.wilson, report.summary()
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...actors import Actor
from ...match import ActorFactory, MatchRecorder, MatchReport, play_duplicate, policy_side
from ...policy.family import Policy, Sampler
from ...rng import stream_seed
from .bots import BOTS, SCRIPTED, RandomBot, make_bot
from .env import TCGEnv
from .layout import DEFAULT_TURN_CAP, DRAW, PASS


def bot_side(name: str, seed: int = 0) -> ActorFactory:
    """A bot (bots.SCRIPTED: "random", "greedy" or "lookahead_greedy") as a match side."""
    if name not in SCRIPTED:
        raise ValueError(f"unknown bot {name!r}; valid: {', '.join(SCRIPTED)}")
    return lambda env: make_bot(name, env, seed)


@dataclass(frozen=True)
class Deal:
    seed: int
    deck_x: int
    deck_y: int


def make_deals(n: int, seed: int, n_decks: int, decks: tuple[int, int] | None = None) -> list[Deal]:
    """`n` deals from `seed`: a 62-bit game seed and two starter decks drawn uniformly each
    (or always the deck pair `decks`)."""
    rng = np.random.default_rng([seed, 0x5EA1])
    seeds = rng.integers(0, 2**62, size=n, dtype=np.int64)
    drawn = rng.integers(0, n_decks, size=(n, 2))
    if decks is not None:
        drawn[:] = decks
    return [Deal(int(s), int(x), int(y)) for s, (x, y) in zip(seeds, drawn)]


def deal_game(env: TCGEnv, game: int, deal: Deal, swapped: bool) -> None:
    """Starts `env`'s game `game` on `deal`, as dealt or with the seats exchanged (how the
    runner plays both hands of a deal, and how a replay re-plays one of its games)."""
    if swapped:
        env.set_deal(game, deal.seed, deal.deck_y, deal.deck_x, True)
    else:
        env.set_deal(game, deal.seed, deal.deck_x, deal.deck_y, False)


class EmberfrontTable:
    """Emberfront's part of a match: deals are (game seed, deck X, deck Y), both decks drawn
    uniformly from the starter decks (or always the pair `decks`), games capped at `turn_cap`."""

    noop_action_type = PASS

    def __init__(self, turn_cap: int = DEFAULT_TURN_CAP, decks: tuple[int, int] | None = None):
        self.turn_cap, self.decks = turn_cap, decks

    def make_env(self, num_games: int, seed: int) -> TCGEnv:
        return TCGEnv(num_games=num_games, seed=seed, turn_cap=self.turn_cap)

    def deals(self, env: TCGEnv, n: int, seed: int) -> list[Deal]:
        return make_deals(n, seed, len(env.pool.deck_names), self.decks)

    def deal(self, env: TCGEnv, slot: int, deal: Deal, swapped: bool) -> None:
        deal_game(env, slot, deal, swapped)

    def outcome(self, env: TCGEnv, seat: int, info: dict) -> dict:
        names, winner = env.pool.deck_names, info["winner"]
        result = 0 if winner == DRAW else (1 if winner == seat else -1)
        return dict(
            deck=names[info[f"deck{seat}"]],
            opp_deck=names[info[f"deck{1 - seat}"]],
            went_first=info["first_player"] == seat,
            result=result,
            decisions=int(info["decisions"]),
            turns=int(info["turns"]),
            truncated=bool(info["truncated"]),
            reward=float(result),
        )

    def filler(self, seed: int) -> Actor:
        return RandomBot(stream_seed(seed, "match_filler"))


def play_match(
    learner: ActorFactory,
    opponent: ActorFactory,
    episodes: int,
    seed: int,
    parallel: int = 256,
    turn_cap: int = DEFAULT_TURN_CAP,
    decks: tuple[int, int] | None = None,
    recorder: MatchRecorder | None = None,
) -> MatchReport:
    """An Emberfront match (`play_duplicate` on `EmberfrontTable(turn_cap, decks)`)."""
    return play_duplicate(EmberfrontTable(turn_cap, decks), learner, opponent, episodes, seed, parallel, recorder)


def evaluate_vs_bots(policy: Policy, sampler: Sampler, games: int, seed: int, turn_cap: int) -> dict:
    """eval/winrate_vs_<bot> and eval/games_vs_<bot>: a duplicate match vs each bot, on `seed`'s deals."""
    out = {}
    for bot in BOTS:
        report = play_match(
            policy_side(policy, sampler, seed),
            bot_side(bot, stream_seed(seed, "second_side")),
            games,
            seed,
            turn_cap=turn_cap,
        )
        out[f"eval/winrate_vs_{bot}"] = report.winrate
        out[f"eval/games_vs_{bot}"] = float(report.games)
    return out
