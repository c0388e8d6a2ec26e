"""Atomic file writes: a temp file beside the target, fsync, rename, fsync of the folder, so a
crash leaves either the old complete file or the new complete one, never a torn one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, write, keep_backup: bool = False) -> None:
    """Writes via `write(binary_file)`; with keep_backup the previous file becomes `<name>.bak`
    first (a crash between the two renames leaves the .bak to load)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if keep_backup and path.exists():
            os.replace(path, path.with_name(path.name + ".bak"))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
