"""Game replays: what a recording holds (compact; the board as the decider knew it, never the
other hand or a deck's order), that its actions re-played from the same deal give the same
game, that recording changes nothing about the match, `evaluate_checkpoint --replays` and the
run report's viewer, and bad input refused with one line. (The viewer in a real browser:
test_replay_browser.py, slow.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tcgleague import evaluate_checkpoint as eval_cli
from tcgleague.checkpoint import load_checkpoint
from tcgleague.checkpoint.deployed import checkpoint_sampler, checkpoint_turn_cap
from tcgleague.games.emberfront.engine.position import read_position
from tcgleague.games.emberfront.env import TCGEnv
from tcgleague.games.emberfront.layout import DRAW, legal_actions, legal_tuples
from tcgleague.games.emberfront.match import Deal, bot_side, deal_game, play_match
from tcgleague.games.emberfront.replay import ReplayRecorder
from tcgleague.match import policy_side
from tcgleague.replay import __main__ as replay_cli
from tcgleague.replay.record import FORMAT
from tcgleague.replay.viewer import REPLAYS_FILE, VIEWER_FILE, combined_replays, read_replays, viewer_html
from tcgleague.report import __main__ as report_cli
from tcgleague.rows import seat_of

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def recorded(smoke_checkpoint, tmp_path_factory) -> dict:
    """`python -m tcgleague.replay CKPT --opponent greedy --games 4`: its replays.json."""
    out = tmp_path_factory.mktemp("replays")
    assert replay_cli.main([str(smoke_checkpoint), "--opponent", "greedy", "--games", "4", "--out", str(out)]) == 0
    assert (out / VIEWER_FILE).is_file()
    return read_replays(out / REPLAYS_FILE)


def board(game: dict, step: dict) -> list[str]:
    return [game["strings"][i] for i in step["b"]]


def test_a_recording_is_compact_and_names_everything_it_shows(recorded):
    assert recorded["format"] == FORMAT and len(recorded["games"]) == 4
    assert [g["game"] for g in recorded["games"]] == [0, 1, 2, 3]
    for game in recorded["games"]:
        size = len(json.dumps(game, separators=(",", ":")))
        assert size < 600 * len(game["steps"]), f"{size} bytes for {len(game['steps'])} decisions"
        assert "greedy" in game["players"] and set(game["decks"]) <= {"ember", "tide", "grove", "shade"}
        strings = game["strings"]
        assert len(set(strings)) == len(strings), "each text stored once"
        for step in game["steps"]:
            assert 0 <= step["a"] < len(step["l"]) and all(0 <= i < len(strings) for i in step["b"] + step["l"])
            policy = game["players"][step["s"]] != "greedy"
            assert ("p" in step and "v" in step) == policy, "a policy's probabilities and value; a bot's choice only"
            if policy:
                probs = [p for _, p in step["p"]]
                assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.002 and len(probs) <= 5
                assert all(0 <= i < len(step["l"]) for i, _ in step["p"]) and -1.5 < step["v"] < 1.5


def replay_game(game: dict, turn_cap: int, visit=None) -> dict:
    """Re-plays a recorded game's actions (by their index in each legal list) from its deal in
    a fresh env, checking each decision is the recorded seat's with the recorded number of
    choices; `visit(env, step)` sees the engine before each action. Returns the episode info."""
    env = TCGEnv(num_games=1, seed=0, turn_cap=turn_cap)
    obs, _ = env.reset(0)
    seed, deck_x, deck_y, swapped = game["deal"]
    deal_game(env, 0, Deal(seed, deck_x, deck_y), swapped)
    actions = np.zeros((2, 4), dtype=np.int32)
    for k, step in enumerate(game["steps"]):
        (row,) = np.flatnonzero(env.masks)
        assert seat_of(row) == step["s"], f"step {k}: seat {seat_of(row)} decides, the recording says {step['s']}"
        assert legal_actions(obs[row][None])[1][0] == len(step["l"]), f"step {k}"
        if visit is not None:
            visit(env, step)
        actions[:] = 0
        actions[row] = legal_tuples(obs, np.array([row]), np.array([step["a"]]))[0]
        obs, _, terminals, truncations, infos = env.step(actions)
        if terminals[0] or truncations[0]:
            assert k == len(game["steps"]) - 1, "the game ended where the recording does"
            return infos[0]
    raise AssertionError("the recorded actions did not finish the game")


def test_the_recorded_actions_replay_to_the_recorded_result(recorded, smoke_checkpoint):
    turn_cap = checkpoint_turn_cap(load_checkpoint(smoke_checkpoint, policy_config=None))
    assert recorded["turn_cap"] == turn_cap
    for game in recorded["games"]:
        info = replay_game(game, turn_cap)
        winner = None if info["winner"] == DRAW else info["winner"]
        assert (winner, info["turns"], bool(info["truncated"])) == (game["winner"], game["turns"], game["truncated"])


def test_a_board_never_shows_the_other_hand_or_a_decks_order(recorded):
    def visit(env, step):
        real = read_position(env, 0)["players"]
        names = [env.pool.name(c) for c in range(env.pool.n_cards)]
        lines, seat = board(game, step), step["s"]
        other_hand = [names[c] for c in real[1 - seat]["hand"]]
        shown = [line for line in lines if line.strip().startswith("hand:")]
        assert len(shown) == 2
        (hidden,) = [line for line in shown if "(hidden)" in line]
        assert hidden.strip() == f"hand: {len(other_hand)} cards (hidden)"
        assert all(f"{name}(" in "".join(shown) for name in (names[c] for c in real[seat]["hand"])), "its own hand"
        for player in real:
            deck = [names[c] for c in player["deck"]]
            top = " ".join(deck[-3:])  # the deck's next cards, in order (top last)
            assert len(deck) < 3 or all(top not in s for s in game["strings"]), "no deck order"
        assert f"deck {len(real[seat]['deck'])}" in "\n".join(lines), "decks as counts"
        assert not any("enemy hand" in game["strings"][i] for i in step["l"])

    for game in recorded["games"]:
        replay_game(game, recorded["turn_cap"], visit)


def test_recording_changes_nothing_about_the_match(smoke_checkpoint):
    loaded = load_checkpoint(smoke_checkpoint, policy_config=None)
    sampler = checkpoint_sampler(loaded)
    sides = lambda: (policy_side(loaded.policy.eval(), sampler, 5), bot_side("random", 6))  # noqa: E731
    plain = play_match(*sides(), episodes=6, seed=5, parallel=4)
    recorder = ReplayRecorder(3, ("agent", "random"))
    report = play_match(*sides(), episodes=6, seed=5, parallel=4, recorder=recorder)
    games = recorder.games()
    assert report.records == plain.records and report.entropy_sum == pytest.approx(plain.entropy_sum)
    assert [g["game"] for g in games] == [0, 1, 2], "the first 3 scheduled games, played from their start"
    decisions = {2 * r.deal + r.swapped: r.decisions for r in report.records}  # by schedule index
    assert all(len(g["steps"]) == decisions[g["game"]] for g in games), "every decision of both seats"


def test_a_lookahead_marks_the_moves_its_search_changed(smoke_checkpoint, tmp_path):
    args = [str(smoke_checkpoint), "--games", "2", "--seed", "1", "--lookahead", "1000", "--out", str(tmp_path)]
    assert replay_cli.main(args) == 0
    document = read_replays(tmp_path / REPLAYS_FILE)
    changed = [s for g in document["games"] for s in g["steps"] if "x" in s]
    assert document["lookahead"] == 1000 and changed, "a heavy value weight overrides some sampled moves"
    assert all(s["x"] != s["a"] for s in changed)


def test_evaluate_checkpoint_records_k_of_its_games_and_the_report_shows_them(smoke_checkpoint, tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    for path in smoke_checkpoint.parent.glob(f"{smoke_checkpoint.stem}*"):
        shutil.copy(path, run / path.name)
    shutil.copy(smoke_checkpoint.parent / "metrics.jsonl", run / "metrics.jsonl")
    checkpoint = run / smoke_checkpoint.name
    assert eval_cli.main([str(checkpoint), "--episodes", "8", "--replays", "3", "--seed", "2"]) == 0
    (path,) = run.glob(f"replays/*/{REPLAYS_FILE}")
    assert path.parent.name == f"{checkpoint.stem}_vs_greedy_seed2"
    document = read_replays(path)
    assert [g["game"] for g in document["games"]] == [0, 1, 2] and "8 games, win rate" in document["title"]
    assert report_cli.main([str(run)]) == 0
    html = (run / "report" / "report.html").read_text()
    assert "<iframe" in html and "srcdoc=" in html and "Replays" in html
    assert combined_replays(run)["games"][0]["set"] == path.parent.name

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))  # no key anywhere: offline
    monkeypatch.setenv("WANDB_SILENT", "true")
    assert report_cli.main([str(run), "--wandb"]) == 0
    (panel,) = run.glob("wandb/offline-run-*/files/media/html/replays/viewer_*.html")
    assert panel.read_text() == viewer_html(combined_replays(run)), "the very viewer the report embeds"


def test_the_report_caps_the_games_it_embeds(tmp_path):
    game = {"game": 0, "players": ["a", "b"], "steps": [], "strings": ["x" * 1000]}
    for k in range(3):
        (tmp_path / "replays" / f"set{k}").mkdir(parents=True)
        document = {"format": FORMAT, "version": 1, "games": [dict(game, game=i) for i in range(4)]}
        (tmp_path / "replays" / f"set{k}" / REPLAYS_FILE).write_text(json.dumps(document))
    assert len(combined_replays(tmp_path, max_games=5)["games"]) == 5
    assert len(combined_replays(tmp_path, max_bytes=3500)["games"]) == 3
    assert combined_replays(tmp_path / "nothing") is None


def test_the_page_embeds_its_data_so_no_text_can_close_the_script():
    page = viewer_html({"format": FORMAT, "games": [{"strings": ["</script><b>"]}]})
    assert page.count("</script>") == 2 and "\\u003c/script>\\u003cb>" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page, "no network"


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.pt", "--out", "x"], "replay: checkpoint refused: checkpoint missing.pt not found"),
        (["--opponent", "nobody"], "replay: checkpoint refused: --opponent nobody: neither a bot"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(smoke_checkpoint, tmp_path, args, message, capsys):
    argv = args if args[0].endswith(".pt") else [str(smoke_checkpoint), *args, "--out", str(tmp_path / "out")]
    assert replay_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_bad_replay_flags_of_evaluate_checkpoint_are_refused(smoke_checkpoint, capsys):
    for flags in (["--replays", "9", "--episodes", "8"], ["--replays-out", "x"], ["--replays", "2", "--panel"]):
        with pytest.raises(SystemExit) as exit_:
            eval_cli.main([str(smoke_checkpoint), *flags])
        assert exit_.value.code == 2
    assert "--replays K must be between 0 and the games played (8)" in capsys.readouterr().err


def test_the_bench_times_the_same_match_plain_and_recorded(tmp_path):
    from tcgleague.bench import __main__ as bench_cli

    out = tmp_path / "bench.json"
    argv = ["replay", "--config", "configs/smoke.ini", "--games", "4", "--record", "2", "--rounds", "1"]
    assert bench_cli.main([*argv, "--json", str(out)]) == 0  # raises if a recorded match played differently
    figures = json.loads(out.read_text())
    assert figures["recorded_k"] == 2 and figures["ratio_k_games"] > 0 and figures["ratio_all_games"] > 0
