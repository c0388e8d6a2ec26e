"""Kill -9 soak: a league run is killed while it writes, resumed, killed again, N times.

    python tools/kill_soak.py --kills 10 [--seed 0] [--dir /tmp/soak]
    python tools/kill_soak.py --signals --kills 5     # SIGTERM (preemption) instead of SIGKILL

Each round starts `train.py` (configs/smoke.ini with the league, a checkpoint every epoch, so
checkpoints, sidecars, member files and the league state are written all the time), resuming
from `latest` with `--resume-load-optimizer` after the first round. It watches the run's files
and sends SIGKILL the moment a temp file of an atomic write appears (after a random number of
writes), so the kill lands inside a write. After every kill it checks that every checkpoint
on disk loads (with its run state) and that `latest` resolves. A last round resumes once more
and runs to the end: it must exit 0, and no temp file of a killed write may be left.
Prints one line per round and a summary; exits 1 if anything was corrupt or a resume failed.

With --signals each round gets a SIGTERM at a random moment instead (what a scheduler sends
before it preempts): the run must finish its epoch, write that checkpoint and exit 75
(errors.PREEMPTED_EXIT), leaving no temp file; the next round resumes it exactly. After the
last round the run is resumed to its end and its final weights must equal those of the same
run trained without interruption (its weights digest).
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
from tcgleague.dist import weights_digest
from tcgleague.errors import PREEMPTED_EXIT

ROOT = Path(__file__).resolve().parents[1]  # the checkout: train.py and configs/ are read from here

RUN = ["--config", "configs/smoke.ini", "--league-enable", "--train.checkpoint-interval", "1"]
RUN += ["--train.eval-interval", "0", "--train.max-checkpoints", "3", "--base.torch-threads", "1"]


def temp_files(base: Path) -> list[Path]:
    return list(base.rglob(f".*.{TEMP_MARK}-*.tmp"))


def start(
    base: Path,
    resume: bool,
    total: int,
    stderr: IO[str],
    stdout=subprocess.DEVNULL,
    script: str = "train.py",
    env: dict | None = None,
    extra: list[str] = (),
) -> subprocess.Popen:
    """train.py (or `script`, a train.py with faults; `extra` arguments) on `base`; its stderr
    goes to a file, not a pipe (a full pipe would block it)."""
    argv = [
        sys.executable,
        script,
        *RUN,
        "--base.experiments-dir",
        str(base),
        "--train.total-timesteps",
        str(total),
        *extra,
    ]
    if resume:
        argv += ["--resume-checkpoint", "latest", "--resume-load-optimizer"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=stdout, stderr=stderr, text=True, env=env)


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


SIGNAL_TOTAL = 512 * 24  # the signal soak's run: 24 epochs, more than the rounds reach


def final_digest(base: Path) -> str:
    """The weights digest of the run's last checkpoint (the end of the run)."""
    return weights_digest(load_checkpoint(latest_checkpoint(base, "smoke"), log=lambda msg: None).state["policy"])


def signal_round(base: Path, k: int, rng: random.Random) -> tuple[list[str], bool, float | None]:
    """One run (resumed after the first) that gets a SIGTERM at a random moment once it trains
    (its handlers are installed before it prints its run directory): (problems, whether it
    resumed exactly, seconds from the signal to its exit; None if it ended first)."""
    with open(base / f"log_{k}.txt", "w+") as log:
        proc = start(base, resume=k > 0, total=SIGNAL_TOTAL, stderr=log, stdout=log)
        while proc.poll() is None and "run directory:" not in read_back(log):
            time.sleep(0.05)
        try:
            proc.wait(timeout=rng.uniform(0.0, 5.0))
            signalled = None
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            proc.wait()
        took = None if signalled is None else time.monotonic() - signalled
        out = read_back(log)
    problems = check_files(base) + [f"round {k}: leftover temp file {p}" for p in temp_files(base)]
    expected = 0 if signalled is None or "\ndone: " in out else PREEMPTED_EXIT  # done: signalled in the last epoch
    if proc.returncode != expected or "Traceback" in out:
        problems.append(f"round {k}: exit {proc.returncode}, expected {expected}: {out.strip()[-300:]}")
    return problems, k == 0 or "exact continuation" in out, took


def signal_soak(args: argparse.Namespace, rng: random.Random, base: Path) -> int:
    """--signals: SIGTERM rounds, then the run resumed to its end vs the same run straight through."""
    problems, exact, stops = [], 0, []
    for k in range(args.kills):
        found, resumed_exactly, took = signal_round(base, k, rng)
        problems += found
        exact += resumed_exactly and not found
        if took is not None:
            stops.append(took)
        print(
            f"round {k}: {f'SIGTERM, exit after {took:.1f} s' if took else 'ended first'}; problems: {found or 'none'}"
        )
    with open(base / "log_final.txt", "w+") as log:
        final = start(base, resume=True, total=SIGNAL_TOTAL, stderr=log, stdout=log)
        final.wait()
    straight_base = base / "straight"
    with open(base / "log_straight.txt", "w+") as log:
        start(straight_base, resume=False, total=SIGNAL_TOTAL, stderr=log).wait()
    same = final.returncode == 0 and final_digest(base) == final_digest(straight_base)
    if not same:
        problems.append(
            f"the resumed run ends with other weights than the straight run (final exit {final.returncode})"
        )
    leftovers = temp_files(base)
    corrupt = [p for p in problems if "leftover" not in p]
    print(
        f"{exact} of {args.kills} runs resume exactly, final weights {'equal' if same else 'DIFFER'}; "
        f"{len(corrupt)} corrupt files or failed runs, {len(leftovers)} leftover temp files; signal to exit "
        f"{min(stops, default=0):.1f}-{max(stops, default=0):.1f} s over {len(stops)} signals"
    )
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems or leftovers else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="rounds (kills, or with --signals SIGTERMs)")
    parser.add_argument("--signals", action="store_true", help="SIGTERM at random moments instead of SIGKILL")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tcgleague_kill_soak"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = args.dir / f"soak_{int(time.time())}"
    base.mkdir(parents=True)
    if args.signals:
        return signal_soak(args, rng, base)
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
