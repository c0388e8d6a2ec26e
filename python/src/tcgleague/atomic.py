"""Atomic file writes: a temp file beside the target, fsync, rename, fsync of the folder, so a
crash leaves either the old complete file or the new complete one, never a torn one.

A writer killed mid-write (kill -9, power loss) leaves its temp file behind. Temp files are
named `.<target>.tcgtmp-<host>-<pid>.<random>.tmp`, so a later run can remove exactly the
leftovers of our own writers that are no longer alive (`remove_leftover_temp_files`), and
never a file of anyone else's or of a writer still running.

A write that fails (a full disk, no permission, a read-only file system) removes its temp file,
leaves the previous file as it was and raises `errors.WriteError` naming the target and the
errno: the caller stops with one line, nothing that was good on disk lost."""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from .errors import WriteError

TEMP_MARK = "tcgtmp"
_TEMP_NAME = re.compile(rf"^\..+\.{TEMP_MARK}-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)\.[^.]+\.tmp$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def remove_leftover_temp_files(directories: Iterable[Path]) -> list[Path]:
    """Removes, under each directory (recursively), the temp files of atomic writes whose writer
    ran on this host and is gone; returns them."""
    host, removed = _host(), []
    for directory in directories:
        for path in Path(directory).rglob(f".*.{TEMP_MARK}-*.tmp"):
            match = _TEMP_NAME.match(path.name)
            if match and match["host"] == host and int(match["pid"]) != os.getpid() and not _alive(int(match["pid"])):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def atomic_write(path: str | Path, write, keep_backup: bool = False) -> None:
    """Writes via `write(binary_file)`; with keep_backup the previous file becomes `<name>.bak`
    first (a crash between the two renames leaves the .bak to load). An OSError of the write
    (torch.save wraps it in a RuntimeError: it is found in the chain) becomes a WriteError."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.{TEMP_MARK}-{_host()}-{os.getpid()}.", suffix=".tmp"
        )
    except OSError as err:
        raise WriteError(path, err) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        _replace(Path(tmp), path, keep_backup)
    except BaseException as err:
        with suppress(OSError):
            Path(tmp).unlink(missing_ok=True)
        cause = os_error_of(err) if isinstance(err, Exception) else None  # never an interrupt's
        if cause is not None:
            raise WriteError(path, cause) from None
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _replace(tmp: Path, path: Path, keep_backup: bool) -> None:
    """The temp file becomes `path`; with keep_backup the previous file becomes the .bak first,
    and comes back if the second rename fails."""
    if not (keep_backup and path.exists()):
        os.replace(tmp, path)
        return
    backup = path.with_name(path.name + ".bak")
    os.replace(path, backup)
    try:
        os.replace(tmp, path)
    except OSError:
        os.replace(backup, path)
        raise


def os_error_of(err: BaseException | None) -> OSError | None:
    """The OSError behind `err` (itself, or in its cause / context chain), if any."""
    while err is not None:
        if isinstance(err, OSError):
            return err
        err = err.__cause__ or err.__context__
    return None


def write_readable(path: Path, write) -> None:
    """`atomic_write`, then readable by all like any web page (temp files are created private):
    the report's files and the replay viewer."""
    atomic_write(path, write)
    path.chmod(0o644)
