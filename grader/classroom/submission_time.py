"""When a student submitted, from where it lives, for the late policy (grader/classroom/late_policy.py).

:func:`submission_time` tries, in this order, and says which it used:

1. ``timestamp.txt`` in the submission folder: what ``nbgrader submit`` writes (and ``nbgrader collect``
   copies), ``2026-03-02 16:29:00.123456 UTC``; a time without a zone is taken as UTC, as nbgrader does;
2. the commit time of the folder's git repository (a GitHub Classroom clone): ``git log -1 --format=%cI``
   run with a time limit, with no pager, no hooks, no fsmonitor, no signature check, no system or
   global configuration, ``GIT_DIR`` given (git never walks up to a repository outside the submission):
   the repository is the student's, and nothing in its configuration runs. A ``.git`` that is a link
   or a file (``gitdir:`` pointing elsewhere) is not read;
3. the newest modification time of the submission's regular files (a zip: the zip file's own), never
   following a link out of the submission. The weakest: a download or a copy resets it.

A commit time and a file time are set on the student's machine: they can be forged. Where the class's
deadline matters, the LMS's (or nbgrader exchange's) own record is the one to trust; these say what the
submission itself claims. None of them runs the student's code.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Collection

from grader.classroom.late_policy import LatePolicy
from grader.classroom.roster import list_students
from grader.files import UnreadableFile, read_regular
from grader.safe_text import printable

GIT_TIMEOUT = 10.0  # seconds for `git log` on one repository
SOURCES = ("timestamp.txt", "git commit", "file time")
ALL_LATE = 3  # from this many students timed by their files, all of them late is worth a line of its own


@dataclass(frozen=True)
class SubmissionTime:
    when: datetime  # aware
    source: str  # one of SOURCES


def submission_time(path: Path) -> SubmissionTime | None:
    """When the submission at ``path`` (a folder or a zip) was made, from the first source that has it
    (see the module docstring); None when none has (an empty folder)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        for source, read in (("timestamp.txt", _timestamp_file), ("git commit", _git_commit_time)):
            when = read(path)
            if when is not None:
                return SubmissionTime(when, source)
    when = _newest_file_time(path)
    return SubmissionTime(when, "file time") if when is not None else None


def submission_times(folder: Path, policy: LatePolicy | None, warnings: list[str],
                     students: Collection[str] | None = None) -> dict[str, datetime]:
    """The submission time of every student of ``folder`` (grader.classroom.roster's; those of ``students``
    alone when given: a shard's), when a late ``policy`` is given (None: none read); ``warnings`` gets a line
    naming the students whose time is a file's (the weakest source) and those with none."""
    if policy is None:
        return {}
    times, weakest, unknown = {}, [], []
    everyone = list_students(folder)[0]
    strangers = sorted(set(policy.extensions) - set(everyone))
    if strangers:  # a misspelt name would leave its student penalized, silently
        warnings.append(f"late policy: no submission in {printable(str(folder))} for the extension of "
                        f"{_names(strangers)} (extensions name students as the CSV's student column does)")
    for name, path in sorted(everyone.items()):
        if students is not None and name not in students:
            continue
        found = submission_time(path)
        if found is None:
            unknown.append(name)
            continue
        times[name] = found.when
        if found.source == "file time":
            weakest.append(name)
    if weakest:
        warnings.append(f"late policy: the submission time of {_names(weakest)} is their files' newest modification "
                        "time (no timestamp.txt, no git commit): a copy or a download changes it")
        if len(weakest) >= ALL_LATE and all(times[name] > policy.due_of(name) for name in weakest):
            warnings.append(f"late policy: all {len(weakest)} students timed by their files are past the due date: "
                            "those may be the times of a download or a copy; check the late list before exporting")
    if unknown:
        warnings.append(f"late policy: no submission time for {_names(unknown)}: no late penalty for them")
    return times


def _names(names: list[str]) -> str:
    return ", ".join(printable(name) for name in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def parse_timestamp(text: str) -> datetime | None:
    """nbgrader's timestamp (``2026-03-02 16:29:00.123456 UTC``, or ISO 8601); naive: UTC."""
    text = text.strip()
    if text.endswith(" UTC"):
        text = text[:-4] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _timestamp_file(folder: Path) -> datetime | None:
    try:
        return parse_timestamp(read_regular(folder / "timestamp.txt", 4095).decode("utf-8", "replace"))
    except UnreadableFile:
        return None


def _git_commit_time(folder: Path) -> datetime | None:
    folder = folder.absolute()  # git runs in the folder: a relative GIT_DIR (score-all class/) would miss it
    git_dir = folder / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(folder),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
           "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1", "HOME": os.devnull}
    safe = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false",
            "-c", "gpg.program=false", "-c", "core.pager=cat", "-c", f"safe.directory={folder}"]
    try:
        done = subprocess.run(["git", "--no-pager", *safe, "log", "-1", "--no-show-signature", "--format=%cI"],
                              env=env, cwd=folder, capture_output=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return parse_timestamp(done.stdout.decode("ascii", "replace"))


def _newest_file_time(path: Path) -> datetime | None:
    """The newest modification time of the regular files under ``path`` (a zip: its own), links not followed."""
    try:
        if path.is_symlink():
            return None
        if path.is_file():
            return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    except OSError:
        return None
    newest = None
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):  # lstat: a link is not a regular file
                newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
    return datetime.fromtimestamp(newest, timezone.utc) if newest is not None else None
