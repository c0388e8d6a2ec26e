"""Fault soak: a league run under the faults of a cluster, one per round, then verified whole.

    python tools/fault_soak.py --rounds 6 [--seed 0] [--dir /tmp/soak]

Every round resumes the run (`latest`, `--resume-load-optimizer`; the first starts it) with W&B
on, online, against a loopback 'W&B server' that accepts and drops every connection, and
injects one fault at a random moment, the kinds taking turns in a seeded order:

- sigterm: a preemption. The run finishes its epoch, checkpoints and exits 75.
- sigkill: a lost node, the moment a temp file of an atomic write is on disk (inside a write).
- disk: the disk fills at a random write (tools/full_disk_train.py): the run stops with exit 74
  and one line naming the file, the previous files intact, its temp file removed.

After every round every checkpoint must load with its run state and `latest` resolve; after the
last, the run is resumed to its end and must equal the same run trained straight through (its
weights digest). Then every file is verified: checkpoints, the newest checkpoint's member files
of every run directory, metrics.jsonl whole lines only, each W&B start told in one line and
logged offline, no temp file left. Prints one line per round and a summary; exits 1 on any
problem. `make test-slow` runs it (test_fault_soak.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from kill_soak import SIGNAL_TOTAL, check_files, final_digest, kill_inside_a_write, read_back, start, temp_files

from tcgleague.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint
from tcgleague.errors import PREEMPTED_EXIT, STORAGE_EXIT

KINDS = ("sigterm", "sigkill", "disk")
EXPECTED_EXIT = {"sigterm": PREEMPTED_EXIT, "sigkill": -signal.SIGKILL, "disk": STORAGE_EXIT}


def dropping_server() -> int:
    """A loopback port whose server accepts every connection and closes it at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def loop():
        while True:
            conn, _ = server.accept()
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return server.getsockname()[1]


def wandb_env(port: int) -> dict[str, str]:
    return {
        **os.environ,
        "WANDB_BASE_URL": f"http://127.0.0.1:{port}",
        "WANDB_API_KEY": "x" * 40,
        "WANDB_INIT_TIMEOUT": "5",
        "WANDB_SILENT": "true",
    }


def fault_round(base: Path, k: int, kind: str, rng: random.Random, env: dict[str, str]) -> tuple[list[str], str]:
    """One resumed run with W&B dropping and a `kind` fault: (problems, what happened)."""
    with open(base / f"log_{k}.txt", "w+") as log:
        if kind == "disk":
            env = {**env, "FULL_DISK_AT": str(rng.randint(1, 400))}
        script = "tools/full_disk_train.py" if kind == "disk" else "train.py"
        proc = start(base, k > 0, SIGNAL_TOTAL, log, log, script, env, ["--wandb"])
        if kind == "sigkill":
            inside = kill_inside_a_write(proc, base, after_writes=rng.randint(2, 12), timeout=120)
            happened = f"SIGKILL {'inside' if inside else 'outside'} a write"
        elif kind == "sigterm":
            while proc.poll() is None and "run directory:" not in read_back(log):
                time.sleep(0.05)
            try:
                proc.wait(timeout=rng.uniform(0.0, 8.0))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)
            happened = "SIGTERM"
        else:
            happened = f"disk full from write {env['FULL_DISK_AT']}"
        proc.wait()
        out = read_back(log)
    problems = check_files(base)
    if kind != "sigkill":
        problems += [f"round {k}: leftover temp file {p}" for p in temp_files(base)]
    if proc.returncode not in (EXPECTED_EXIT[kind], 0) or "Traceback" in out:
        problems.append(f"round {k} ({happened}): exit {proc.returncode}: {out.strip()[-400:]}")
    if kind == "disk" and proc.returncode == STORAGE_EXIT and "write failed" not in out:
        problems.append(f"round {k}: the full disk was not named: {out.strip()[-300:]}")
    if kind != "sigkill" and "W&B online could not start" not in out and "run directory:" in out:
        problems.append(f"round {k}: the dropped W&B start was not told in one line")
    return problems, f"{happened}, exit {proc.returncode}"


def verify_run_dirs(base: Path) -> list[str]:
    """Every run directory: metrics.jsonl whole lines, its newest checkpoint's member files on disk."""
    problems = []
    for run_dir in sorted(p for p in base.glob("smoke_*") if p.is_dir()):
        metrics = run_dir / "metrics.jsonl"
        if metrics.exists():
            text = metrics.read_text()
            try:
                [json.loads(line) for line in text.splitlines()]
            except json.JSONDecodeError as err:
                problems.append(f"{metrics}: a line is not whole ({err})")
            if text and not text.endswith("\n"):
                problems.append(f"{metrics}: ends inside a line")
        saved = list_checkpoints(run_dir, "smoke")
        if saved:
            league = load_checkpoint(saved[-1], log=lambda m: None).state["league"]["manager"]
            named = [*(m["path"] for m in league["members"]), *(r["path"] for r in league["retired"].values())]
            problems += [f"{saved[-1].name} names {p}, which is gone" for p in named if not (run_dir / p).is_file()]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="faulted runs before the last resume")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tcgleague_fault_soak"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = args.dir / f"soak_{int(time.time())}"
    base.mkdir(parents=True)
    env = wandb_env(dropping_server())
    kinds = [KINDS[k % len(KINDS)] for k in range(args.rounds)]
    rng.shuffle(kinds)
    problems: list[str] = []
    for k, kind in enumerate(kinds):
        found, happened = fault_round(base, k, kind, rng, env)
        problems += found
        print(f"round {k}: {happened}; problems: {found or 'none'}", flush=True)
    with open(base / "log_final.txt", "w+") as log:
        final = start(base, True, SIGNAL_TOTAL, log, log, env=env, extra=["--wandb"])
        final.wait()
    with open(base / "log_straight.txt", "w+") as log:
        start(base / "straight", False, SIGNAL_TOTAL, log).wait()
    same = final.returncode == 0 and final_digest(base) == final_digest(base / "straight")
    if not same:
        problems.append(f"the resumed run ends with other weights than the straight run (exit {final.returncode})")
    problems += verify_run_dirs(base) + [f"leftover temp file {p}" for p in temp_files(base)]
    offline = len(list(base.glob("smoke_*/wandb/offline-run-*")))
    reached = load_checkpoint(latest_checkpoint(base, "smoke"), log=lambda m: None).global_step
    print(
        f"{args.rounds} faulted rounds ({', '.join(kinds)}); final weights {'equal' if same else 'DIFFER'} "
        f"at step {reached}; {len(problems)} problems; {offline} W&B runs logged offline"
    )
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
