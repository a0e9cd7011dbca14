"""Files the grader reads from students and files it writes for instructors: the one place for both.

Reading: a submission is untrusted, so a file is read without following a link, only if it is a regular
file, and at most a given size (:func:`read_regular`); a folder is one only when it is not a link.
Writing: what the grader writes (grades, reports, feedback) replaces the old file through a temporary one
(:func:`write_atomically`: a kill leaves the old file or the new one, a link is replaced, never written
through), and inside :func:`private_files` is readable by this user alone.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class UnreadableFile(Exception):
    """A file of a submission that read_regular refuses; ``kind`` says why."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(detail or kind)
        self.kind = kind  # "unopenable" (a symlink, missing, no permission) | "not regular" | "too large"


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, opened without following a symlink, at most ``limit``
    of them; UnreadableFile otherwise. Submissions are untrusted: a link to the reference, a FIFO that
    never ends or a file that grows while read must not get in."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise UnreadableFile("unopenable", err.strerror or str(err)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile("not regular")
        if st.st_size > limit:
            raise UnreadableFile("too large")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableFile("too large")
    return data


def is_regular_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


# --- who may read what the grader writes--------------------------------------------------------------

PRIVATE_UMASK = 0o077
_caller_umask: int | None = None  # the umask the outermost private_files() replaced


@contextmanager
def private_files() -> Iterator[None]:
    """Everything created inside (files, folders, the gradebook's database, by this module or by any
    other: feedback, class summary, nbgrader) can be read by this user alone: mode 0600, folders 0700
    (umask 077). Grades, reports and feedback are other people's personal data, and under uid
    isolation the students' code runs on this machine under other uids. The instructor's tools run as
    the same user, so nothing of theirs changes; a file rewritten keeps the mode it has (chmod it to
    share it). The jobs (score-all's jobs) get the caller's umask back (:func:`caller_umask`): what they create (the domains'
    folders) is made with the modes their own code gives."""
    global _caller_umask
    old = os.umask(PRIVATE_UMASK)
    outermost = _caller_umask is None
    if outermost:
        _caller_umask = old
    try:
        yield
    finally:
        os.umask(old)
        if outermost:
            _caller_umask = None


def caller_umask() -> int:
    """The umask a job starts with: the one before private_files(), else this process's (-1: unchanged)."""
    return _caller_umask if _caller_umask is not None else -1


def _mode_for(path: Path) -> int:
    """The permissions a file rewritten at ``path`` keeps: the old regular file's; else (no file, or a
    link planted there) what the umask gives a new file (under private_files: this user's alone)."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return st.st_mode & 0o777
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path, data: str, new_mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a new temporary file beside it, renamed over it (a symlink
    at ``path`` is replaced, never written through; a kill leaves the old file or the new one). It
    keeps the old file's mode; a new file gets ``new_mode``, else what the umask gives."""
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        mode = _mode_for(path)
        os.chmod(tmp, new_mode if new_mode is not None and not os.path.lexists(path) else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
