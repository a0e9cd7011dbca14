"""Submission intake: turn what the instructor points at into a directory of the four group folders.

Accepted: a directory laid out like ``exercises/``, a repository root that contains ``exercises/``,
a flat folder of the module files (``causal_mask.py``, ... with no group folders: how Gradescope
receives files dragged in one by one), a ``.zip`` of any of these (possibly wrapped in one top
folder), or a folder holding nothing gradable but one such ``.zip`` (Gradescope's submission folder
when the student uploaded ``submission.zip``; other files beside it, ``__MACOSX/`` say, are ignored).
A flat submission's module files are copied into group folders in the grader's scratch directory,
placed by the rubric's module names; its other files are left out. Nothing here imports or runs the
student's code, and nothing writes into the student's files: a zip is extracted into the grader's
own temporary directory, with every member checked first.

Only files named like a module (``[A-Za-z_][A-Za-z0-9_]*.py``, at most 103 characters: the names
an isolation domain accepts) go into the bundle a domain gets; another ``.py`` of a group folder
(``self_attention-old.py``, ``x copy.py``) is left out with a note, so a stray file costs nothing.
Notes name files escaped (grader.safe_text): a name may hold control characters.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from grader.files import UnreadableFile, is_real_dir, is_regular_file, read_regular
from grader.rubric import GROUPS, load_rubric
from grader.safe_text import escape_line

MAX_ZIP_MEMBERS = 5000
MAX_ZIP_BYTES = 100 * 2**20
MAX_FILE_BYTES = 2**20  # a module file larger than this is not copied
# What a domain's bundle holds at most (the rubric's module files first): well inside the codec's
# limits on one frame (64 MB, MAX_VALUES items), so stray files cannot make the bundle undecodable.
MAX_BUNDLE_FILES = 1000
MAX_BUNDLE_BYTES = 48 * 2**20
MAX_NOTES = 20  # notes on left-out files, then one line counting the rest
_SEARCH_DEPTH = 3
# A file the domain accepts in its bundle (grader/sandbox/kata_worker/domain.py: _MODULE_FILE, read_bundle).
MODULE_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\.py")


class SubmissionError(Exception):
    """The input cannot be graded at all; the message is one line for the instructor."""


def locate_submission(path: Path, scratch: Path, notes: list[str] | None = None) -> Path:
    """The directory holding the group folders of the submission at ``path``.

    ``scratch`` is a directory the grader owns, used to extract zips. ``notes``, when given, gets one
    line (escaped) for each file of the submission that will not be graded: a ``.py`` whose name is
    not a module name, a symlink, a file too large (see :func:`read_module_files`), for the report's
    warnings.
    """
    if not path.exists():
        raise SubmissionError(f"{_shown(path)}: no such file or directory")
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise SubmissionError(f"{_shown(path)}: not a directory and not a zip file")
        root = _find_root(extract_zip(path, scratch / "unzipped"), scratch, notes)
    else:
        root = _find_root(path, scratch, notes)
        if root is None:
            archive = _only_zip(path)
            if archive is not None:  # e.g. Gradescope's submission folder holding submission.zip
                root = _find_root(extract_zip(archive, scratch / "unzipped"), scratch, notes)
    if root is None:
        raise SubmissionError(
            f"{_shown(path)}: nothing that looks like a submission "
            f"(expected group folders such as {GROUPS[0]}/, an exercises/ folder holding them, "
            f"or the module files such as causal_mask.py)"
        )
    if notes is not None:
        notes.extend(intake_notes(root))
    return root


def _find_root(path: Path, scratch: Path, notes: list[str] | None) -> Path | None:
    root = find_exercises_root(path)
    if root is not None:
        return root
    flat = find_flat_root(path)
    return None if flat is None else regroup_flat(flat, scratch / "regrouped", notes)


def _only_zip(folder: Path) -> Path | None:
    """The one ``.zip`` (a regular file, not a link) directly in ``folder``, or None when it holds none;
    SubmissionError when it holds several (which one is the submission?)."""
    try:
        zips = sorted(entry for entry in folder.iterdir()
                      if entry.name.lower().endswith(".zip") and not entry.name.startswith(".")
                      and is_regular_file(entry))
    except OSError:
        return None
    if len(zips) > 1:
        names = ", ".join(escape_line(z.name) for z in zips[:5]) + (", ..." if len(zips) > 5 else "")
        raise SubmissionError(f"{_shown(folder)}: holds no exercises but {len(zips)} zip files ({names}): "
                              f"upload one")
    return zips[0] if zips else None


def _shown(path: Path) -> str:
    return escape_line(str(path))


def find_flat_root(path: Path) -> Path | None:
    """The shallowest directory under ``path`` holding at least one of the twelve module files
    (``<module>.py``, a regular file) directly, or None."""
    modules = load_rubric().module_groups
    frontier = [path]
    for _ in range(_SEARCH_DEPTH + 1):
        for candidate in frontier:
            if any(is_regular_file(candidate / f"{module}.py") for module in modules):
                return candidate
        frontier = [child for parent in frontier for child in _subdirs(parent)]
    return None


def regroup_flat(flat: Path, dest: Path, notes: list[str] | None = None) -> Path:
    """Copy the module files of the flat folder ``flat`` into ``dest/<group>/<module>.py`` (by the
    rubric's module names; regular files of at most 1 MB, never through a symlink); returns ``dest``.
    Only bytes are copied: nothing is imported or run. A module file left out gets a line in ``notes``."""
    dest.mkdir(parents=True, exist_ok=True)
    for group in GROUPS:
        (dest / group).mkdir(exist_ok=True)
    skipped: list[str] = []
    for module, group in load_rubric().module_groups.items():
        source = flat / f"{module}.py"
        data = _read_regular(source, source.name, skipped) if os.path.lexists(source) else None
        if data is not None:
            (dest / group / f"{module}.py").write_bytes(data)
    if notes is not None:
        notes.extend(skipped)
    return dest


def find_exercises_root(path: Path) -> Path | None:
    """The shallowest directory under ``path`` that holds at least one group folder."""
    frontier = [path]
    for _ in range(_SEARCH_DEPTH + 1):
        for candidate in frontier:
            if any(is_real_dir(candidate / group) for group in GROUPS):
                return candidate
        for candidate in frontier:
            if is_real_dir(candidate / "exercises") and any(
                is_real_dir(candidate / "exercises" / group) for group in GROUPS
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
                raise SubmissionError(f"{_shown(archive)}: more than {MAX_ZIP_MEMBERS} files in the zip")
            if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                raise SubmissionError(f"{_shown(archive)}: more than {MAX_ZIP_BYTES // 2**20} MB once unzipped")
            dest.mkdir(parents=True, exist_ok=True)
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts:
                    raise SubmissionError(f"{_shown(archive)}: unsafe path in the zip: {escape_line(repr(member.filename))}")
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
        raise SubmissionError(f"{_shown(archive)}: unreadable zip ({escape_line(_one_line(err))})") from None
    return dest


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


def read_module_files(source: Path, substitutes: Mapping[str, Path] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The regular ``*.py`` files (<= 1 MB, no symlinks) named like modules in the four group folders of
    ``source``, as ``{"<group>/<name>.py": bytes}``, and notes on what was skipped. Read once, here, by
    the grader: a domain gets these bytes, never a path into the submission.

    A ``.py`` whose name is not a module name (:data:`MODULE_FILE`) is left out with a note; so are
    the files past ``MAX_BUNDLE_FILES`` or ``MAX_BUNDLE_BYTES`` (the rubric's module files are read
    first). ``substitutes`` maps a module name to a stand-in file (tests/standins/) that replaces the
    student's.
    """
    files, group_notes, file_notes = _read_files(source, substitutes)
    return files, group_notes + file_notes


def intake_notes(root: Path) -> list[str]:
    """The notes of :func:`read_module_files` on the files of ``root`` left out (not those on missing
    group folders): what the report's warnings say was not graded."""
    return _read_files(root, None)[2]


def _read_files(source: Path, substitutes: Mapping[str, Path] | None) -> tuple[dict[str, bytes], list[str], list[str]]:
    files: dict[str, bytes] = {}
    notes: list[str] = []
    left_out: list[str] = []  # notes on single files, at most MAX_NOTES of them kept
    listed: list[tuple[str, str]] = []
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
            if not name.endswith(".py"):
                continue
            if MODULE_FILE.fullmatch(name):
                listed.append((group, name))
            else:
                left_out.append(f"{group}/{escape_line(name)}: left out (not a module name: "
                                f"letters, digits and _ only, not starting with a digit)")
    module_groups = load_rubric().module_groups
    listed.sort(key=lambda entry: module_groups.get(entry[1][:-3]) != entry[0])  # the rubric's first; stable
    total = 0
    for group, name in listed:
        rel = f"{group}/{name}"
        if len(files) >= MAX_BUNDLE_FILES:
            left_out.append(f"{rel}: left out (more than {MAX_BUNDLE_FILES} module files)")
            continue
        data = _read_regular(source / group / name, rel, left_out)
        if data is None:
            continue
        if total + len(data) > MAX_BUNDLE_BYTES:
            left_out.append(f"{rel}: left out (more than {MAX_BUNDLE_BYTES // 2**20} MB of module files)")
            continue
        files[rel] = data
        total += len(data)
    file_notes = left_out[:MAX_NOTES]
    if len(left_out) > MAX_NOTES:
        file_notes.append(f"... and {len(left_out) - MAX_NOTES} more files left out")
    for module, ref_file in (substitutes or {}).items():
        if module not in module_groups:
            raise ValueError(f"substitute for unknown module {module!r}")
        files[f"{module_groups[module]}/{module}.py"] = Path(ref_file).read_bytes()
    return files, notes, file_notes


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
    from grader.sandbox.kata_worker import codec  # imports torch: not before a grading needs it

    fd = os.memfd_create("kata-bundle", os.MFD_CLOEXEC)
    data = codec.encode(dict(files))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_NOT_SEARCHED = {"__MACOSX", "__pycache__"}  # macOS's resource forks ("._x.py") in a zip; bytecode


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(child for child in path.iterdir()
                      if is_real_dir(child) and not child.name.startswith(".") and child.name not in _NOT_SEARCHED)
    except OSError:
        return []
