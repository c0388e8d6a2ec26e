"""tools/regret_map.py on Kuhn poker (its tree is small): a solved policy leaves no regret, uniform
play's is where its exploitability says, and the logit equilibrium's exploitability falls with
its temperature toward the Nash equilibrium's 0."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import cfr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from regret_map import exploring_draw, logit_equilibrium_exploitability, main, state_figures  # noqa: E402

from tcgleague.games.poker.exact import JUDGED  # noqa: E402
from tcgleague.openspiel_judge import measure, openspiel_game, table_of, table_policy  # noqa: E402

KUHN = JUDGED["kuhn"]
UNIFORM_KUHN = 0.458333333  # OpenSpiel's exploitability of uniform play


def solved_table() -> dict[str, list[float]]:
    solver = cfr.CFRPlusSolver(openspiel_game(KUHN))
    for _ in range(300):
        solver.evaluate_and_update_policy()
    return table_of(solver.average_policy())


def uniform_table() -> dict[str, list[float]]:
    return table_of(openspiel_policy.TabularPolicy(openspiel_game(KUHN)))  # a fresh table: uniform over legal actions


def test_a_solved_policy_leaves_no_regret_and_uniform_play_leaves_what_its_best_response_takes():
    spiel = openspiel_game(KUHN)
    solved = state_figures(spiel, table_policy(solved_table()))
    uniform = state_figures(spiel, table_policy(uniform_table()))
    assert len(solved) == len(uniform) == 12  # Kuhn's information states
    assert sum(f.regret for f in solved) < 2e-3
    assert sum(f.regret for f in uniform) > 0.3
    for figures in (solved, uniform):
        assert all(0.0 <= f.own_reach <= 1.0 and f.others_reach > 0 for f in figures)
        first = [f for f in figures if len(f.key) == 1]  # each seat's card alone: a first decision
        assert [f.own_reach for f in first] == [1.0] * len(first)
    # what a best response gains over a policy is at most the sum of the policy's counterfactual
    # regrets (CFR's bound): NashConv = 2 x exploitability
    for figures, table in ((solved, solved_table()), (uniform, uniform_table())):
        assert sum(f.regret for f in figures) >= 2 * measure(KUHN, table_policy(table)).exploitability - 1e-9


def test_the_logit_equilibrium_tends_to_the_nash_equilibrium_as_its_temperature_falls():
    hot, _ = logit_equilibrium_exploitability(KUHN, 10.0, 200, 0.2)
    warm, warm_change = logit_equilibrium_exploitability(KUHN, 0.3, 400, 0.1)
    cool, cool_change = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05)
    assert warm_change < 1e-6 and cool_change < 1e-4  # settled
    assert UNIFORM_KUHN > hot > warm > cool > 0.0
    assert cool < 0.06


def test_a_cool_logit_equilibrium_settles_sooner_from_a_warmer_ones_solution():
    settled, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05)
    cold, cold_change = logit_equilibrium_exploitability(KUHN, 0.1, 100, 0.05)
    solution: dict[str, list[float]] = {}
    logit_equilibrium_exploitability(KUHN, 0.3, 400, 0.1, solution)
    continued, continued_change = logit_equilibrium_exploitability(KUHN, 0.1, 100, 0.05, solution)
    assert continued_change < 0.8 * cold_change
    assert abs(continued - settled) < 0.6 * abs(cold - settled)


def test_answering_an_exploring_opponent_moves_the_logit_equilibrium_away_from_the_nash_equilibrium():
    # the answers a learner trains on its opponent's uniform exploring draws assume an opponent
    # that bluffs at random: the fixed point is further from equilibrium the more it explores
    plain, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05)
    none, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.0)
    some, some_change = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.05)
    more, more_change = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.2)
    assert none == plain
    assert some_change < 1e-4 and more_change < 1e-4  # settled
    assert plain < some < more


def test_tempered_exploring_draws_keep_the_fixed_point_nearer_the_equilibrium_than_uniform_ones():
    # a draw from the policy at temperature 3 keeps which cards bet more often: the answers learned
    # against it assume a less distorted range than a uniform draw's (exploration.py)
    plain, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05)
    uniform, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.2)
    tempered, change = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.2, explore_temperature=3.0)
    own, _ = logit_equilibrium_exploitability(KUHN, 0.1, 800, 0.05, explore=0.2, explore_temperature=1.0)
    assert change < 1e-4 and plain < tempered < 0.6 * uniform
    assert abs(own - plain) < 1e-9, "drawn at temperature 1 an exploring draw is the policy's own"


def test_an_exploring_draw_is_uniform_or_the_policy_flattened():
    p = np.array([0.9, 0.09, 0.01])
    assert exploring_draw(p, 0.0) == pytest.approx(np.full(3, 1 / 3))
    assert exploring_draw(p, 1.0) == pytest.approx(p)
    tempered = exploring_draw(p, 3.0)
    assert tempered.sum() == pytest.approx(1.0) and tempered[0] > tempered[1] > tempered[2] > 0.1
    assert tempered[0] / tempered[2] == pytest.approx(90 ** (1 / 3))


def test_the_figures_against_an_exploring_opponent_weigh_its_trembles_and_keep_the_own_reach():
    spiel = openspiel_game(KUHN)
    solved = table_policy(solved_table())
    plain = {f.key: f for f in state_figures(spiel, solved)}
    trembled = {f.key: f for f in state_figures(spiel, solved, explore=1.0)}
    assert plain.keys() == trembled.keys()
    for key, f in trembled.items():
        assert f.own_reach == plain[key].own_reach  # the seat's own play is the policy's
        # an opponent that always explores reaches it with 1/2 per move it made (Kuhn's keys: a card,
        # then the moves; the opponent made every other one, the first if the seat acts second),
        # the deal with 1/3 (the seat's card fixed, the opponent's one of two, each 1/6)
        card, moves = key[0], key[1:]
        assert card in "012" and set(moves) <= set("pb")
        opponent_moves = (len(moves) + 1) // 2
        assert abs(f.others_reach - 0.5**opponent_moves / 3) < 1e-12, key


def test_the_tool_reports_a_file_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    table = tmp_path / "kuhn_table.pt"
    torch.save(solved_table(), table)
    assert main([str(table), "--game", "kuhn", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert f"exploitability {measure(KUHN, table_policy(solved_table())).exploitability:.4f}" in out
    assert out.count("regret ") >= 3 and "closest logit response" in out
    for argv, message in (
        ([], "give a policy file"),
        ([str(table)], "give --game NAME"),
        ([str(tmp_path / "missing.pt"), "--game", "kuhn"], "not found"),
        (["--game", "kuhn", "--logit-equilibria", "0"], "must be > 0"),
        (["--game", "kuhn", "--logit-equilibria", "0.1", "--explore-share", "1"], "must be in [0, 1)"),
        (["--game", "kuhn", "--logit-equilibria", "0.1", "--explore-temperature", "0.5"], "0 (uniform) or >= 1"),
        (["--game", "emberfront", "--logit-equilibria", "1"], "has no exact judge"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, (argv, err)
