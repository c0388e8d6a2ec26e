"""The run report: built from a smoke run and a smoke league run (with an evaluation report),
every figure a real PNG of the expected size referenced by the HTML; a run still being written;
bad input; a report failure never stopping training."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from helpers.wandb_records import read_wandb_records
from tcgleague import evaluate_checkpoint as eval_cli
from tcgleague import train as train_cli
from tcgleague.replay.viewer import viewer_html
from tcgleague.report import REPORT_FILE, RunData, load_run, write_report
from tcgleague.report import __main__ as report_cli
from tcgleague.report.figures import PIXELS, payoff, payoff_ids

SMOKE = ["--config", "configs/smoke.ini", "--train.eval-interval", "1"]
TRAINING_FIGURES = {"throughput.png", "losses.png", "exploration.png", "evaluation.png"}
LEAGUE_FIGURES = {"payoff.png", "ratings.png", "pool.png"}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails on anything that is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def referenced(html: str) -> set[str]:
    return set(re.findall(r'<img src="([^"]+)"', html))


def assert_figures(report_dir: Path, expected: set[str]) -> str:
    html = (report_dir / REPORT_FILE).read_text()
    pngs = {p.name for p in report_dir.glob("*.png")}
    assert expected <= pngs, expected - pngs
    assert referenced(html) == pngs, "the HTML shows every figure, and only those that exist"
    for name in pngs:
        assert (report_dir / name).stat().st_size > 5000, name
        assert png_size(report_dir / name) == PIXELS, name
    return html


@pytest.fixture(scope="module")
def selfplay_run(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("selfplay")
    assert train_cli.main([*SMOKE, "--base.experiments-dir", str(base)]) == 0
    (run_dir,) = base.iterdir()
    return run_dir


@pytest.fixture(scope="module")
def league_run(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("league")
    args = [*SMOKE, "--league-enable", "--train.total-timesteps", "3072", "--base.experiments-dir", str(base)]
    assert train_cli.main(args) == 0
    (run_dir,) = base.iterdir()
    final = run_dir / "model_smoke_000006.pt"
    assert eval_cli.main([str(final), "--episodes", "32", "--json", str(run_dir / "vs_greedy.json")]) == 0
    return run_dir


def test_a_selfplay_run_reports_its_training_figures_at_the_end(selfplay_run):
    html = assert_figures(selfplay_run / "report", TRAINING_FIGURES)
    assert "not a league run" in html and "Evaluations: none" in html
    assert not (selfplay_run / "report" / "payoff.png").exists()


def test_a_league_run_reports_payoff_ratings_pool_decisions_and_evaluations(league_run):
    assert report_cli.main([str(league_run)]) == 0  # picks up vs_greedy.json in the run directory
    html = assert_figures(league_run / "report", TRAINING_FIGURES | LEAGUE_FIGURES | {"eval_vs_greedy.png"})
    decisions = json.loads((league_run / "league" / "league_state.json").read_text())["decisions"]
    assert decisions and html.count("<tr>") == len(decisions) + 1, "one table row per promotion decision"
    for d in decisions:
        assert d["candidate"] in html
    assert ("promoted" in html) and ("rejected" in html)


def test_a_run_still_being_written_reports_what_it_has(selfplay_run, tmp_path):
    run_dir = tmp_path / "smoke_running"
    run_dir.mkdir()
    lines = (selfplay_run / "metrics.jsonl").read_text().splitlines()
    (run_dir / "metrics.jsonl").write_text("\n".join(lines[:2]) + '\n{"global_step": 153')  # mid-write
    run = load_run(run_dir)
    assert len(run.metrics) == 2
    html = (write_report(run, tmp_path / "out")).read_text()
    assert "2 epochs logged" in html and (tmp_path / "out" / "losses.png").is_file()


def test_best_responses_in_the_run_directory_draw_its_exploitability_curves(selfplay_run, tmp_path):
    """tcgleague.exploit reports (--json) and run files (exploit.json) put in a run directory are
    drawn as exploitability curves; other JSON files are passed over."""
    run_dir = tmp_path / "smoke_exploited"
    run_dir.mkdir()
    (run_dir / "metrics.jsonl").write_text((selfplay_run / "metrics.jsonl").read_text())

    def point(step: int, rate: float) -> dict:
        return {"step": step, "winrate": rate, "wilson_low": rate - 0.05, "wilson_high": rate + 0.05, "games": 200}

    (run_dir / "br_final.json").write_text(json.dumps({"curve": [point(0, 0.1), point(100, 0.4)], "winrate": 0.4}))
    (run_dir / "exploit.json").write_text(json.dumps({"settings": {}, "curve": [point(0, 0.5)]}))
    (run_dir / "notes.json").write_text(json.dumps({"curve": "not a curve"}))
    run = load_run(run_dir)
    assert list(run.exploits) == ["br_final", "exploit"]
    assert [p["winrate"] for p in run.exploits["br_final"]] == [0.1, 0.4]
    html = write_report(run, tmp_path / "out").read_text()
    assert '<img src="exploitability.png"' in html and png_size(tmp_path / "out" / "exploitability.png") == PIXELS
    assert "Exploitability: win rate of best responses: no data" in (selfplay_run / "report" / REPORT_FILE).read_text()


def test_a_directory_that_is_not_a_run_is_refused(tmp_path, capsys):
    assert report_cli.main([str(tmp_path)]) == 2
    assert "not a run directory (no metrics.jsonl in it)" in capsys.readouterr().err
    assert report_cli.main([str(tmp_path), "--eval", str(tmp_path / "nope.json")]) == 2


def test_a_failing_report_never_stops_training(tmp_path, monkeypatch, capsys):
    def broken(run, out):
        raise RuntimeError("no fonts on this machine")

    monkeypatch.setattr(train_cli, "write_report", broken)
    args = [*SMOKE, "--train.total-timesteps", "512", "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(args) == 0
    assert "[report] WARNING: the report could not be written: RuntimeError: no fonts" in capsys.readouterr().err
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "model_smoke_000001.pt").is_file()


@pytest.mark.slow  # fast set: the league report, the W&B smoke run
def test_a_wandb_league_run_logs_the_payoff_heatmap_decisions_and_ratings(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))  # no key anywhere: offline
    monkeypatch.setenv("WANDB_SILENT", "true")
    args = [*SMOKE, "--league-enable", "--wandb", "--train.total-timesteps", "1536", "--base.experiments-dir"]
    assert train_cli.main([*args, str(tmp_path)]) == 0
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    heatmaps = list(offline.glob("files/media/images/league/payoff_heatmap_*.png"))
    tables = list(offline.glob("files/media/table/league/decisions_*.table.json"))
    assert len(heatmaps) == 3 and len(tables) == 3, "one of each per candidate evaluation (3 epochs, 3 candidates)"
    assert png_size(heatmaps[0]) == PIXELS
    table = json.loads(max(tables, key=lambda p: p.stat().st_mtime_ns).read_text())
    assert table["columns"][:2] == ["candidate", "decision"] and len(table["data"]) == 3
    pages = list(offline.glob("files/media/html/league/replays_*.html"))
    assert len(pages) == 3, "the recorded promotion matches in the viewer, after each candidate evaluation"
    newest = max(pages, key=lambda p: p.stat().st_mtime_ns).read_text()
    assert newest == viewer_html(load_run(run_dir).replays), "the very page the report embeds"
    (log,) = offline.glob("run-*.wandb")
    keys = set()
    for r in read_wandb_records(log):
        if r.WhichOneof("record_type") == "history":
            keys |= {i.key or "/".join(i.nested_key) for i in r.history.item}
    media = {
        "league/payoff_heatmap/_type",
        "league/decisions/_type",
        "league/ratings_table/_type",
        "league/replays/_type",
    }
    assert media | {"league/rating_mu/e000001"} <= keys, sorted(keys)


def test_evaluate_checkpoint_logs_its_report_to_wandb(league_run, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(league_run / "no-netrc"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    before = set((league_run / "wandb").glob("offline-run-*")) if (league_run / "wandb").exists() else set()
    assert eval_cli.main([str(league_run / "model_smoke_000006.pt"), "--episodes", "16", "--wandb"]) == 0
    (offline,) = set((league_run / "wandb").glob("offline-run-*")) - before
    (image,) = offline.glob("files/media/images/eval/tables_*.png")
    (table,) = offline.glob("files/media/table/eval/results_*.table.json")
    assert png_size(image) == PIXELS
    rows = json.loads(table.read_text())["data"]
    assert any(r[0].startswith("per_seat seat0") for r in rows) and any(r[0].startswith("deck ") for r in rows)


def test_the_payoff_heatmap_reads_rows_as_the_first_id_vs_the_second():
    league = {"payoff": [["e1", "greedy", 3.0, 0.0, 4.0], ["greedy", "e1", 1.0, 0.0, 4.0]], "members": []}
    run = RunData(Path("run"), [{"global_step": 1}], league, bots=("random", "greedy"))  # an Emberfront run's
    fig = payoff(run)
    ids = payoff_ids(league, run.bots)
    rates = fig.axes[0].images[0].get_array()
    assert ids == ["greedy", "e1"]
    assert rates[ids.index("e1"), ids.index("greedy")] == 0.75 and rates[ids.index("greedy"), ids.index("e1")] == 0.25


def test_series_line_up_when_a_key_is_missing_in_some_epochs():
    rows = [
        {"global_step": 1, "league/rating_mu/e1": 25.0, "league/rating_sigma/e1": 8.0},
        {"global_step": 2, "league/rating_mu/e1": 26.0},
        {"global_step": 3, "league/rating_mu/e1": 27.0, "league/rating_sigma/e1": 6.0},
    ]
    run = RunData(Path("run"), rows, None)
    assert run.series("league/rating_mu/e1", "league/rating_sigma/e1") == ([1.0, 3.0], [25.0, 27.0], [8.0, 6.0])
    assert run.series("league/rating_mu/e1")[1] == [25.0, 26.0, 27.0]
