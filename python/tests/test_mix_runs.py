"""tools/mix_runs.py: several files' policies as one mixture, each file an equal share, judged as
the mixture of their members would be; files of different games, or the output among the inputs,
refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from mix_runs import main  # noqa: E402

from tcgleague import openspiel_judge as exact  # noqa: E402
from tcgleague.checkpoint.files import read_state  # noqa: E402
from tcgleague.games.poker.exact import JUDGED  # noqa: E402
from tcgleague.league.mixture import load_mixture, write_mixture_file  # noqa: E402
from test_meta_nash import two_members  # noqa: E402


def test_files_mixed_with_equal_shares_judge_as_the_mixture_of_their_members(tmp_path, capsys):
    _, first_only = two_members(tmp_path / "a", (1.0, 0.0))  # a delivered mixture keeps its weighted members only
    _, second_only = two_members(tmp_path / "b", (0.0, 1.0))
    _, half = two_members(tmp_path / "c", (0.5, 0.5))
    mixed = tmp_path / "mixed.pt"
    assert main([str(mixed), str(first_only), str(second_only)]) == 0
    assert "2 members of 2 files (kuhn)" in capsys.readouterr().out
    mixture = load_mixture(mixed)
    assert mixture.weights == [0.5, 0.5] and mixture.game == "kuhn"
    judged = exact.file_exploitability(mixed, JUDGED["kuhn"]).exploitability
    assert judged == pytest.approx(exact.file_exploitability(half, JUDGED["kuhn"]).exploitability, abs=1e-9)
    # a plain checkpoint is one member: m0's own file with the second-only mixture is the same mix
    member = tmp_path / "a" / "league" / "members" / "m0.pt"
    again = tmp_path / "again.pt"
    assert main([str(again), str(member), str(second_only)]) == 0
    assert load_mixture(again).weights == [0.5, 0.5]
    assert exact.file_exploitability(again, JUDGED["kuhn"]).exploitability == pytest.approx(judged, abs=1e-9)


def test_files_of_different_games_an_output_among_the_inputs_and_a_foreign_file_are_refused(tmp_path, capsys):
    _, kuhn = two_members(tmp_path / "a", (0.5, 0.5))
    leduc = write_mixture_file(tmp_path / "leduc.pt", read_state(kuhn)["mixture"]["members"], "leduc", 10, 1)
    not_a_policy = tmp_path / "table.pt"
    torch.save({"some": torch.zeros(2)}, not_a_policy)
    out = tmp_path / "mixed.pt"
    for argv, message in (
        ([out, kuhn, leduc], "the files play different games (kuhn, leduc)"),
        ([kuhn, kuhn, leduc], "is one of the files mixed"),
        ([out, kuhn, not_a_policy], "is neither a checkpoint nor a league mixture"),
    ):
        assert main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err
        assert not out.exists()
