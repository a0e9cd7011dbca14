"""The lock that keeps two runs off one grades CSV: ``score-all`` (and its ``--only``), ``merge``.

Two runs on one CSV would both grade everyone, and the one that rewrites the file last (an ``--only``
run, the sorted rewrite at the end) drops the other's rows. So each run holds an exclusive
``flock`` on ``<csv>.lock`` beside the CSV from before it reads the CSV until after its class-level
outputs are written, and a second run is refused at once (one line: who holds it), never queued: a
queued run would grade again what the first has just graded.

``flock`` belongs to the open file, so the kernel drops it when the holder ends, however it ends
(``kill -9``, a machine that reboots): a crashed run leaves no stale lock to clean up. The file
itself stays (removing it would race with a run that has just opened it); it holds the holder's
line, rewritten by each run that takes it. Locks of two open files conflict even within one process.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from grader.safe_text import printable


class SheetBusy(Exception):
    """Another run holds the CSV's lock, or the lock file cannot be used (one line for the instructor)."""


def lock_path(csv_path: Path) -> Path:
    """``<csv>.lock``, beside the CSV."""
    csv_path = Path(csv_path)
    return csv_path.with_name(csv_path.name + ".lock")


class SheetLock:
    """The lock of one CSV, held from :func:`take_lock` until :meth:`release` (or the ``with`` block's end)."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops its flock
            self._fd = None

    def __enter__(self) -> SheetLock:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def take_lock(csv_path: Path, command: str) -> SheetLock:
    """The lock of ``csv_path`` for this run of ``command`` (``score-all``, ``merge``); SheetBusy when
    another run holds it (saying who: its command, pid, host and start) or the lock file is unusable."""
    path = lock_path(csv_path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as err:
        raise SheetBusy(f"{path}: cannot open the lock file that keeps two runs off {csv_path} "
                        f"({err.strerror or err})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = printable(os.pread(fd, 1000, 0).decode("utf-8", "replace").strip()) or "a run that has just started"
        os.close(fd)
        raise SheetBusy(f"{csv_path} is in use by another run ({holder}): let it finish, or write to another CSV") from None
    os.ftruncate(fd, 0)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    os.pwrite(fd, f"{command}, pid {os.getpid()} on {socket.gethostname()}, since {started}\n".encode(), 0)
    return SheetLock(fd)
