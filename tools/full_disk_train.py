"""train.py on a disk that fills up: from the FULL_DISK_AT-th write on (counted over the temp
files of atomic writes - checkpoints, sidecars, member files, the league state - and the lines of
metrics.jsonl) every write fails with ENOSPC, as on a full disk. fault_soak.py runs it.

    FULL_DISK_AT=N python tools/full_disk_train.py <train.py arguments>
"""

from __future__ import annotations

import errno
import os
import sys

from tcgleague import train
from tcgleague.atomic import TEMP_MARK

FULL_AT = int(os.environ["FULL_DISK_AT"])
writes = 0
os_write, os_fdopen = os.write, os.fdopen


def disk_full() -> bool:
    """Counts one write; True from the FULL_AT-th on."""
    global writes
    writes += 1
    return writes >= FULL_AT


def refuse() -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FillingFile:
    """An atomic write's temp file on the filling disk."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        if disk_full():
            refuse()
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def fdopen(fd, *args, **kwargs):
    f = os_fdopen(fd, *args, **kwargs)
    return FillingFile(f) if TEMP_MARK in os.readlink(f"/proc/self/fd/{fd}") else f


def write(fd, data):
    if os.readlink(f"/proc/self/fd/{fd}").endswith("metrics.jsonl") and disk_full():
        refuse()
    return os_write(fd, data)


os.fdopen, os.write = fdopen, write
sys.exit(train.main())
