"""The class roster: who each submission folder belongs to, by the LMS's own ids and names.

score-all names a student after their submission's folder (grader/classroom/roster.py), and an LMS
names those folders its own way. The instructor's roster (``--roster ROSTER.csv``) says who the
students are; this module reads it (:func:`read_roster`) and matches folders to its rows
(:func:`match_students`), recognizing the folder names the LMSs write:

- Moodle's "Download all submissions" (in folders): ``Full Name_<participant id>_assignsubmission_file_``
  (and ``..._onlinetext_``; with blind marking ``Participant_<id>_...``): the participant id is the
  roster's ``id`` (Moodle's grading worksheet knows the student by it: ``Participant <id>``);
- Canvas's "Download Submissions": ``<lastfirst>[_late]_<user id>_<submission id>_<file name>``
  (a zip unpacked to a folder of that name, or the zip itself): the Canvas user id is the roster's ``id``
  (the ``ID`` column of Canvas's gradebook);
- GitHub Classroom's repositories: ``<assignment>-<login>``: the GitHub login is the roster's ``login``;
- ``grader nbgrader``'s rows, ``<assignment>__<student id>`` (``kata-grading/<assignment>/grades.csv``): the
  nbgrader student id is the roster's ``id``;
- else a folder named exactly as a roster row's ``id`` or ``login`` (nbgrader's student ids), or named
  by the row's own ``folder`` (a name, or a glob pattern such as ``*-jdoe``), which wins over the rest.

The names around an LMS's id can be the student's own text (a display name, a file's name): every
place an id could stand is a candidate (:func:`lms_ids`), and a folder whose candidates are two roster
rows is matched to neither, so that no one can make their work another's.

The roster's columns (a header row; names matched without case, ``_`` read as a space; a UTF-8 BOM
ignored), so that the LMS's own export serves as a roster as it is:

====================  ================================================================================
``id``                required: the LMS's id (Canvas ``ID``, Moodle participant id, nbgrader id);
                      also read from ``student id``, ``user id``, ``participant id``, or Moodle's
                      ``identifier`` (``Participant 123``)
``name``              the full name (``full name``, ``student``, ``student name``)
``first_name``,       optional; split from ``name`` when absent (``Doe, Jane`` or ``Jane Doe``)
``last_name``
``email``             optional (``email address``)
``login``             GitHub login (``github``, ``github_username``: GitHub Classroom's roster, ``username``)
``sis_user_id``,      Canvas's SIS ids and section (optional)
``sis_login_id``,
``section``
``folder``            optional: the submission folder's name, or a glob pattern (``pattern``)
====================  ================================================================================

A row with no id (Canvas's "Points Possible" row) is skipped. Names are untrusted text: a report line
shows them through :func:`grader.safe_text.printable`.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterable

from grader.classroom.grades_sheet import SheetError, read_spreadsheet
from grader.classroom.nbgrader_course import SEPARATOR
from grader.rubric import GROUPS
from grader.safe_text import printable

# Where an id can stand in a download's name: Moodle's "_<id>_assignsubmission_file_", Canvas's
# "_<user id>_<submission id>_<file name>" (after "_late", if late). Every place is a candidate: the name
# before it and the file name after it can be the student's own text.
LMS_IDS = (("Moodle", re.compile(r"_(?=(\d+)_assignsubmission_(?:file|onlinetext)_)")),
           ("Canvas", re.compile(r"_(?=(\d+)_\d+_.)", re.S)))
# Header spellings -> the field they fill (lower case, "_" as a space).
COLUMN_ALIASES = {
    "id": "id", "student id": "id", "user id": "id", "participant id": "id", "identifier": "id",
    "name": "name", "full name": "name", "student": "name", "student name": "name",
    "first name": "first_name", "last name": "last_name", "email": "email", "email address": "email",
    "login": "login", "github": "login", "github login": "login", "github username": "login", "username": "login",
    "sis user id": "sis_user_id", "sis login id": "sis_login_id", "section": "section",
    "folder": "folder", "pattern": "folder",
}
MOODLE_IDENTIFIER = re.compile(r"^Participant (\d+)$")


class RosterError(Exception):
    """A roster that cannot be used (one line for the instructor)."""


@dataclass(frozen=True)
class RosterEntry:
    """One student of the roster: plain text, as the instructor's file holds it."""

    id: str
    name: str = ""
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    login: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    folder: str = ""

    def names(self) -> tuple[str, str]:
        """(first name, last name): the roster's own, else split from ``name``."""
        if self.first_name or self.last_name:
            return self.first_name, self.last_name
        if "," in self.name:
            last, first = self.name.split(",", 1)
            return first.strip(), last.strip()
        first, _, last = self.name.strip().rpartition(" ")
        return (first, last) if first else (last, "")

    def shown(self) -> str:
        return printable(f"{self.id} ({self.name})" if self.name else self.id)


def read_roster(path: Path) -> list[RosterEntry]:
    """The roster's rows (see the module docstring). RosterError: no such file, not a CSV, no id column,
    an id or a login (without case) given twice."""
    try:
        records = read_spreadsheet(path, "--roster")
    except SheetError as err:
        raise RosterError(str(err)) from None
    if not records:
        raise RosterError(f"--roster {path}: empty")
    columns = [COLUMN_ALIASES.get(" ".join(cell.strip().lower().replace("_", " ").split()), "") for cell in records[0]]
    if "id" not in columns:
        raise RosterError(f"--roster {path}: no id column (one of: id, student id, user id, participant id, identifier)")
    entries: list[RosterEntry] = []
    seen: set[str] = set()
    known = {f.name for f in fields(RosterEntry)}
    for record in records[1:]:
        values = {col: cell.strip() for col, cell in zip(columns, record) if col in known}
        student_id = MOODLE_IDENTIFIER.sub(r"\1", values.get("id", ""))
        if not student_id:
            continue  # a blank line, Canvas's "Points Possible" row
        login = "login:" + values.get("login", "").lower()
        for key, what in ((student_id, "id"), (login, "login")):
            if key in seen:
                raise RosterError(f"--roster {path}: {what} {printable(key.removeprefix('login:'))} is given twice")
        seen.update((student_id, login) if values.get("login") else (student_id,))
        entries.append(RosterEntry(**{**values, "id": student_id}))
    return entries


def lms_ids(folder: str) -> tuple[str, list[str]] | None:
    """(the LMS, the ids the folder's name could hold) if it is one of Moodle's or Canvas's download names
    (see the module docstring); None otherwise. More than one id: the student's own text (their name,
    their file's name) holds something that looks like one; the roster decides."""
    for lms, pattern in LMS_IDS:
        ids = list(dict.fromkeys(found[1] for found in pattern.finditer(folder) if found.start() > 0))
        if ids:
            return lms, ids
    return None


@dataclass
class Matching:
    """Which roster row each submission folder belongs to, and what matched nothing."""

    matched: dict[str, RosterEntry] = field(default_factory=dict)  # folder -> its student
    unmatched_folders: list[str] = field(default_factory=list)
    unmatched_entries: list[RosterEntry] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # one line per folder or row that matched nothing, or twice

    @property
    def complete(self) -> bool:
        return not (self.unmatched_folders or self.unmatched_entries or self.lines)


def match_students(folders: Iterable[str], roster: list[RosterEntry]) -> Matching:
    """Match each submission folder to its roster row (see the module docstring). A folder that matches
    no row, a row no folder matches, and a row two folders match (neither is kept: which one is the
    student's is the instructor's call) are each one line in ``lines``."""
    by_id = {entry.id: entry for entry in roster}
    by_login = {entry.login.lower(): entry for entry in roster if entry.login}
    result = Matching()
    owner: dict[str, str] = {}  # roster id -> the folder matched to it
    for folder in sorted(folders):
        entry, why = _entry_for(folder, roster, by_id, by_login)
        if entry is None:
            result.unmatched_folders.append(folder)
            result.lines.append(f"no roster row for submission {printable(folder)}{why}")
        elif entry.id in owner:
            result.lines.append(f"submissions {printable(owner[entry.id])} and {printable(folder)} both belong to "
                                f"{entry.shown()}: neither is used (name the right one in the roster's folder column)")
            result.matched.pop(owner[entry.id], None)
        else:
            owner[entry.id] = folder
            result.matched[folder] = entry
    for entry in roster:
        if entry.id not in owner:
            result.unmatched_entries.append(entry)
            result.lines.append(f"no submission for roster row {entry.shown()}")
    return result


def _entry_for(folder: str, roster: list[RosterEntry], by_id: dict[str, RosterEntry],
               by_login: dict[str, RosterEntry]) -> tuple[RosterEntry | None, str]:
    """The roster row of ``folder``, or None and why (for the line that says so)."""
    for entry in roster:
        if entry.folder and (entry.folder == folder or fnmatch.fnmatchcase(folder, entry.folder)):
            return entry, ""
    found = lms_ids(folder)
    if found is not None:
        lms, ids = found
        listed = [by_id[student_id] for student_id in ids if student_id in by_id]
        if len(listed) == 1:
            return listed[0], ""
        if listed:  # a name made to look like another student's download: neither, and say so
            return None, f" (a {lms} download that could be {' or '.join(e.shown() for e in listed)})"
        return None, f" (a {lms} download of id {printable(ids[0])}, which the roster does not list)"
    assignment, separator, student_id = folder.partition(SEPARATOR)
    if separator and assignment in GROUPS and student_id in by_id:  # grader nbgrader's <assignment>__<student id>
        return by_id[student_id], ""
    if folder in by_id:
        return by_id[folder], ""
    lowered = folder.lower()
    if lowered in by_login:
        return by_login[lowered], ""
    logins = [login for login in by_login if lowered.endswith("-" + login)]
    if logins:  # GitHub Classroom: <assignment>-<login>; the longest login that fits
        return by_login[max(logins, key=len)], ""
    return None, ""
