"""The run's average policy (average.py): snapshots every `average_interval` steps, the newest
`average_snapshots` kept, equal weights; written as `average_policy.pt` (a mixture file every tool
takes), judged exactly as eval/average_*, and resumed bit-identically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers.state_compare import assert_same
from tcgleague import train as train_cli
from tcgleague.average import AVERAGE_FILE, PolicyAverage
from tcgleague.config import ConfigError, load_config
from tcgleague.games.poker.exact import JUDGED
from tcgleague.openspiel_judge import file_exploitability
from tcgleague.policy.flat import FlatPolicyConfig, FlatSampler, build_flat_policy
from test_game_plugin import KUHN_RUN

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small_policy():
    policy = build_flat_policy(FlatPolicyConfig(obs_width=8, num_actions=3, hidden_size=8), seed=0)
    return policy, FlatSampler()


def test_snapshots_every_interval_keep_the_newest_with_equal_weights():
    policy, sampler = small_policy()
    average = PolicyAverage(keep=2, interval=100, sampler=sampler)
    for step in (50, 100, 150, 230, 300, 400):  # taken at 100, 230 (130 after), 400
        with torch.no_grad():
            policy.actor.bias.fill_(step)
        average.advance(policy, step)
    assert [s.global_step for s in average.snapshots] == [230, 400]
    assert [s.policy["actor.bias"][0].item() for s in average.snapshots] == [230.0, 400.0]
    members = average.members({"family": "flat_lstm"})
    assert [m["weight"] for m in members] == [0.5, 0.5] and members[0]["id"] == "step_230"
    restored = PolicyAverage(keep=2, interval=100)
    restored.restore(average.checkpoint(), global_step=400)
    assert_same(restored.checkpoint(), average.checkpoint(), "average")
    late = PolicyAverage(keep=5, interval=100, sampler=sampler, start=230)
    for step in (50, 100, 150, 230, 300, 400):  # taken at the same steps, the one at 100 dropped
        late.advance(policy, step)
    assert [s.global_step for s in late.snapshots] == [230, 400] and late.taken_at == 400
    off = PolicyAverage(keep=0, interval=100)
    off.advance(policy, 1000)
    assert off.snapshots == [] and off.checkpoint() is None


def test_a_checkpoint_without_an_average_starts_it_from_its_step():
    said = []
    average = PolicyAverage(keep=3, interval=10)
    average.restore(None, global_step=40, log=said.append)
    assert average.snapshots == [] and average.taken_at == 40 and "no average policy" in said[0]


def run_dir_of(base: Path, exclude: Path | None = None) -> Path:
    (found,) = [p for p in base.iterdir() if p.is_dir() and p != exclude]
    return found


def straight_and_resumed(tmp_path: Path, keys: list[str]) -> tuple[Path, dict, dict]:
    """A Kuhn run with `keys` to epoch 8, and the same resumed exactly from its epoch 4: (the
    straight run's directory, its epoch-8 checkpoint, the resumed run's)."""
    run = [*KUHN_RUN, *keys, "--base.experiments-dir", str(tmp_path)]
    assert train_cli.main(run) == 0
    run_a = run_dir_of(tmp_path)
    resume = ["--resume-checkpoint", str(run_a / "model_kuhn_000004.pt"), "--resume-load-optimizer"]
    assert train_cli.main([*run, *resume]) == 0
    run_b = run_dir_of(tmp_path, exclude=run_a)
    a, b = (torch.load(r / "model_kuhn_000008.pt", weights_only=True) for r in (run_a, run_b))
    return run_a, a, b


def test_a_run_writes_judges_and_resumes_its_average(tmp_path):
    average = ["--train.average-snapshots", "4", "--train.average-interval", "4096", "--train.average-start", "8000"]
    run_a, a, b = straight_and_resumed(tmp_path, average)  # a snapshot every 2 epochs from the 4th
    assert_same(a["average"], b["average"], "average")
    assert [s["global_step"] for s in a["average"]["snapshots"]] == [8192, 12288, 16384]
    assert_same(a["average"]["snapshots"][-1]["policy"], a["policy"], "the newest snapshot is the last learner")
    logged = [json.loads(line) for line in (run_a / "metrics.jsonl").read_text().splitlines()]
    final = [m for m in logged if "eval/average_exploitability" in m][-1]
    judged = file_exploitability(run_a / AVERAGE_FILE, JUDGED["kuhn"])  # what `python -m tcgleague.exact` prints
    assert judged.exploitability == pytest.approx(final["eval/average_exploitability"], abs=1e-9)
    assert judged.exploitability != pytest.approx(final["eval/exploitability"], abs=1e-6)  # a mixture, not the learner


def test_an_average_of_the_last_learner_alone_judges_like_the_learner(tmp_path):
    average = ["--train.average-snapshots", "1", "--train.average-interval", "2048", "--train.average-start", "0"]
    assert train_cli.main([*KUHN_RUN, *average, "--base.experiments-dir", str(tmp_path)]) == 0
    logged = [json.loads(line) for line in (run_dir_of(tmp_path) / "metrics.jsonl").read_text().splitlines()]
    for m in (m for m in logged if "eval/exploitability" in m):
        assert m["eval/average_exploitability"] == pytest.approx(m["eval/exploitability"], abs=1e-9)


@pytest.mark.parametrize(
    ("key", "value"), [("average-snapshots", "-1"), ("average-interval", "0"), ("average-start", "-1")]
)
def test_bad_average_keys_are_refused_by_name(key, value):
    with pytest.raises(ConfigError, match=key.replace("-", "_")):
        load_config(Path("configs/kuhn.ini"), [f"--train.{key}", value])
