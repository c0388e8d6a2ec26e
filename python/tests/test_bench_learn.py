"""bench learn keyed on steps: the curve every --eval-every steps, the final evaluation, and
--league's head-to-head of the league and the self-play baseline of the same seed and steps."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tcgleague.average import AVERAGE_FILE
from tcgleague.bench.learn import deliverable_of
from tcgleague.bench.learn_resume import RESUMED_FILE, minutes_upto, plan_continuations
from tcgleague.build import build_trainer
from tcgleague.checkpoint import load_checkpoint
from tcgleague.config import load_config
from tcgleague.errors import ArgumentError
from tcgleague.league.mixture import MIXTURE_FILE
from tcgleague.train import checkpoint_writer

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
RUN = {"capture_output": True, "text": True, "timeout": 900}


@pytest.mark.slow  # two training runs, two best responses, panels and the head-to-head: ~150 s on a 2-core box
def test_bench_learn_league_trains_both_and_plays_them_against_each_other(tmp_path):
    out = tmp_path / "learn.json"
    head = [sys.executable, "-m", "tcgleague.bench", "learn", "--config", "configs/smoke.ini", "--league"]
    head += ["--league-config", "configs/smoke.ini", "--eval-every", "512", "--curve-episodes", "8", "--episodes", "8"]
    head += ["--exploit-config", "configs/smoke.ini"]
    tail = ["--base.experiments-dir", str(tmp_path / "runs"), "--base.torch-threads", "1"]
    cmd = [*head, "--steps", "1536", "--exploit-steps", "512", "--json", str(out), *tail]
    done = subprocess.run(cmd, **RUN)
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
        br = run["exploit"]  # how exploitable the final is: a best response against it, the same budget for both
        assert run["deliverable"] == run["checkpoint"], "the learner is what these runs deliver"
        assert br["target"] == run["checkpoint"] and br["steps"] == 512 and br["games"] == 8
        assert 0.0 <= br["wilson_low"] <= br["winrate"] <= br["wilson_high"] <= 1.0
        assert Path(br["run_dir"]).parent == tmp_path / "runs"  # where the command line put its runs
        panel = run["panel"]  # and the held-out panel, each opponent as evaluate_checkpoint alone plays it
        assert set(panel["winrates"]) == {"random", "greedy", "lookahead_greedy"} and panel["episodes"] == 8
        assert panel["worst_winrate"] == min(panel["winrates"].values())
    assert figures["games_league_vs_selfplay"] == 8 and figures["jobs"] == 2  # trained side by side
    assert figures["command"] == "python -m tcgleague.bench " + " ".join(cmd[3:]), "the experiments table's command"
    assert 0.0 <= figures["wilson_low_league_vs_selfplay"] <= figures["winrate_league_vs_selfplay"] <= 1.0
    assert "league vs self-play" in done.stdout and "self-play + lookahead 100: vs greedy" in done.stdout
    assert "league: best response's win rate" in done.stdout and "self-play: held-out panel" in done.stdout

    # A second lever screened against the same baseline trains and judges only its league.
    refused = subprocess.run([*head, "--steps", "1536", "--exploit-steps", "256", "--baseline", str(out), *tail], **RUN)
    assert refused.returncode == 2 and "judged with" in refused.stderr and "Traceback" not in refused.stderr
    refused = subprocess.run([*head, "--steps", "1024", "--exploit-steps", "512", "--baseline", str(out), *tail], **RUN)
    assert refused.returncode == 2 and "[train] total_timesteps 1536 -> 1024" in refused.stderr
    mixture = ["--league.deliverable", "nash_mixture", "--league.opponent-sampling", "nash"]
    refused = subprocess.run([*head, "--steps", "1536", "--exploit-steps", "512", *mixture, *tail], **RUN)
    assert refused.returncode == 2 and "give --lookahead 0" in refused.stderr and "Traceback" not in refused.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 4, "nothing trained by a refused command"

    # A league that delivers its Nash mixture is judged as delivered: best response, panel and head to head.
    again = tmp_path / "again.json"
    rerun = [*head, "--steps", "1536", "--exploit-steps", "512", "--json", str(again), "--baseline", str(out), *tail]
    done = subprocess.run([*rerun, *mixture, "--lookahead", "0"], **RUN)
    assert done.returncode == 0, done.stderr[-2000:]
    second = json.loads(again.read_text())
    assert second["selfplay"] == figures["selfplay"] and second["baseline"] == str(out)
    league = second["league"]
    assert league["checkpoint"] != figures["league"]["checkpoint"] and league["lookahead"] is None
    assert league["deliverable"] == str(Path(league["run_dir"]) / "league_policy.pt")
    assert league["exploit"]["target"] == league["deliverable"] and league["games_vs_greedy"] == 8
    assert "league: judged league_policy.pt" in done.stdout
    assert len(list((tmp_path / "runs").iterdir())) == 6, "one training and one best response more"
    assert 0.0 <= second["winrate_league_vs_selfplay"] <= 1.0


def bench_learn(tmp_path: Path, *extra: str, refused: str = "") -> dict:
    """A 4-epoch league run of bench learn with a checkpoint every epoch (or, with `refused`,
    the one-line refusal that must contain it)."""
    out = tmp_path / f"learn{len(list(tmp_path.glob('learn*.json')))}.json"
    cmd = [sys.executable, "-m", "tcgleague.bench", "learn", "--config", "configs/smoke.ini", "--steps", "2048"]
    cmd += ["--eval-every", "512", "--curve-episodes", "8", "--episodes", "8", "--lookahead", "0", "--json", str(out)]
    cmd += ["--league.enable", "true", "--league.latest-ratio", "0.5", "--league.exploiter-ratio", "0.2"]
    cmd += ["--train.checkpoint-interval", "1", "--train.max-checkpoints", "10"]
    cmd += ["--base.experiments-dir", str(tmp_path / "runs"), "--base.torch-threads", "1", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if refused:
        assert done.returncode == 2 and refused in done.stderr and "Traceback" not in done.stderr, done.stderr
        return {}
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.slow  # three short trainings of 4 epochs: ~40 s on a 2-core box
def test_an_interrupted_bench_learn_resumes_exactly_and_reports_the_whole_run(tmp_path):
    straight = bench_learn(tmp_path)
    run_dir = Path(straight["run_dir"])
    cut = tmp_path / "cut"  # as a kill after epoch 3's metrics left it: checkpoints up to epoch 2
    shutil.copytree(run_dir, cut)
    for path in cut.glob("model_smoke_*"):
        if int(path.stem.rsplit("_", 1)[1]) > 2:
            path.unlink()
    runs = set((tmp_path / "runs").iterdir())
    bench_learn(tmp_path, "--resume", str(cut), "--steps", "4096", refused="[train] total_timesteps 2048 -> 4096")
    bench_learn(tmp_path, "--resume", str(cut), "--resume", str(cut), refused="already continues")
    assert set((tmp_path / "runs").iterdir()) == runs, "a refused resume writes nothing"

    resumed = bench_learn(tmp_path, "--resume", str(cut))
    assert resumed["curve"] == straight["curve"] and len(straight["curve"]) == 4
    for key in ("steps", "epochs", "winrate_vs_greedy", "winrate_vs_random"):
        assert resumed[key] == straight[key], key
    a, b = (load_checkpoint(Path(r["checkpoint"])).state["policy"] for r in (straight, resumed))
    assert all(torch.equal(a[k], b[k]) for k in a), "the continuation's weights are the straight run's"
    rows = [json.loads(line) for line in (Path(resumed["run_dir"]) / "metrics.jsonl").open()]
    earlier = [json.loads(line) for line in (cut / "metrics.jsonl").open()]
    assert [r["global_step"] for r in rows] == [r["global_step"] for r in earlier], "each epoch once"
    assert rows[:2] == earlier[:2] and rows[2] != earlier[2], "epochs 1-2 are the earlier part's, timings and all"
    assert "resume/entropy" in rows[2], "the continuation starts at epoch 3, from the checkpoint"
    assert sorted(p.name for p in Path(resumed["run_dir"]).glob("model_smoke_*.pt")) == [
        "model_smoke_000003.pt",
        "model_smoke_000004.pt",
    ]
    assert resumed["resumed_from"].endswith("model_smoke_000002.pt")
    assert resumed["minutes"] > earlier[1]["perf/wall_minutes"]


def test_bench_learn_refuses_a_run_directory_it_cannot_continue(tmp_path):
    with pytest.raises(ArgumentError, match="no metrics.jsonl in it"):
        plan_continuations([tmp_path / "missing"], {"learn": load_config(CONFIGS / "smoke.ini")})
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ArgumentError, match=r"learn: no checkpoint model_smoke_NNNNNN.pt"):
        plan_continuations([tmp_path], {"learn": load_config(CONFIGS / "smoke.ini")})


def test_a_self_play_run_continues_whatever_the_league_keys_say(tmp_path):
    """The league pair's self-play baseline reads no [league] key but `enable`: a pair started
    with other league settings may still continue it; any key it does read must match."""
    cfg = load_config(CONFIGS / "smoke.ini", ["--base.experiments-dir", str(tmp_path)])
    (tmp_path / "run").mkdir()
    trainer = build_trainer(cfg, tmp_path / "run")
    checkpoint = checkpoint_writer(tmp_path / "run", cfg)(trainer)
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    other_league = load_config(CONFIGS / "smoke.ini", ["--league.latest-ratio", "0.3", "--base.torch-threads", "1"])
    assert plan_continuations([tmp_path / "run"], {"selfplay": other_league})["selfplay"].checkpoint == checkpoint
    for changed, says in (
        (["--train.learning-rate", "1e-3"], "[train] learning_rate"),
        (["--league.enable", "true"], "[league] enable False -> True"),
    ):
        with pytest.raises(ArgumentError, match=re.escape(says)):
            plan_continuations([tmp_path / "run"], {"selfplay": load_config(CONFIGS / "smoke.ini", changed)})


def test_the_minutes_of_a_chain_of_continuations_add_up(tmp_path):
    """A continuation's own clock restarts at 0; the minutes before it are in its RESUMED_FILE."""
    rows = [(512, 1.0), (1024, 2.0), (1536, 0.5), (2048, 1.5)]  # the first two: copied from the earlier part
    (tmp_path / "metrics.jsonl").write_text(
        "".join(json.dumps({"global_step": s, "perf/wall_minutes": w}) + "\n" for s, w in rows)
    )
    assert minutes_upto(tmp_path, 2048) == 1.5, "without a record: its own clock"
    (tmp_path / RESUMED_FILE).write_text(json.dumps({"checkpoint": "x", "step": 1024, "minutes": 2.0}))
    assert minutes_upto(tmp_path, 2048) == 3.5 and minutes_upto(tmp_path, 1536) == 2.5


def test_a_run_delivers_its_leagues_mixture_else_its_average_else_its_final_checkpoint(tmp_path):
    final = tmp_path / "model_run_000010.pt"
    kuhn = load_config(CONFIGS / "kuhn.ini", log=lambda _: None)  # keeps an average policy
    leduc = load_config(CONFIGS / "leduc.ini", ["--train.average-snapshots", "0"], log=lambda _: None)  # keeps none
    mixture = ["--league.enable", "true", "--league.deliverable", "nash_mixture"]
    league = load_config(CONFIGS / "leduc.ini", mixture, log=lambda _: None)
    assert deliverable_of(kuhn, tmp_path, final) == final  # no average written (yet)
    (tmp_path / AVERAGE_FILE).touch()
    (tmp_path / MIXTURE_FILE).touch()
    assert deliverable_of(kuhn, tmp_path, final) == tmp_path / AVERAGE_FILE
    assert deliverable_of(leduc, tmp_path, final) == final  # a file of another run's settings is not its deliverable
    assert deliverable_of(league, tmp_path, final) == tmp_path / MIXTURE_FILE
    learner = ["--league.enable", "true"]  # leduc.ini's league delivers its learner's average
    assert deliverable_of(load_config(CONFIGS / "leduc.ini", learner), tmp_path, final) == tmp_path / AVERAGE_FILE
    alone = load_config(CONFIGS / "leduc.ini", [*learner, "--train.average-snapshots", "0"])
    assert deliverable_of(alone, tmp_path, final) == final
