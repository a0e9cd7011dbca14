"""Submission intake: turn what the instructor points at into a directory of the group folders.

Accepted: a directory laid out like ``exercises/``, a repository root that contains ``exercises/``,
a flat folder of the module files (``causal_mask.py``, ... with no group folders: how Gradescope
receives files dragged in one by one), a ``.zip`` of any of these (possibly wrapped in one top
folder), or a folder holding nothing gradable but one such ``.zip`` (Gradescope's submission folder
when the student uploaded ``submission.zip``; other files beside it, ``__MACOSX/`` say, are ignored).
A flat submission's module files are copied into group folders in the grader's scratch directory,
placed by the rubric's module names; its other files are left out. A submission that is one script
holding the kata's names (``chapter3_attention.py``) is split by its top-level definitions into the
modules it holds (grader/grading/script_split.py), and one that is none of these is refused with what
was found. Nothing here imports or runs the
student's code, and nothing writes into the student's files: a zip is extracted into the grader's
own temporary directory, with every member checked first.

What a domain then gets of the submission, and what is left out, is the bundle's to say
(grader/sandbox/bundle.py). Notes name files escaped (grader.safe_text): a name may hold control characters.
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from grader.files import is_real_dir, is_regular_file
from grader.grading import script_split
from grader.rubric import GROUPS, load_rubric
from grader.safe_text import escape_line
from grader.sandbox.bundle import left_out_notes, read_module_file

MAX_ZIP_MEMBERS = 5000
MAX_ZIP_BYTES = 100 * 2**20
MAX_SCRIPTS = 20  # .py files read and parsed when looking for one script that holds the kata
_SEARCH_DEPTH = 3


class SubmissionError(Exception):
    """The input cannot be graded at all; the message is one line for the instructor."""


def locate_submission(path: Path, scratch: Path, notes: list[str] | None = None) -> Path:
    """The directory holding the group folders of the submission at ``path``.

    ``scratch`` is a directory the grader owns, used to extract zips. ``notes``, when given, gets one
    line (escaped) for each file of the submission that will not be graded: a ``.py`` whose name is
    not a module name, a symlink, a file too large (grader.sandbox.bundle.read_module_files), for the report's
    warnings.
    """
    if not path.exists():
        raise SubmissionError(f"{_shown(path)}: no such file or directory")
    searched = path
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise SubmissionError(f"{_shown(path)}: not a directory and not a zip file")
        searched = extract_zip(path, scratch / "unzipped")
        root = _find_root(searched, scratch, notes)
    else:
        root = _find_root(path, scratch, notes)
        if root is None:
            archive = _only_zip(path)
            if archive is not None:  # e.g. Gradescope's submission folder holding submission.zip
                searched = extract_zip(archive, scratch / "unzipped")
                root = _find_root(searched, scratch, notes)
    if root is None:
        root, found = _split_script(searched, scratch / "split", notes)
    if root is None:
        raise SubmissionError(
            f"{_shown(path)}: nothing that looks like a submission "
            f"(expected group folders such as {GROUPS[0]}/, an exercises/ folder holding them, the module "
            f"files such as causal_mask.py, or one script defining the kata's names); found {found}")
    if notes is not None:
        notes.extend(left_out_notes(root))
    return root


def _find_root(path: Path, scratch: Path, notes: list[str] | None) -> Path | None:
    root = find_exercises_root(path)
    if root is not None:
        return root
    flat = find_flat_root(path)
    return None if flat is None else regroup_flat(flat, scratch / "regrouped", notes)


def _split_script(folder: Path, dest: Path, notes: list[str] | None) -> tuple[Path | None, str]:
    """The scripts under ``folder`` that define the kata's public names, split into module files under
    ``dest`` (grader/grading/script_split.py); else None and what was found, in words."""
    scripts, why, others = [], [], []
    frontier, budget = [folder], MAX_SCRIPTS
    for _ in range(_SEARCH_DEPTH + 1):
        for candidate in frontier:
            for entry in _files(candidate):
                shown = str(entry.relative_to(folder))
                budget -= entry.suffix == ".py"
                data = read_module_file(entry, shown, why) if entry.suffix == ".py" and budget >= 0 else None
                parsed = script_split.parse_script(shown, data) if data is not None else None
                if isinstance(parsed, str):
                    why.append(parsed)
                elif parsed is not None and script_split.defines_kata_names(parsed):
                    scripts.append(parsed)
                elif len(others) < 6:
                    others.append(escape_line(shown) + (" (defines none of the kata's names)"
                                                        if parsed is not None else ""))
        frontier = [child for parent in frontier for child in _subdirs(parent)]
    if not scripts:
        found = "; ".join(why[:3] + others[:5]) + ("; ..." if len(why) > 3 or len(others) > 5 else "")
        return None, found or "no file at all"
    written = script_split.split_scripts(scripts, dest, notes if notes is not None else [])
    for group in GROUPS:
        (dest / group).mkdir(parents=True, exist_ok=True)
    return (dest, "") if written else (None, "no module")


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(entry for entry in folder.iterdir() if not entry.name.startswith(".") and is_regular_file(entry))
    except OSError:
        return []


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
    """The shallowest directory under ``path`` holding at least one of the kata's module files
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
        data = read_module_file(source, source.name, skipped) if os.path.lexists(source) else None
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
        raise SubmissionError(f"{_shown(archive)}: unreadable zip ({escape_line(one_line(err))})") from None
    return dest


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


_NOT_SEARCHED = {"__MACOSX", "__pycache__"}  # macOS's resource forks ("._x.py") in a zip; bytecode


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(child for child in path.iterdir()
                      if is_real_dir(child) and not child.name.startswith(".") and child.name not in _NOT_SEARCHED)
    except OSError:
        return []
