"""The bundle: the files a domain gets, the sandbox's one input from a submission.

A bundle is ``{"<group>/<name>.py": bytes}`` for the group folders of the rubric, read once by the
grader (:func:`read_module_files`) and handed to the domain in a memfd (:func:`bundle_fd`): a domain
gets these bytes, never a path into the submission, and the grader never writes into anything a domain
can reach. The domain checks every entry against the group list and the :data:`MODULE_FILE` rule that
its spawn spec carries (kata_worker/domain.py: ``read_bundle``) and refuses the whole bundle otherwise,
so only files named like a module go in; another ``.py`` of a group folder (``self_attention-old.py``,
``x copy.py``) is left out with a note, so a stray file costs nothing. Notes name files escaped
(grader.safe_text): a name may hold control characters.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from grader.files import UnreadableFile, read_regular
from grader.rubric import GROUPS, load_rubric
from grader.safe_text import escape_line

# A file a domain accepts in its bundle (the whole name: fullmatch), at most 103 characters.
MODULE_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\.py")
MAX_FILE_BYTES = 2**20  # a module file larger than this is not copied
# What a bundle holds at most (the rubric's module files first): well inside the codec's limits on one
# frame (64 MB, MAX_VALUES items), so stray files cannot make the bundle undecodable.
MAX_BUNDLE_FILES = 1000
MAX_BUNDLE_BYTES = 48 * 2**20
MAX_NOTES = 20  # notes on left-out files, then one line counting the rest


def read_module_files(source: Path, substitutes: Mapping[str, Path] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The bundle of the submission whose group folders are in ``source``: its regular ``*.py`` files
    (<= 1 MB, no symlinks) named like modules, and notes on what was skipped.

    A ``.py`` whose name is not a module name (:data:`MODULE_FILE`) is left out with a note; so are
    the files past ``MAX_BUNDLE_FILES`` or ``MAX_BUNDLE_BYTES`` (the rubric's module files are read
    first). ``substitutes`` maps a module name to a stand-in file (tests/standins/) that replaces the
    student's.
    """
    files, group_notes, file_notes = _read_files(source, substitutes)
    return files, group_notes + file_notes


def left_out_notes(root: Path) -> list[str]:
    """The notes of :func:`read_module_files` on the files of ``root`` left out (not those on missing
    group folders): what the report's warnings say was not graded."""
    return _read_files(root, None)[2]


def _listed(source: Path, notes: list[str], left_out: list[str]) -> list[tuple[str, str]]:
    """(group, file name) of the module files in ``source``'s group folders, the rubric's first."""
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
    return sorted(listed, key=lambda entry: module_groups.get(entry[1][:-3]) != entry[0])  # stable


def _read_files(source: Path, substitutes: Mapping[str, Path] | None) -> tuple[dict[str, bytes], list[str], list[str]]:
    files: dict[str, bytes] = {}
    notes: list[str] = []
    left_out: list[str] = []  # notes on single files, at most MAX_NOTES of them kept
    total = 0
    for group, name in _listed(source, notes, left_out):
        rel = f"{group}/{name}"
        if len(files) >= MAX_BUNDLE_FILES:
            left_out.append(f"{rel}: left out (more than {MAX_BUNDLE_FILES} module files)")
            continue
        data = read_module_file(source / group / name, rel, left_out)
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
    module_groups = load_rubric().module_groups
    for module, ref_file in (substitutes or {}).items():
        if module not in module_groups:
            raise ValueError(f"substitute for unknown module {module!r}")
        files[f"{module_groups[module]}/{module}.py"] = Path(ref_file).read_bytes()
    return files, notes, file_notes


def read_module_file(path: Path, rel: str, notes: list[str]) -> bytes | None:
    """The bytes of the module file at ``path`` (a regular file of at most MAX_FILE_BYTES, never
    through a symlink), or None with a note on ``rel`` in ``notes``."""
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
