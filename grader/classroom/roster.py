"""Who is in the class: the students of a submissions folder, the shard of each, the hash of each one's work.

- :func:`list_students`: one student per subfolder or ``.zip`` of the folder, named after it;
- :func:`shard_of` / :func:`in_shard`: ``--shard K/N`` slices the class by a hash of each student's
  name alone, so the slices do not depend on who else is in the class and several machines agree;
- :func:`submission_hash`: what a resume compares to know whether a student handed in something new.

Student names are untrusted (a folder's name): :func:`grader.safe_text.printable` shows one on a terminal line.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from grader.safe_text import printable

# Folders and files a submission's hash leaves out: tools' caches and version control, not the work.
HASH_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache"})


def list_students(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """{student name: path} for every subfolder or ``.zip`` in ``folder``; warnings for the rest."""
    students: dict[str, Path] = {}
    warnings: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            name = entry.name
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            name = entry.stem
        else:
            warnings.append(f"ignoring {printable(entry.name)}: not a folder or a .zip")
            continue
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            warnings.append(f"ignoring {printable(entry.name)}: its name is not valid UTF-8")
            continue
        if name in students:
            warnings.append(f"ignoring {printable(entry.name)}: student {name!r} already has a submission")
            continue
        students[name] = entry
    return students, warnings


# --- shards ----------------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; ValueError unless 1 <= K <= N."""
    match = re.fullmatch(r"([0-9]{1,6})/([0-9]{1,6})", text.strip())
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"--shard takes K/N with 1 <= K <= N (such as 2/4), got {text!r}")
    return int(match[1]), int(match[2])


def shard_of(student: str, count: int) -> int:
    """The shard (1..count) of ``student``: from the SHA-256 of the name alone, so the same student
    lands in the same shard whoever else is in the class."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(student, shard[1]) == shard[0]


# --- the submission's content hash -----------------------------------------------------------------


def submission_hash(path: Path) -> str:
    """SHA-256 over a submission's content: a zip's bytes, or a folder's file names, types and bytes
    (symlinks by their target, never followed; caches and ``.git`` left out). Never raises: what
    cannot be read goes into the hash as the error, so it changes when the file becomes readable."""
    digest = hashlib.sha256()
    path = Path(path)
    if not path.is_dir() or path.is_symlink():
        digest.update(b"file\0")
        _hash_file(digest, path)
        return digest.hexdigest()
    digest.update(b"folder\0")
    for root, dirs, files in os.walk(path, onerror=lambda err: digest.update(f"unreadable: {err}\0".encode())):
        dirs[:] = sorted(d for d in dirs if d not in HASH_SKIPPED_DIRS)
        rel_root = Path(root).relative_to(path)
        for name in sorted([*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]):
            if name.endswith(".pyc"):
                continue
            full = os.path.join(root, name)
            rel = (rel_root / name).as_posix().encode("utf-8", "surrogateescape")
            if os.path.islink(full):
                digest.update(b"link\0" + rel + b"\0" + os.fsencode(_readlink(full)) + b"\0")
            else:
                digest.update(b"file\0" + rel + b"\0")
                _hash_file(digest, Path(full))
        for d in dirs:
            if not os.path.islink(os.path.join(root, d)):
                digest.update(b"dir\0" + (rel_root / d).as_posix().encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError as err:
        return f"unreadable: {err.strerror}"


def _hash_file(digest: Any, path: Path) -> None:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            digest.update(f"{size}\0".encode())
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        digest.update(f"unreadable: {err.strerror}\0".encode())
