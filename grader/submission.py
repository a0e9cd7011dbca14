"""Submission intake: turn what the instructor points at into a directory of the four group folders.

Accepted: a directory laid out like ``exercises/``, a repository root that contains ``exercises/``,
or a ``.zip`` of either (possibly wrapped in one top folder). Nothing here imports or runs the
student's code, and nothing writes into the student's files: a zip is extracted into the
grader's own temporary directory, with every member checked first.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path, PurePosixPath

from grader.rubric import GROUPS

MAX_ZIP_MEMBERS = 5000
MAX_ZIP_BYTES = 100 * 2**20
_SEARCH_DEPTH = 3


class SubmissionError(Exception):
    """The input cannot be graded at all; the message is one line for the instructor."""


def locate_submission(path: Path, scratch: Path) -> Path:
    """The directory holding the group folders of the submission at ``path``.

    ``scratch`` is a directory the grader owns, used to extract zips.
    """
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or directory")
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise SubmissionError(f"{path}: not a directory and not a zip file")
        path = extract_zip(path, scratch / "unzipped")
    root = find_exercises_root(path)
    if root is None:
        raise SubmissionError(
            f"{path}: nothing that looks like a submission "
            f"(expected group folders such as {GROUPS[0]}/, or an exercises/ folder holding them)"
        )
    return root


def find_exercises_root(path: Path) -> Path | None:
    """The shallowest directory under ``path`` that holds at least one group folder."""
    frontier = [path]
    for _ in range(_SEARCH_DEPTH + 1):
        for candidate in frontier:
            if any(_is_real_dir(candidate / group) for group in GROUPS):
                return candidate
        for candidate in frontier:
            if _is_real_dir(candidate / "exercises") and any(
                _is_real_dir(candidate / "exercises" / group) for group in GROUPS
            ):
                return candidate / "exercises"
        frontier = [child for parent in frontier for child in _subdirs(parent)]
    return None


def extract_zip(archive: Path, dest: Path) -> Path:
    """Extract ``archive`` into ``dest`` after checking every member; returns ``dest``."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise SubmissionError(f"{archive}: more than {MAX_ZIP_MEMBERS} files in the zip")
            if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                raise SubmissionError(f"{archive}: more than {MAX_ZIP_BYTES // 2**20} MB once unzipped")
            dest.mkdir(parents=True, exist_ok=True)
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts:
                    raise SubmissionError(f"{archive}: unsafe path in the zip: {member.filename!r}")
                if stat.S_ISLNK(member.external_attr >> 16):
                    continue  # links are never followed, so never created
                target = dest.joinpath(*name.parts)
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(target, "wb") as out:
                    out.write(src.read(MAX_ZIP_BYTES + 1))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, ValueError) as err:
        raise SubmissionError(f"{archive}: unreadable zip ({err})") from None
    return dest


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(child for child in path.iterdir() if _is_real_dir(child) and not child.name.startswith("."))
    except OSError:
        return []
