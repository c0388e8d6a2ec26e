"""Kill -9 soak: a league run is killed while it writes, resumed, killed again, N times.

    python tools/kill_soak.py --kills 10 [--seed 0] [--dir /tmp/soak]

Each round starts `train.py` (configs/smoke.ini with the league, a checkpoint every epoch, so
checkpoints, sidecars, member files and the league state are written all the time), resuming
from `latest` with `--resume-load-optimizer` after the first round. It watches the run's files
and sends SIGKILL the moment a temp file of an atomic write appears (after a random number of
writes), so the kill lands inside a write. After every kill it checks that every checkpoint
on disk loads (with its run state) and that `latest` resolves. A last round resumes once more
and runs to the end: it must exit 0, and no temp file of a killed write may be left.
Prints one line per round and a summary; exits 1 if anything was corrupt or a resume failed.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from tcgleague.atomic import TEMP_MARK
from tcgleague.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint

ROOT = Path(__file__).resolve().parents[1]  # the checkout: train.py and configs/ are read from here

RUN = ["--config", "configs/smoke.ini", "--league-enable", "--train.checkpoint-interval", "1"]
RUN += ["--train.eval-interval", "0", "--train.max-checkpoints", "3"]


def temp_files(base: Path) -> list[Path]:
    return list(base.rglob(f".*.{TEMP_MARK}-*.tmp"))


def start(base: Path, resume: bool, total: int, stderr: IO[str]) -> subprocess.Popen:
    """train.py on `base`; its stderr goes to a file, not a pipe (a full pipe would block it)."""
    argv = [
        sys.executable,
        "train.py",
        *RUN,
        "--base.experiments-dir",
        str(base),
        "--train.total-timesteps",
        str(total),
    ]
    if resume:
        argv += ["--resume-checkpoint", "latest", "--resume-load-optimizer"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def read_back(log: IO[str]) -> str:
    """What a finished (or killed) train.py wrote to its stderr file."""
    log.seek(0)
    return log.read()


def kill_inside_a_write(proc: subprocess.Popen, base: Path, after_writes: int, timeout: float) -> bool:
    """SIGKILL the moment a temp file is on disk, once `after_writes` writes have been seen and
    a checkpoint exists (something to resume from); True if the kill landed inside a write."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        temps = temp_files(base)
        seen |= {p.name for p in temps}
        if temps and len(seen) >= after_writes and any(base.glob("smoke_*/model_smoke_*.pt")):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return False


def check_files(base: Path) -> list[str]:
    """Every checkpoint on disk loads with its run state; `latest` resolves."""
    problems = []
    for path in sorted(base.glob("smoke_*/model_smoke_*.pt")):
        try:
            load_checkpoint(path, run_state=True, log=lambda msg: None)
        except CheckpointError as err:
            problems.append(str(err))
    if latest_checkpoint(base, "smoke") is None:
        problems.append("`latest` resolves to no checkpoint")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tcgleague_kill_soak"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = args.dir / f"soak_{int(time.time())}"
    base.mkdir(parents=True)
    total = 512 * 400  # more epochs than the soak ever reaches
    inside = resumed = 0
    problems: list[str] = []
    for k in range(args.kills):
        with open(base / f"stderr_{k}.txt", "w+") as log:
            proc = start(base, resume=k > 0, total=total, stderr=log)
            hit = kill_inside_a_write(proc, base, after_writes=rng.randint(2, 12), timeout=120)
            err = read_back(log)
        found = check_files(base)
        if "Traceback" in err or "refused" in err:
            found.append(f"round {k}: {err.strip().splitlines()[-1]}")
        resumed += k > 0 and not found
        inside += hit
        problems += found
        print(f"round {k}: killed {'inside a write' if hit else 'outside a write'}; problems: {found or 'none'}")
    reached = load_checkpoint(latest_checkpoint(base, "smoke"), log=lambda msg: None).global_step
    with open(base / "stderr_final.txt", "w+") as log:
        final = start(base, resume=True, total=reached + 2 * 512, stderr=log)  # two more epochs, to the end
        final.wait()
        err = read_back(log)
    if final.returncode != 0:
        problems.append(f"final resume exited {final.returncode}: {err.strip()[-300:]}")
    leftovers = temp_files(base)
    problems += [f"leftover temp file {p}" for p in leftovers]
    print(
        f"kills {args.kills}, inside a write {inside}, clean resumes {resumed + (final.returncode == 0)} of "
        f"{args.kills}, corrupt or unreadable files {len(problems)}, leftover temp files {len(leftovers)}"
    )
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
