"""Grades for an LMS: ``python -m grader export GRADES.csv --roster ROSTER.csv --to canvas|moodle|nbgrader --out FILE``.

The grades CSV (read through grader/classroom/grades_sheet.py: plain text) and the roster
(grader/classroom/student_roster.py: which folder is whose) become the file the LMS imports, written
with :func:`grader.classroom.grades_sheet.spreadsheet_text`, which escapes every cell once (a name a
spreadsheet would read as a formula keeps its leading apostrophe). Each format is the LMS's own,
as documented:

- ``canvas``: the Gradebook import CSV, the shape of Canvas's own gradebook export: ``Student``,
  ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per assignment,
  ``Name (assignment id)`` (a name without an id makes Canvas create the assignment), and a
  ``Points Possible`` row first. Canvas matches students by ``ID`` (the Canvas user id).
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-export-grades-in-the-Gradebook/ta-p/809
- ``moodle``: the assignment's offline grading worksheet ("Upload grading worksheet"):
  ``Identifier`` (``Participant <id>``, the participant id of Moodle's submission folders), ``Full
  name``, ``Email address``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified
  (grade)``. Moodle reads ``Identifier``, ``Grade`` and ``Last modified (grade)`` (a grade changed in
  Moodle after that time is not overwritten) and ignores the rest; no feedback column is written,
  since an empty one would clear the comments already in Moodle.
  https://docs.moodle.org/en/Assignment_settings#Feedback_types (Offline grading worksheet)
  https://github.com/moodle/moodle/blob/main/mod/assign/feedback/offline/importgradeslib.php
- ``nbgrader``: the student list ``nbgrader db student import`` reads: ``id``, ``first_name``,
  ``last_name``, ``email``; every roster row, graded or not.
  https://nbgrader.readthedocs.io/en/stable/command_line_tools/nbgrader-db-student-import.html
  https://nbgrader.readthedocs.io/en/stable/user_guide/managing_the_database.html

A folder that matches no roster row, and a roster row that no graded folder matches, are one line
each (the export goes on without them; ``--strict`` refuses instead); so is a student whose grading
failed (an error row: exported with its score, 0). The rows must share one
``max_score``: a CSV whose rows are out of different totals is refused, never exported mixed.
``--blind`` leaves names and e-mail addresses out of the file (the LMS matches students by id).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from grader.classroom.grades_sheet import CsvContent, SheetError, read_grades, spreadsheet_text
from grader.classroom.student_roster import Matching, RosterEntry, RosterError, match_students, read_roster
from grader.files import write_atomically
from grader.safe_text import printable

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed",
                  "Last modified (grade)"]
MOODLE_IDENTIFIER = "Participant {}"
NBGRADER_COLUMNS = ["id", "first_name", "last_name", "email"]
DEFAULT_ASSIGNMENT = "Attention kata"


class ExportError(Exception):
    """An export that cannot be written (one line for the instructor): nothing is written."""


@dataclass(frozen=True)
class ExportOptions:
    to: str
    assignment: str = DEFAULT_ASSIGNMENT  # Canvas's column name
    assignment_id: str = ""  # Canvas's assignment id (its column's "(id)")
    points: float | None = None  # scale every score to this many points (the LMS's assignment's total)
    blind: bool = False  # no names or e-mail addresses in the file
    strict: bool = False  # refuse when a folder or a roster row matched nothing
    now: datetime | None = None  # Moodle's "Last modified (grade)" (default: now)


@dataclass(frozen=True)
class Graded:
    """One student's grade as the LMS gets it."""

    entry: RosterEntry
    score: str
    max_score: str


def export(grades_csv: Path, roster_csv: Path, out: Path, options: ExportOptions) -> list[str]:
    """Write ``out`` in the format ``options.to`` (see the module docstring); the lines to tell the
    instructor (what matched nothing). ExportError: unusable input, nothing written."""
    if options.to not in FORMATS:
        raise ExportError(f"--to {printable(options.to)}: not one of {', '.join(FORMATS)}")
    content = _grade_rows(grades_csv)
    rows = content.rows
    try:
        roster = read_roster(roster_csv)
    except RosterError as err:
        raise ExportError(str(err)) from None
    matching = match_students(rows, roster)
    if not matching.matched and options.to != "nbgrader":  # (nbgrader's file is the roster's students alone)
        raise ExportError(f"{grades_csv}: no student of it matches a row of {roster_csv} ({matching.lines[0]}): "
                          "nothing to export; see docs/class-grading.md, The roster")
    if options.strict and not matching.complete:
        raise ExportError(f"--strict: {len(matching.lines)} submissions or roster rows did not match; first: "
                          f"{matching.lines[0]}")
    graded = _graded(rows, matching, options)
    columns, table = FORMATS[options.to](graded, roster, options)
    write_atomically(Path(out), spreadsheet_text(columns, table), new_mode=0o600)  # names and grades: private
    failed = [f"the grading of {printable(folder)} failed: exported with its score, {rows[folder]['score']}"
              for folder in matching.matched if rows[folder]["status"] != "graded"]
    return [*content.warnings, *matching.lines, *failed]


def _grade_rows(grades_csv: Path) -> CsvContent:
    if not Path(grades_csv).is_file():
        raise ExportError(f"{grades_csv}: no such file")
    try:
        content = read_grades(Path(grades_csv))
    except SheetError:
        raise ExportError(f"{grades_csv}: not a grades CSV of score-all with this rubric's columns") from None
    if not content.rows:
        raise ExportError(f"{grades_csv}: no grades in it")
    totals = sorted({row["max_score"] for row in content.rows.values()})
    if len(totals) > 1:
        raise ExportError(f"{grades_csv}: rows out of different totals ({', '.join(totals)}): grade them alike first")
    return content


def _graded(rows: dict[str, dict[str, str]], matching: Matching, options: ExportOptions) -> list[Graded]:
    graded = []
    for folder, entry in matching.matched.items():
        score, max_score = float(rows[folder]["score"]), float(rows[folder]["max_score"])
        if options.points is not None:
            score, max_score = (score * options.points / max_score if max_score else 0.0), options.points
        graded.append(Graded(entry, _number(score), _number(max_score)))
    return sorted(graded, key=lambda g: (g.entry.name, g.entry.id))


def _number(value: float) -> str:
    return f"{round(value, 2):g}"


# --- the formats: (graded students, roster, options) -> (columns, rows) --------------------------------


def canvas(graded: list[Graded], roster: list[RosterEntry], options: ExportOptions) -> tuple[list[str], list[dict]]:
    column = f"{options.assignment} ({options.assignment_id})" if options.assignment_id else options.assignment
    total = graded[0].max_score if graded else ""
    rows = [{**dict.fromkeys(CANVAS_COLUMNS, ""), "Student": CANVAS_POINTS_ROW, column: total}]
    for g in graded:
        e = g.entry
        rows.append({"Student": "" if options.blind else e.name, "ID": e.id, "SIS User ID": e.sis_user_id,
                     "SIS Login ID": e.sis_login_id, "Section": e.section, column: g.score})
    return [*CANVAS_COLUMNS, column], rows


def moodle(graded: list[Graded], roster: list[RosterEntry], options: ExportOptions) -> tuple[list[str], list[dict]]:
    stamp = (options.now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    rows = [{"Identifier": MOODLE_IDENTIFIER.format(g.entry.id), "Full name": "" if options.blind else g.entry.name,
             "Email address": "" if options.blind else g.entry.email, "Grade": g.score, "Maximum Grade": g.max_score,
             "Grade can be changed": "Yes", "Last modified (grade)": stamp} for g in graded]
    return MOODLE_COLUMNS, rows


def nbgrader(graded: list[Graded], roster: list[RosterEntry], options: ExportOptions) -> tuple[list[str], list[dict]]:
    rows = []
    for entry in roster:
        first, last = ("", "") if options.blind else entry.names()
        rows.append({"id": entry.id, "first_name": first, "last_name": last,
                     "email": "" if options.blind else entry.email})
    return NBGRADER_COLUMNS, rows


FORMATS: dict[str, Callable[[list[Graded], list[RosterEntry], ExportOptions], tuple[list[str], list[dict]]]] = {
    "canvas": canvas, "moodle": moodle, "nbgrader": nbgrader,
}
