"""The game runner (emberfront_match.play_match): the duplicate format (the learner plays both hands of every
deal, in one seat), the schedule's size and seat balance, seeding, and results from the learner's
side."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch

from tcgleague.checkpoint import load_checkpoint
from tcgleague.games.emberfront.bots import GREEDY, RANDOM
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.match import bot_side, make_deals, play_match
from tcgleague.games.emberfront.policy import PolicyConfig, TCGPolicy
from tcgleague.games.emberfront.sampler import TCGSampler
from tcgleague.match import policy_side

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def by_game(report):
    return sorted(report.records, key=lambda r: (r.deal, r.swapped))


def pairs(report):
    """(as dealt, seats exchanged) record pairs per deal."""
    records = by_game(report)
    return list(zip(records[0::2], records[1::2]))


def test_learner_plays_both_hands_of_every_deal():
    """Each deal is played twice, as dealt and with the seats exchanged; the learner keeps its seat
    (alternating from deal to deal), so it holds each deck once and goes first once."""
    report = play_match(bot_side(GREEDY), bot_side(RANDOM, seed=1), episodes=10, seed=4, parallel=3)
    assert report.games == 10 and report.opponent == RANDOM
    assert Counter(r.deal for r in report.records) == {k: 2 for k in range(5)}
    for plain, swapped in pairs(report):
        assert (plain.deal, plain.swapped, swapped.swapped) == (swapped.deal, False, True)
        assert plain.seat == swapped.seat == plain.deal % 2
        assert (plain.deck, plain.opp_deck) == (swapped.opp_deck, swapped.deck)
        assert plain.went_first != swapped.went_first


@pytest.mark.parametrize("episodes", [1, 2, 7, 10])
def test_episodes_round_up_to_whole_deals(episodes):
    report = play_match(bot_side(RANDOM, seed=0), bot_side(RANDOM, seed=1), episodes, seed=2, parallel=4)
    n_deals = math.ceil(episodes / 2)
    assert report.games == len(report.records) == 2 * n_deals == episodes + episodes % 2
    assert sorted({r.deal for r in report.records}) == list(range(n_deals))
    t = report.tally
    assert (t.wins, t.losses, t.draws) == (report.wins, report.losses, report.draws) and t.games == report.games


@pytest.mark.parametrize("episodes", [12, 10])
def test_per_seat_and_turn_order_counts_are_balanced(episodes):
    report = play_match(bot_side(RANDOM, seed=0), bot_side(GREEDY), episodes, seed=6, parallel=8)
    n_deals = episodes // 2
    summary = report.summary()
    seats = {k: v["games"] for k, v in summary["per_seat"].items()}
    assert seats == {"seat0": 2 * math.ceil(n_deals / 2), "seat1": 2 * (n_deals // 2)}
    assert {k: v["games"] for k, v in summary["per_turn_order"].items()} == {"first": n_deals, "second": n_deals}
    assert sum(v["games"] for v in summary["per_deck"].values()) == report.games


def test_same_seed_same_records():
    def run(seed, parallel=16):
        return play_match(bot_side(RANDOM, seed=0), bot_side(RANDOM, seed=1), 24, seed=seed, parallel=parallel)

    a, b = run(11), run(11)
    assert a.records == b.records and a.learner_decisions == b.learner_decisions
    assert by_game(run(12)) != by_game(a)
    # deterministic players: the games are fixed by the deals alone, however many run at once
    greedy = [play_match(bot_side(GREEDY), bot_side(GREEDY), 24, seed=11, parallel=p) for p in (48, 5)]
    assert by_game(greedy[0]) == by_game(greedy[1])


def test_duplicate_hands_mirror_for_identical_deterministic_players():
    """Greedy vs greedy: the swapped game is the dealt one with the roles exchanged, so each pair's
    results are opposite (deal luck cancels exactly) and the match is even."""
    report = play_match(bot_side(GREEDY), bot_side(GREEDY), 64, seed=3, parallel=64)
    for plain, swapped in pairs(report):
        assert plain.result == -swapped.result and plain.turns == swapped.turns, plain.deal
    assert report.wins == report.losses and report.winrate == 0.5


def test_fixed_deck_pair_and_deals():
    env = TCGEnv(num_games=1)
    names = env.pool.deck_names
    report = play_match(bot_side(GREEDY), bot_side(RANDOM), 8, seed=1, parallel=8, decks=(0, 1))
    assert all({r.deck, r.opp_deck} == {names[0], names[1]} for r in report.records)
    deals = make_deals(6, seed=1, n_decks=len(names))
    assert deals == make_deals(6, seed=1, n_decks=len(names)) and deals != make_deals(6, seed=2, n_decks=len(names))
    assert len({d.seed for d in deals}) == 6


def test_policy_side_state_is_per_game():
    """An argmax policy vs greedy is deterministic: the same records whether its rows are reused
    by later games (parallel 3) or not, so each game starts from a fresh LSTM state."""
    torch.manual_seed(0)
    env = TCGEnv(num_games=1)
    policy = TCGPolicy(PolicyConfig(n_cards=env.pool.n_cards, card_embed_dim=4, entity_dim=8, hidden_size=16))
    with torch.no_grad():  # a recurrence strong enough that a stale state changes play
        policy.lstm.weight_ih.mul_(4.0)
        policy.lstm.weight_hh.mul_(4.0)
    reports = [
        play_match(policy_side(policy, TCGSampler(), seed=0, argmax=True), bot_side(GREEDY), 12, seed=5, parallel=p)
        for p in (12, 3)
    ]
    assert by_game(reports[0]) == by_game(reports[1])
    assert reports[0].learner_decisions > 0 and np.isfinite(reports[0].entropy)
    assert 0.0 <= reports[0].noop_rate <= 1.0


# ---- a trained policy (conftest's smoke checkpoint) -------------------------------------------------
def play_duplicate(policy, sampler, opponent: str, episodes: int, seed: int, parallel: int):
    """The former evaluate.play_duplicate: the policy vs a bot, through the game runner."""
    return play_match(
        policy_side(policy, sampler, seed), bot_side(opponent, seed + 1), episodes, seed, parallel=parallel
    )


def test_duplicate_format_gives_the_learner_both_hands_of_every_deal(smoke_checkpoint):
    loaded = load_checkpoint(smoke_checkpoint)
    report = play_duplicate(loaded.policy, TCGSampler(), "greedy", episodes=24, seed=5, parallel=5)
    assert report.games == 24
    by_deal: dict = {}
    for r in report.records:
        by_deal.setdefault(r.deal, []).append(r)
    assert len(by_deal) == 12
    for deal, (g1, g2) in by_deal.items():
        assert {g1.swapped, g2.swapped} == {False, True} and g1.seat == g2.seat == deal % 2
        assert g1.went_first != g2.went_first
        assert (g1.deck, g1.opp_deck) == (g2.opp_deck, g2.deck), "the learner plays each side's hand once"
    again = play_duplicate(loaded.policy, TCGSampler(), "greedy", episodes=24, seed=5, parallel=7)
    assert sorted((r.deal, r.swapped, r.deck, r.went_first) for r in again.records) == sorted(
        (r.deal, r.swapped, r.deck, r.went_first) for r in report.records
    ), "deals are pre-generated"
