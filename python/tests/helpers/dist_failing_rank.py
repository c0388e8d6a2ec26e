"""A torchrun entry for test_dist.py: `train.py`, except that one rank raises (or, with
FAIL_HANG=1, hangs; with FAIL_KILL=1, dies by SIGKILL, as when its node is lost) at the start of
one epoch's update, while the other ranks wait for it in a collective.

    FAIL_RANK=1 FAIL_EPOCH=3 [FAIL_ONCE=1] [FAIL_HANG=1 | FAIL_KILL=1] torchrun ... dist_failing_rank.py <train.py arguments>

FAIL_ONCE=1 fails only the first attempt (torchrun's TORCHELASTIC_RESTART_COUNT == 0), so an
elastic restart runs clean."""

from __future__ import annotations

import os
import signal
import sys
import time

from tcgleague import train
from tcgleague.trainer import Trainer

RANK = int(os.environ["RANK"])
FAIL_RANK, FAIL_EPOCH = int(os.environ["FAIL_RANK"]), int(os.environ["FAIL_EPOCH"])
FAILS = os.environ.get("FAIL_ONCE") != "1" or os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
HANGS = os.environ.get("FAIL_HANG") == "1"
KILLED = os.environ.get("FAIL_KILL") == "1"
update = Trainer.update


def failing_update(trainer: Trainer, params):
    if FAILS and RANK == FAIL_RANK and trainer.epoch + 1 == FAIL_EPOCH:
        if HANGS:
            time.sleep(600)
        if KILLED:
            print(f"injected SIGKILL on rank {RANK} in epoch {FAIL_EPOCH}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError(f"injected failure on rank {RANK} in epoch {FAIL_EPOCH}")
    return update(trainer, params)


Trainer.update = failing_update
sys.exit(train.main())
