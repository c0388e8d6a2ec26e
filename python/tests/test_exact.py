"""The exact tool (tcgleague.exact) against OpenSpiel's own numbers: the uniform random policy
(given as a policy over our env's rows) and a CFR policy (saved as a checkpoint-shaped table,
loaded back, and also read through our rows) get the NashConv and exploitability OpenSpiel
computes for them; the command prints them and refuses bad tables on one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as openspiel_policy  # noqa: E402
from open_spiel.python.algorithms import cfr, exploitability  # noqa: E402

from tcgleague.exact import main  # noqa: E402
from tcgleague.games.poker.exact import JUDGED, decision_rows  # noqa: E402
from tcgleague.games.poker.openspiel import info_state_string, openspiel_action  # noqa: E402
from tcgleague.games.poker.rules import KUHN, LEDUC, NUM_ACTIONS  # noqa: E402
from tcgleague.openspiel_judge import load_table, measure, rows_policy, table_of, table_policy  # noqa: E402

# OpenSpiel's uniform random policy: NashConv 11/12 in Kuhn, about 4.747 in Leduc (chips per game)
UNIFORM_NASH_CONV = {"kuhn": (0.916, 0.917), "leduc": (4.74, 4.75)}
CFR_ITERATIONS = {"kuhn": 100, "leduc": 5}


def uniform_rows(rows: np.ndarray) -> np.ndarray:
    legal = rows[-1, -NUM_ACTIONS:].astype(np.float64)
    return legal / legal.sum()


@pytest.mark.parametrize("rules", [KUHN, LEDUC], ids=lambda r: r.name)
def test_uniform_random_over_our_rows_gets_openspiels_values(rules):
    game = pyspiel.load_game(rules.openspiel_name)
    uniform = openspiel_policy.UniformRandomPolicy(game)
    result = measure(JUDGED[rules.name], rows_policy(JUDGED[rules.name], uniform_rows))
    assert result.nash_conv == pytest.approx(exploitability.nash_conv(game, uniform), abs=1e-9)
    assert result.exploitability == pytest.approx(exploitability.exploitability(game, uniform), abs=1e-9)
    low, high = UNIFORM_NASH_CONV[rules.name]
    assert low < result.nash_conv < high


@pytest.fixture(scope="module", params=[KUHN, LEDUC], ids=lambda r: r.name)
def cfr_policy(request):
    """(rules, CFR's average policy, OpenSpiel's exploitability of it)."""
    rules = request.param
    game = pyspiel.load_game(rules.openspiel_name)
    solver = cfr.CFRSolver(game)
    for _ in range(CFR_ITERATIONS[rules.name]):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    return rules, average, exploitability.exploitability(game, average)


def test_a_cfr_policy_saved_as_a_table_gets_openspiels_exploitability(cfr_policy, tmp_path):
    rules, average, expected = cfr_policy
    torch.save(table_of(average), tmp_path / "cfr.pt")
    table = load_table(tmp_path / "cfr.pt")
    result = measure(JUDGED[rules.name], table_policy(table))
    assert result.exploitability == pytest.approx(expected, abs=1e-9)
    uniform_exploitability = UNIFORM_NASH_CONV[rules.name][0] / 2
    assert result.exploitability < uniform_exploitability / 1.5, "CFR is well below uniform random already"


def test_the_rows_seam_reads_the_same_table_through_our_observations(cfr_policy):
    """A policy over rows that looks its last row's information state up in CFR's table: the
    same policy, so the same exploitability. Every history it is handed is the acting seat's
    own decisions, oldest first, each a prefix of the next."""
    rules, average, expected = cfr_policy
    table = table_of(average)

    def from_table(rows: np.ndarray) -> np.ndarray:
        history = rows[:, rules.history_offset : rules.info_width]
        assert (rows[:, : rules.public_offset] == rows[-1, : rules.public_offset]).all(), "one seat, one private card"
        assert (np.diff(history.sum(axis=1)) > 0).all() and (history <= history[-1]).all(), "each a prefix of the next"
        legal, row = rows[-1, rules.legal_offset :], table[info_state_string(rules, rows[-1])]
        return np.array([row[openspiel_action(rules, legal, a)] if legal[a] else 0.0 for a in range(NUM_ACTIONS)])

    assert measure(JUDGED[rules.name], rows_policy(JUDGED[rules.name], from_table)).exploitability == pytest.approx(
        expected, abs=1e-9
    )


def test_decision_rows_replay_the_seats_own_decisions():
    game = pyspiel.load_game("leduc_poker")
    state = game.new_initial_state()
    for action in [0, 4, 1, 2, 1, 3, 2]:  # J, K; check, raise, call; public Q; seat 0 raises
        state.apply_action(action)
    rows = decision_rows(LEDUC, state)
    assert [info_state_string(LEDUC, row) for row in rows] == [
        "[Observer: 1][Private: 4][Round 1][Player: 1][Pot: 2][Money: 99 99][Round1: 1][Round2: ]",
        "[Observer: 1][Private: 4][Round 2][Player: 1][Pot: 10][Money: 93 97][Public: 3][Round1: 1 2 1][Round2: 2]",
    ]
    assert info_state_string(LEDUC, rows[-1]) == state.information_state_string()


def test_the_command_prints_and_writes_the_figures(cfr_policy, tmp_path, capsys):
    rules, average, expected = cfr_policy
    torch.save(table_of(average), tmp_path / "cfr.pt")
    assert main([str(tmp_path / "cfr.pt"), "--game", rules.name, "--json", str(tmp_path / "out.json")]) == 0
    assert f"{rules.name}: NashConv" in capsys.readouterr().out
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["game"] == rules.name and report["exploitability"] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "not found"),
        ({"0": "one half"}, "not a policy table"),
        ({"[Observer: 0]": [1.0, 0.0]}, "no entry for information state"),
        (
            {str(card): [0.3, 0.3] for card in range(3)}
            | {f"{c}{h}": [0.5, 0.5] for c in range(3) for h in ("p", "b", "pb")},
            "not a distribution",
        ),
        (
            {str(card): [float("nan"), float("nan")] for card in range(3)}
            | {f"{c}{h}": [0.5, 0.5] for c in range(3) for h in ("p", "b", "pb")},
            "not a distribution",
        ),
    ],
    ids=["missing", "not-a-table", "another-game", "not-a-distribution", "nan"],
)
def test_a_bad_table_is_refused_on_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "table.pt"
    if content is not None:
        torch.save(content, path)
    assert main([str(path), "--game", "kuhn"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("exact: ") and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == "", "no figure printed for a refused table"
