import io
import json
from types import SimpleNamespace

import pytest

from helpers.wandb_records import read_wandb_records
from tcgleague.config import WandbSection
from tcgleague.logger import Dashboard, RunLogger, resolve_wandb_mode


@pytest.fixture
def no_wandb_key(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_metrics_jsonl_written(tmp_path):
    log = RunLogger(tmp_path / "run", {"train": {"x": 1}}, WandbSection(enable=False), "abc")
    log.log({"train/epoch": 1, "losses/policy_loss": 0.5, "perf/sps": 1000.0}, step=512)
    # Flushed on every call: readable before close.
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1
    log.log({"environment/win_rate": float("nan"), "eval/score": 2}, step=1024)
    log.close()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["global_step"] for r in rows] == [512, 1024]
    assert set(rows[0]) == {"train/epoch", "losses/policy_loss", "perf/sps", "global_step", "wall_time"}
    assert rows[0]["losses/policy_loss"] == 0.5
    assert rows[1]["environment/win_rate"] is None  # non-finite -> null (strict JSON)
    assert rows[1]["wall_time"] >= rows[0]["wall_time"] > 0
    # Appends across loggers (e.g. on resume).
    with RunLogger(tmp_path / "run", {}, None, "abc") as log2:
        log2.log({"resume/step": 1024}, step=1024)
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 3


def test_numpy_and_tensor_scalars(tmp_path):
    np = pytest.importorskip("numpy")

    class TensorLike:  # torch.Tensor-style scalar: has .item()
        def item(self):
            return 2.0

    with RunLogger(tmp_path, {}, None, "x") as log:
        log.log({"train/a": np.float32(1.5), "train/b": TensorLike(), "train/c": np.int64(3)}, 1)
    row = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert (row["train/a"], row["train/b"], row["train/c"]) == (1.5, 2.0, 3)


@pytest.mark.parametrize("name", ["loss", "policy_loss", "Losses/x", "trainx/y", "global_step"])
def test_bad_namespace_rejected(tmp_path, name):
    with RunLogger(tmp_path, {}, None, "x") as log:
        with pytest.raises(ValueError, match=name):
            log.log({"train/ok": 1.0, name: 1.0}, step=1)
    # Nothing was written for the rejected call.
    assert (tmp_path / "metrics.jsonl").read_text() == ""


def test_wandb_mode_resolution(no_wandb_key, monkeypatch, tmp_path):
    assert resolve_wandb_mode("auto") == "offline"
    assert resolve_wandb_mode("online") == "online"
    assert resolve_wandb_mode("disabled") == "disabled"
    netrc = tmp_path / "netrc"
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "x" * 40 + "\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert resolve_wandb_mode("auto") == "online"
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))
    monkeypatch.setenv("WANDB_API_KEY", "y" * 40)
    assert resolve_wandb_mode("auto") == "online"
    with pytest.raises(ValueError):
        resolve_wandb_mode("sometimes")


def test_offline_wandb_run(no_wandb_key, tmp_path):
    pytest.importorskip("wandb")
    cfg = WandbSection(enable=True, project="tcgleague-test", group="g1", tags="a, b", name="n1", mode="auto")
    run_dir = tmp_path / "run"
    log = RunLogger(run_dir, {"train": {"learning_rate": 3e-4}}, cfg, "testrun123")
    assert log.wandb_mode == "offline"
    log.log({"train/epoch": 1, "losses/policy_loss": 0.25}, step=512)
    log.log({"train/epoch": 2, "losses/policy_loss": 0.125, "anneal/ent_coef": 0.01}, step=1024)
    log.close()

    # What offline wandb 0.31 writes: run_dir/wandb/offline-run-<time>-<id>/ holding
    # run-<id>.wandb (the transaction log: run, history, summary records), files/ and logs/.
    # No files/wandb-summary.json or config.yaml is written offline, so read the log itself.
    runs = list((run_dir / "wandb").glob("offline-run-*-testrun123"))
    assert len(runs) == 1
    run_path = runs[0]
    assert (run_path / "files").is_dir()
    records = read_wandb_records(run_path / "run-testrun123.wandb")
    kinds = [r.WhichOneof("record_type") for r in records]
    assert "run" in kinds and "exit" in kinds  # exit: close() finished the run

    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert (run.run_id, run.project, run.run_group, run.display_name) == ("testrun123", "tcgleague-test", "g1", "n1")
    assert list(run.tags) == ["a", "b"]
    assert "train" in {item.key for item in run.config.update}

    history = []
    for r in records:
        if r.WhichOneof("record_type") == "history":
            history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item})
    assert [h["_step"] for h in history] == [512, 1024]
    assert history[0]["losses/policy_loss"] == 0.25 and history[0]["train/epoch"] == 1
    assert history[1]["anneal/ent_coef"] == 0.01

    # metrics.jsonl is written alongside W&B.
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2


def test_wandb_disabled_mode_skips_wandb(no_wandb_key, tmp_path):
    log = RunLogger(tmp_path, {}, SimpleNamespace(enable=True, mode="disabled"), "x")
    log.log({"train/a": 1}, 1)
    log.close()
    assert log.wandb_run is None and not (tmp_path / "wandb").exists()


def test_dashboard_plain_fallback():
    out = io.StringIO()  # not a TTY -> one plain line per update
    dash = Dashboard("smoke", total_timesteps=2048, enabled=True, file=out)
    assert not dash.live_mode
    dash.update({"losses/policy_loss": 0.5, "perf/sps": 1234.0}, global_step=512, epoch=1)
    dash.update({"environment/win_rate": 0.75, "perf/sps": 2000.0}, global_step=1024, epoch=2)
    dash.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "smoke" in lines[1] and "1,024/2,048" in lines[1] and "50.0%" in lines[1]
    assert "epoch 2" in lines[1] and "sps 2,000" in lines[1]
    assert "losses/policy_loss=0.5000" in lines[1] and "environment/win_rate=0.7500" in lines[1]


def test_dashboard_disabled_prints_lines():
    out = io.StringIO()
    out.isatty = lambda: True  # even on a terminal, disabled means plain lines
    dash = Dashboard("r", total_timesteps=100, enabled=False, file=out)
    dash.update({"train/epoch": 3}, global_step=10)
    assert "epoch 3" in out.getvalue() and "10/100" in out.getvalue()


def test_dashboard_live_renders():
    out = io.StringIO()
    out.isatty = lambda: True
    dash = Dashboard("liverun", total_timesteps=1000, enabled=True, file=out)
    assert dash.live_mode
    dash.update({"losses/entropy": 1.25, "perf/sps": 100.0}, global_step=250, epoch=1)
    dash.update({"losses/entropy": 1.0, "perf/sps": 100.0}, global_step=500, epoch=2)
    dash.close()
    text = out.getvalue()
    assert "liverun" in text and "losses/entropy" in text and "500 / 1,000" in text
