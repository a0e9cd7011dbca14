"""Submission intake: turn what the instructor points at into a directory of the four group folders.

Accepted: a directory laid out like ``exercises/``, a repository root that contains ``exercises/``,
a flat folder of the module files (``causal_mask.py``, ... with no group folders: how Gradescope
receives files dragged in one by one), or a ``.zip`` of any of these (possibly wrapped in one top
folder). A flat submission's module files are copied into group folders in the grader's scratch
directory, placed by the rubric's module names; its other files are left out. Nothing here imports or runs the
student's code, and nothing writes into the student's files: a zip is extracted into the
grader's own temporary directory, with every member checked first.
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from grader.rubric import GROUPS, load_rubric

MAX_ZIP_MEMBERS = 5000
MAX_ZIP_BYTES = 100 * 2**20
MAX_FILE_BYTES = 2**20  # a module file larger than this is not copied
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
        flat = find_flat_root(path)
        if flat is not None:
            return regroup_flat(flat, scratch / "regrouped")
        raise SubmissionError(
            f"{path}: nothing that looks like a submission "
            f"(expected group folders such as {GROUPS[0]}/, an exercises/ folder holding them, "
            f"or the module files such as causal_mask.py)"
        )
    return root


def find_flat_root(path: Path) -> Path | None:
    """The shallowest directory under ``path`` holding at least one of the twelve module files
    (``<module>.py``, a regular file) directly, or None."""
    modules = load_rubric().module_groups
    frontier = [path]
    for _ in range(_SEARCH_DEPTH + 1):
        for candidate in frontier:
            if any(_is_regular(candidate / f"{module}.py") for module in modules):
                return candidate
        frontier = [child for parent in frontier for child in _subdirs(parent)]
    return None


def regroup_flat(flat: Path, dest: Path) -> Path:
    """Copy the module files of the flat folder ``flat`` into ``dest/<group>/<module>.py`` (by the
    rubric's module names; regular files of at most 1 MB, never through a symlink); returns ``dest``.
    Only bytes are copied: nothing is imported or run."""
    dest.mkdir(parents=True, exist_ok=True)
    for group in GROUPS:
        (dest / group).mkdir(exist_ok=True)
    notes: list[str] = []
    for module, group in load_rubric().module_groups.items():
        source = flat / f"{module}.py"
        data = _read_regular(source, source.name, notes) if os.path.lexists(source) else None
        if data is not None:
            (dest / group / f"{module}.py").write_bytes(data)
    return dest


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
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, ValueError,
            RuntimeError, zlib.error, UnicodeError) as err:  # RuntimeError: encrypted; zlib.error: corrupt deflate
        raise SubmissionError(f"{archive}: unreadable zip ({_one_line(err)})") from None
    return dest


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


def read_module_files(source: Path, substitutes: Mapping[str, Path] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The regular ``*.py`` files (<= 1 MB, no symlinks) of the four group folders of ``source``, as
    ``{"<group>/<name>.py": bytes}``, and notes on what was skipped. Read once, here, by the grader:
    a domain gets these bytes, never a path into the submission.

    ``substitutes`` maps a module name to a reference file that replaces the student's.
    """
    files: dict[str, bytes] = {}
    notes: list[str] = []
    for group in GROUPS:
        gdir = source / group
        try:
            if not stat.S_ISDIR(os.lstat(gdir).st_mode):
                notes.append(f"{group}: not a directory")
                continue
            names = sorted(os.listdir(gdir))
        except OSError:
            notes.append(f"{group}: missing")
            continue
        for name in names:
            if name.endswith(".py"):
                data = _read_regular(gdir / name, f"{group}/{name}", notes)
                if data is not None:
                    files[f"{group}/{name}"] = data
    module_groups = load_rubric().module_groups
    for module, ref_file in (substitutes or {}).items():
        if module not in module_groups:
            raise ValueError(f"substitute for unknown module {module!r}")
        files[f"{module_groups[module]}/{module}.py"] = Path(ref_file).read_bytes()
    return files, notes


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


def _read_regular(path: Path, rel: str, notes: list[str]) -> bytes | None:
    try:
        return read_regular(path, MAX_FILE_BYTES)
    except UnreadableFile as err:
        notes.append(f"{rel}: skipped ({_SKIPPED[err.kind]})")
        return None


_SKIPPED = {"unopenable": "a symlink or unreadable", "not regular": "not a regular file",
            "too large": f"larger than {MAX_FILE_BYTES} bytes"}


def bundle_fd(files: Mapping[str, bytes]) -> int:
    """A memfd holding ``files`` in the worker codec, positioned at its start (the caller closes it)."""
    from grader.kata_worker import codec  # imports torch: not before a grading needs it

    fd = os.memfd_create("kata-bundle", os.MFD_CLOEXEC)
    data = codec.encode(dict(files))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _is_regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(child for child in path.iterdir() if _is_real_dir(child) and not child.name.startswith("."))
    except OSError:
        return []
