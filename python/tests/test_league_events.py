"""The league's history (league/events.jsonl) and its recorded promotion matches: a smoke league
run logs every candidate, match, decision, promotion and retirement with its epoch and step,
records the first games of each evaluation match for the replay viewer and links them from the
log and the report; a resume continues the log of the run it resumes from, and the continuation
logs what the straight run logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcgleague import train as train_cli
from tcgleague.league.events import EVENTS_FILE, LeagueEvents, read_events
from tcgleague.league.manager import STATE_FILE
from tcgleague.replay.viewer import read_replays
from tcgleague.report.data import load_run
from tcgleague.report.html import write_report

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LEAGUE = ["--config", "configs/smoke.ini", "--base.torch-threads", "1", "--league-enable"]
LEAGUE += ["--train.eval-interval", "0", "--train.checkpoint-interval", "1", "--train.total-timesteps", str(512 * 4)]


def without_time(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "time"} for e in events]


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("league")
    assert train_cli.main([*LEAGUE, "--base.experiments-dir", str(base)]) == 0
    (run_dir,) = base.iterdir()
    return run_dir


def test_the_log_holds_every_league_event_and_links_the_recorded_matches(straight):
    events = read_events(straight / "league" / EVENTS_FILE)
    kinds = [e["kind"] for e in events]
    assert {"candidate", "match", "decision", "promotion", "retirement"} <= set(kinds), kinds
    assert all(e["step"] == 512 * e["epoch"] and e["time"] > 0 for e in events)
    state = json.loads((straight / "league" / STATE_FILE).read_text())
    decisions = [e for e in events if e["kind"] == "decision"]
    assert [d["candidate"] for d in decisions] == [d["candidate"] for d in state["decisions"]]
    assert [d["reason"] for d in decisions] == [d["reason"] for d in state["decisions"]]
    promoted = [d["candidate"] for d in decisions if d["promoted"]]
    assert [e["champion"] for e in events if e["kind"] == "promotion"] == promoted
    for match in (e for e in events if e["kind"] == "match"):
        assert match["games"] == 16 and match["wilson_low"] <= match["winrate"] <= match["wilson_high"]
        recording = read_replays(straight / match["replays"] / "replays.json")
        assert recording is not None and len(recording["games"]) == 2, match  # [league] replay_games
        assert (straight / match["replays"] / "viewer.html").is_file()
        assert recording["games"][0]["players"] == [match["candidate"], match["opponent"]]
    page = write_report(load_run(straight), straight / "report").read_text()
    first = next(e for e in events if e["kind"] == "match")
    assert f'href="../{first["replays"]}/viewer.html"' in page


def test_a_resume_continues_the_log_and_logs_what_the_straight_run_did(straight, tmp_path):
    resume = ["--resume-checkpoint", str(straight / "model_smoke_000002.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*LEAGUE, "--base.experiments-dir", str(tmp_path), *resume]) == 0
    (resumed,) = tmp_path.iterdir()
    expected = without_time(read_events(straight / "league" / EVENTS_FILE))
    assert without_time(read_events(resumed / "league" / EVENTS_FILE)) == expected


def test_a_torn_last_line_is_skipped_and_the_log_goes_on(tmp_path):
    log = LeagueEvents(tmp_path / EVENTS_FILE)
    log.at(3, 1536)
    log.write("candidate", member="e000003")
    with open(tmp_path / EVENTS_FILE, "a") as f:
        f.write('{"kind": "match", "epo')  # a writer killed mid-line (a write larger than one syscall)
    assert [e["member"] for e in read_events(tmp_path / EVENTS_FILE)] == ["e000003"]
    fresh = LeagueEvents(tmp_path / "new" / EVENTS_FILE)
    (tmp_path / "new").mkdir()
    fresh.continue_from(tmp_path / EVENTS_FILE, up_to_step=1536)
    fresh.write("retirement", members=["e000001"])
    assert [e["kind"] for e in read_events(tmp_path / "new" / EVENTS_FILE)] == ["candidate", "retirement"]
