"""bench learn keyed on steps: the curve every --eval-every steps, the final evaluation, and
--league's head-to-head of the league and the self-play baseline of the same seed and steps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # two training runs and a 1,000-game head-to-head: ~100 s on a 2-core box
def test_bench_learn_league_trains_both_and_plays_them_against_each_other(tmp_path):
    out = tmp_path / "learn.json"
    cmd = [sys.executable, "-m", "tcgleague.bench", "learn", "--config", "configs/smoke.ini", "--league"]
    cmd += ["--league-config", "configs/smoke.ini", "--steps", "1536", "--eval-every", "512"]
    cmd += ["--curve-episodes", "8", "--episodes", "8", "--json", str(out)]
    cmd += ["--base.experiments-dir", str(tmp_path / "runs"), "--base.torch-threads", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text())
    for name, league_on in (("league", True), ("selfplay", False)):
        run = figures[name]
        assert run["steps"] == 1536 and [p["step"] for p in run["curve"]] == [512, 1024, 1536]
        assert 0.0 <= run["winrate_vs_greedy"] <= 1.0 and run["games_vs_greedy"] == 8
        assert run["lookahead"] == 100.0 and run["games_vs_greedy_lookahead"] == 8  # and searching a turn ahead
        assert 0.0 <= run["wilson_low_vs_random_lookahead"] <= run["winrate_vs_random_lookahead"] <= 1.0
        assert run["sps"] > 0
        last = json.loads((Path(run["run_dir"]) / "metrics.jsonl").read_text().splitlines()[-1])
        assert ("league/active" in last) == league_on  # the league run really ran the league
    assert figures["games_league_vs_selfplay"] == 8 and figures["jobs"] == 2  # trained side by side
    assert figures["command"] == "python -m tcgleague.bench " + " ".join(cmd[3:]), "the experiments table's command"
    assert 0.0 <= figures["wilson_low_league_vs_selfplay"] <= figures["winrate_league_vs_selfplay"] <= 1.0
    assert "league vs self-play" in done.stdout and "self-play + lookahead 100: vs greedy" in done.stdout
