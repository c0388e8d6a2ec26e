"""tools/experiments_table.py: the experiments table's rows from `bench learn --json` files, with
--judged the robustness rows of `--league` files (a shared self-play baseline once), and the
exploitability rows of files judged exactly (never mixed with win-rate files in one table)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def final(checkpoint: str, br: float, panel: float) -> dict:
    exploit = {"winrate": br, "wilson_low": br - 0.03, "wilson_high": br + 0.03, "steps": 1_015_808}
    return {
        "checkpoint": checkpoint,
        "steps": 2_015_232,
        "exploit": exploit,
        "panel": {"mean_winrate": panel, "worst_winrate": panel - 0.4},
    }


def league_file(path: Path, label: str, league: dict, selfplay: dict, head: float) -> Path:
    figures = {"label": label, "command": f"python -m tcgleague.bench learn --league --label '{label}'"}
    figures.update(league=league, selfplay=selfplay, winrate_league_vs_selfplay=head)
    figures.update(wilson_low_league_vs_selfplay=head - 0.03, wilson_high_league_vs_selfplay=head + 0.03)
    path.write_text(json.dumps(figures))
    return path


def test_judged_rows_show_exploitability_panel_and_head_to_head_with_a_shared_baseline_once(tmp_path):
    selfplay = final("runs/selfplay/model.pt", 0.61, 0.70)
    first = league_file(tmp_path / "a.json", "default league", final("runs/a/model.pt", 0.55, 0.72), selfplay, 0.52)
    second = league_file(tmp_path / "b.json", "latest_ratio 0.5", final("runs/b/model.pt", 0.66, 0.69), selfplay, 0.47)
    done = subprocess.run(
        [sys.executable, "tools/experiments_table.py", "--judged", str(first), str(second)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("| change | steps | best response's win rate") and len(lines) == 2 + 3
    baseline, a, b = lines[2:]
    assert baseline.startswith(
        "| self-play baseline of default league | 2.0M | 0.610 [0.580, 0.640] (1.0M) | 0.700 / 0.300 | - |"
    )
    assert a.startswith(
        "| default league | 2.0M | 0.550 [0.520, 0.580] (1.0M) | 0.720 / 0.320 | 0.520 [0.490, 0.550] |"
    )
    assert b.startswith(
        "| latest_ratio 0.5 | 2.0M | 0.660 [0.630, 0.690] (1.0M) | 0.690 / 0.290 | 0.470 [0.440, 0.500] |"
    )
    assert a.endswith("`python -m tcgleague.bench learn --league --label 'default league'` |")


def exact_side(deliverable: float, at_4m: float, minutes: float, learner: float | None = None) -> dict:
    """A side of a file judged exactly; `learner`: a mixture is delivered and its learner kept apart."""
    curve = [{"step": 983_040, "exploitability": 0.6}, {"step": 3_932_160, "exploitability": at_4m}]
    curve.append({"step": 16_023_552, "exploitability": deliverable})
    side = {"steps": 16_023_552, "exploitability": deliverable, "curve": curve, "minutes": minutes}
    return side if learner is None else {**side, "learner_exploitability": learner}


def test_files_judged_exactly_give_exploitability_rows_and_are_not_mixed_with_win_rate_files(tmp_path):
    league, selfplay = exact_side(0.1031, 0.25, 70.4, learner=0.41), exact_side(0.3300, 0.6, 61.0)
    exact = league_file(tmp_path / "leduc.json", "leduc", league, selfplay, 0.5)
    figures = json.loads(exact.read_text())
    exact.write_text(json.dumps({**figures, "judge": {"episodes": 1000, "exact": True}}))
    done = subprocess.run(
        [sys.executable, "tools/experiments_table.py", str(exact)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    header, _, first, second = done.stdout.splitlines()
    assert header.startswith("| change | steps | deliverable's exploitability | at 4M steps |")
    assert first.startswith("| leduc (league) | 16.0M | 0.1031 | 0.2500 | 0.4100 | 70 |")
    assert second.startswith("| leduc (selfplay) | 16.0M | 0.3300 | 0.6000 | 0.3300 | 61 |"), "its learner delivered"
    win_rates = league_file(tmp_path / "win.json", "ember", final("a.pt", 0.5, 0.7), final("b.pt", 0.5, 0.7), 0.5)
    mixed = subprocess.run(
        [sys.executable, "tools/experiments_table.py", str(exact), str(win_rates)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert mixed.returncode == 2 and "need two tables" in mixed.stderr and mixed.stdout == ""
