"""W&B never stops training: a wrong key or a service that refuses, hangs or drops connections
(a fake server on 127.0.0.1 via WANDB_BASE_URL) gives one line and the run logs offline - a
complete offline run that `wandb sync` can upload later - with metrics.jsonl as always; a W&B
call that raises mid-run gives one line, W&B stays off, and training goes on."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from helpers.wandb_records import read_wandb_records
from tcgleague import train as train_cli
from tcgleague import wandb_link
from tcgleague.config.sections import WandbSection
from tcgleague.logger import RunLogger

pytest.importorskip("wandb")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def serve(mode: str) -> tuple[int, socket.socket]:
    """A loopback 'W&B server' that refuses (nothing listens), hangs (accepts, never answers),
    drops (accepts and closes) or answers 401 to everything (a wrong key)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    if mode == "refuse":
        server.close()
        return port, server
    server.listen(64)
    held = []

    def loop():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if mode == "hang":
                held.append(conn)
                continue
            if mode == "401":
                conn.recv(65536)
                body = b'{"errors":[{"message":"user is not logged in"}]}'
                head = f"HTTP/1.1 401 Unauthorized\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                conn.sendall(head.encode() + body)
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return port, server


@pytest.fixture
def wandb_env(monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setattr(wandb_link, "WANDB_INIT_TIMEOUT", 3.0)
    monkeypatch.setattr(wandb_link, "WANDB_FINISH_TIMEOUT", 3.0)


@pytest.mark.parametrize("mode", ["refuse", "hang", "drop", "401"])
def test_an_unusable_service_gives_one_line_and_the_run_logs_offline(wandb_env, monkeypatch, tmp_path, capsys, mode):
    port, server = serve(mode)
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")
    try:
        log = RunLogger(tmp_path, {"a": 1}, WandbSection(enable=True, mode="online", project="p"), f"fake{mode}")
        log.log({"train/epoch": 1.0}, 512)
        log.log({"train/epoch": 2.0}, 1024)
        log.close()
    finally:
        server.close()
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "W&B" in x]
    assert "W&B online could not start" in line and "logging offline" in line, line
    assert log.wandb_mode == "offline"
    assert [json.loads(x)["train/epoch"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1.0, 2.0]
    # the offline run is complete: what `wandb sync` uploads (the run, its history, its exit)
    (run_log,) = tmp_path.glob(f"wandb/offline-run-*-fake{mode}/run-fake{mode}.wandb")
    kinds = [r.WhichOneof("record_type") for r in read_wandb_records(run_log)]
    assert kinds.count("history") == 2 and "run" in kinds and "exit" in kinds


def test_a_wandb_call_that_raises_mid_run_gives_one_line_and_training_goes_on(monkeypatch, tmp_path, capfd):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    import wandb.sdk.wandb_run as wandb_run

    log, calls = wandb_run.Run.log, []

    def crashing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("wandb service crashed\nwith a second line")
        return log(self, *args, **kwargs)

    monkeypatch.setattr(wandb_run.Run, "log", crashing)
    argv = ["--config", "configs/smoke.ini", "--base.torch-threads", "1", "--train.eval-interval", "0", "--wandb"]
    assert train_cli.main([*argv, "--base.experiments-dir", str(tmp_path)]) == 0
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if "W&B" in x]
    assert "W&B log failed (RuntimeError: wandb service crashed)" in line and "W&B is off" in line, line
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["train/epoch"] for x in lines] == [1.0, 2.0, 3.0, 4.0]
    assert len(calls) == 2, "W&B is not called again after it failed"
