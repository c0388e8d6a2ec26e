"""Process-level tuning for the hot loops (called by the engine benchmark; the trainer does not).

glibc hands every allocation above 128 KiB to mmap and gives it back on free, so each env step's
numpy/torch temporaries of that size cost fresh zeroed pages (page faults). Raising the mmap and
trim thresholds keeps them in the heap. Long-lived objects of the torch/numpy imports are frozen
out of the garbage collector, which otherwise walks them on every collection."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def tune_process() -> None:
    name = ctypes.util.find_library("c")
    if name:
        try:
            libc = ctypes.CDLL(name)
            libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
            libc.mallopt(M_TRIM_THRESHOLD, 1 << 31)
        except (OSError, AttributeError):
            pass  # not glibc: nothing to tune
    gc.freeze()
