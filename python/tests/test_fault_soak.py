"""The fault soak (tools/fault_soak.py) in CI's slow set: a league run resumed through six
faulted rounds - SIGTERM preemptions, SIGKILLs inside writes, a disk that fills at a random
write - all with a W&B server that drops every connection, then resumed to its end. It must
end with the weights of the same run trained straight through, and leave every file whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tcgleague.atomic import TEMP_MARK
from tcgleague.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # six faulted rounds, the last resume and a straight run: ~3 min on a 2-core box
def test_a_league_run_survives_preemption_kills_a_full_disk_and_a_dropping_wandb(tmp_path):
    cmd = [sys.executable, "tools/fault_soak.py", "--rounds", "6", "--seed", "3", "--dir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert "final weights equal" in summary and "0 problems" in summary, proc.stdout
    for kind in ("SIGTERM", "SIGKILL", "disk full"):
        assert kind in proc.stdout, f"no {kind} round ran: {proc.stdout}"
    assert "W&B runs logged offline" in summary and not summary.endswith(" 0 W&B runs logged offline")
    # what is on disk afterwards, checked here too: every checkpoint loads, no temp file is left
    (base,) = tmp_path.iterdir()
    saved = list(base.glob("smoke_*/model_smoke_*.pt"))
    assert saved and not list(base.rglob(f".*{TEMP_MARK}*"))
    for path in saved:
        load_checkpoint(path, run_state=True, log=lambda m: None)
