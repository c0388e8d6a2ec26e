"""The error boundary of every command-line entry point.

An error in what the user gave us - a config, a file, a checkpoint, a deck pool, a device - is
a `UserInputError`: its message names the key or file and what would be valid, and an entry
point prints it on one line and exits 2, without a traceback (as it does a `NonFiniteError`,
training stopped on a NaN; a `WriteError`, a file that could not be written, exits
`STORAGE_EXIT`). Anything else is a bug of ours and keeps its traceback. Entry points validate every input before they create anything on
disk, so a refused run leaves nothing behind."""

from __future__ import annotations

import errno
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from torch.distributed.elastic.multiprocessing.errors import get_error_handler

USAGE_EXIT = 2  # what argparse exits with for bad arguments; scripts can tell it from a crash (1)
# A run stopped by SIGTERM / SIGUSR1 (preemption.py) after writing its checkpoint: sysexits'
# EX_TEMPFAIL, "try again later". A requeueing scheduler resumes it with
# `--resume-checkpoint latest --resume-load-optimizer`; a second signal exits 128 + the signal.
PREEMPTED_EXIT = 75
# A file could not be written (full disk, no permission, read-only file system): sysexits'
# EX_IOERR. Requeueing does not help until someone frees space; the message names the last good checkpoint.
STORAGE_EXIT = 74
TORCHRUN_ERROR_FILE = "TORCHELASTIC_ERROR_FILE"  # set by torchrun for each rank it starts


class ReportedError(Exception):
    """An error whose message says everything the user needs: printed on one line, exit 2.
    `label` says which kind."""

    label = "error"
    exit_code = USAGE_EXIT


class UserInputError(ReportedError):
    """Bad input from the user: a config, a file, a checkpoint, a deck pool, a device."""


class NonFiniteError(ReportedError):
    """Training produced a non-finite loss, gradient or weight and was stopped ([train] nan_policy)."""

    label = "training stopped"


class WriteError(ReportedError, OSError):
    """A file that could not be written (ENOSPC, EACCES, EROFS, ...): the message names the file and
    the errno; `note` (the caller's) says what is still good on disk. The write left no temp file
    and the previous version of the file, if any, in place. An OSError still (with its errno), so
    code that handles failed file operations handles this one."""

    label = "write failed"
    exit_code = STORAGE_EXIT

    def __init__(self, path: str | Path, error: OSError, note: str = ""):
        self.path, self.error, self.note = Path(path), error, note
        code = errno.errorcode.get(error.errno or 0, "?")
        super().__init__(f"cannot write {path}: {error.strerror or error} ({code})" + (f"; {note}" if note else ""))
        self.errno = error.errno

    def noting(self, note: str) -> WriteError:
        """The same failure, with what is still good on disk said."""
        return WriteError(self.path, self.error, note)


class ArgumentError(UserInputError):
    """A command-line argument that is well-formed but unusable (an output folder that does not exist)."""

    label = "bad argument"


def output_file(path: Path | None, flag: str) -> Path | None:
    """`path` if a file can be written there (its folder exists and is not a file), checked up
    front so a long run never ends in an unwritable report."""
    if path is not None and (path.is_dir() or not path.parent.is_dir()):
        raise ArgumentError(f"{flag} {path}: {'is a directory' if path.is_dir() else 'its folder does not exist'}")
    return path


def write_report(path: Path | None, report: dict) -> None:
    """An entry point's `--json` report (checked up front by `output_file`), and a line saying so."""
    if path is not None:
        path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"wrote {path}")


def entry_point(prog: str) -> Callable[[Callable[[list[str] | None], int]], Callable[[list[str] | None], int]]:
    """Wraps an entry point's `main(argv) -> exit code`: a ReportedError becomes
    `<prog>: <label>: <message>` on stderr and its `exit_code` (2; a WriteError 74). Under torchrun every error is also
    written to the rank's error file, so torchrun's closing summary names the failing rank's
    error (its "root cause") instead of an empty traceback."""

    def wrap(main: Callable[[list[str] | None], int]) -> Callable[[list[str] | None], int]:
        @functools.wraps(main)
        def guarded(argv: list[str] | None = None) -> int:
            try:
                return main(argv)
            except ReportedError as err:
                line = f"{prog}: {err.label}: {err}"
                print(line, file=sys.stderr)
                record_for_torchrun(line)
                return err.exit_code
            except Exception as err:
                if TORCHRUN_ERROR_FILE in os.environ:
                    get_error_handler().record_exception(err)  # with its traceback: a bug of ours
                raise

        return guarded

    return wrap


def record_for_torchrun(line: str) -> None:
    """A reported error's one line in torchrun's per-rank error file (torchelastic's JSON
    format), where torchrun's summary shows it; nothing outside torchrun."""
    path = os.environ.get(TORCHRUN_ERROR_FILE)
    if path:
        info = {"py_callstack": line, "timestamp": str(int(time.time()))}
        Path(path).write_text(json.dumps({"message": {"message": line, "extraInfo": info}}))
