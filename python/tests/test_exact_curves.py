"""tools/exact_curves.py: judged runs' exact curves (the deliverable's - a league's Nash mixture,
else the average policy - and the learner's) drawn beside reference levels, the README's figure."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from exact_curves import draw, main  # noqa: E402


def judged_run(path: Path, learner: list[float], average: list[float], mixture: list[float] = ()) -> Path:
    path.mkdir()
    rows = [{"global_step": 1000 * (k + 1)} for k in range(4)]
    for row, value in zip(rows[1:], learner):
        row["eval/exploitability"] = value
    for row, value in zip(rows[2:], average):
        row["eval/average_exploitability"] = value
    for row, value in zip(rows[1:], mixture):
        row["eval/mixture_exploitability"] = value
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_each_run_draws_its_average_and_learner_beside_the_references(tmp_path):
    one = judged_run(tmp_path / "one", [0.5, 0.3, 0.2], [0.25, 0.1])
    two = judged_run(tmp_path / "two", [0.6, 0.4, 0.1], [0.3, 0.09])
    fig = draw([(one, "seed 1"), (two, "seed 2")], [("uniform play", 0.781)], "Liar's Dice")
    (ax,) = fig.axes
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}
    assert drawn["seed 1: average policy"] == ([3000.0, 4000.0], [0.25, 0.1])
    assert drawn["seed 2: learner"] == ([2000.0, 3000.0, 4000.0], [0.6, 0.4, 0.1])
    assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_label().startswith("_")] == [0.781]
    assert ax.get_yscale() == "log"


def test_a_league_run_draws_its_nash_mixture_as_its_deliverable(tmp_path):
    league = judged_run(tmp_path / "league", [0.5, 0.3, 0.2], [0.25, 0.1], mixture=[0.4, 0.2, 0.12])
    (ax,) = draw([(league, "league")], [], "Leduc").axes
    drawn = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert drawn == {"league: Nash mixture": [0.4, 0.2, 0.12], "league: learner": [0.5, 0.3, 0.2]}


def test_the_command_writes_the_png_and_refuses_a_bad_reference(tmp_path, capsys):
    run = judged_run(tmp_path / "run", [0.5, 0.3, 0.2], [0.25, 0.1])
    out = tmp_path / "curves.png"
    assert main([f"{run}=seed 1", "--out", str(out), "--reference", "uniform play=0.781"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit) as refused:
        main([str(run), "--out", str(out), "--reference", "uniform play"])
    assert refused.value.code == 2 and "expected LABEL=VALUE" in capsys.readouterr().err
