"""The grades sheet: score-all's CSV, one row per student, and the JSON reports named after its students.

The contract every reader and writer of the CSV shares (score-all and its resume, merge, the gradebook,
the nbgrader course, the class-level outputs), in this one module:

- the columns (:func:`csv_columns`): ``student``, ``score``, ``max_score``, one per exercise of the
  rubric, ``gpu_check``, ``status`` (one of :data:`STATUSES`), ``message``, ``review`` (the report's lines
  "for review": what could hide operations from the from-scratch rule's trace), ``submitted_at``,
  ``late_by`` and ``late_penalty`` (when the student submitted, how many hours late, the points the late
  policy took from ``score``: grader/classroom/late_policy.py; empty without a policy), ``submission_sha256``,
  ``graded_by`` and ``graded_at`` (what graded the row, a short hash of its provenance key, and when:
  grader/classroom/provenance.py), ``overrides`` (what the instructor's overrides changed in the row: grader/classroom/overrides.py),
  ``flags`` (who needs a look, and why: grader/classroom/flags.py);
- a row in memory holds each cell's plain text (a student's name as they chose it, a message as it was
  raised); the file holds it escaped: text that a spreadsheet would run as a formula gets a leading
  apostrophe (:func:`csv_cell`). Escaping happens here alone, once, as a row is written
  (:func:`spreadsheet_text`, :func:`append_grade`), and is taken off here alone as it is read back, so
  no caller sees an escaped cell or escapes one;
- a row from a job's result (:func:`csv_row`), the rows read back (:func:`read_grades`: a last row
  cut short dropped, a malformed row dropped with a warning) and written (:func:`write_grades`:
  sorted by student name, atomically);
- what a class-level output is handed (:class:`ClassSheet`, :func:`read_class`;
  grader/classroom/class_outputs.py runs them) and writes a spreadsheet with (:func:`spreadsheet_text`);
- ``--json-dir``'s layout: ``<student>.json`` for a student whose name is a plain file name
  (:func:`json_path`).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Mapping

from grader.files import write_atomically
from grader.grading.options import GradeOptions
from grader.rubric import load_rubric
from grader.safe_text import printable

HASH_COLUMN = "submission_sha256"
REVIEW_COLUMN = "review"
# What graded a row (grader/classroom/provenance.py): its key's short hash, and when (UTC).
GRADED_BY_COLUMN, GRADED_AT_COLUMN = "graded_by", "graded_at"
PROVENANCE_COLUMNS = (GRADED_BY_COLUMN, GRADED_AT_COLUMN)
# Who needs a look, and why (grader/classroom/flags.py): written with the final grades, at the end of a run.
FLAGS_COLUMN = "flags"
# When a student submitted and what the late policy took (grader/classroom/late_policy.py): empty without one.
SUBMITTED_AT_COLUMN, LATE_BY_COLUMN, LATE_PENALTY_COLUMN = "submitted_at", "late_by", "late_penalty"
LATE_COLUMNS = (SUBMITTED_AT_COLUMN, LATE_BY_COLUMN, LATE_PENALTY_COLUMN)
OVERRIDES_COLUMN = "overrides"  # written by grader/classroom/overrides.py alone; empty in a graded row
STATUSES = ("graded", "error")
# What a spreadsheet reads as the start of a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class SheetError(Exception):
    """A file that is not a score-all CSV of this rubric (one line for the instructor): it is neither
    read nor overwritten."""


def csv_columns() -> list[str]:
    return ["student", "score", "max_score", *load_rubric().exercises, "gpu_check", "status", "message", REVIEW_COLUMN,
            *LATE_COLUMNS, HASH_COLUMN, *PROVENANCE_COLUMNS, OVERRIDES_COLUMN, FLAGS_COLUMN]


def csv_cell(value: Any) -> Any:
    """A value safe in a spreadsheet: text that would start a formula (``=2+5``, ``+``, ``-``, ``@``,
    a tab or carriage return) gets a leading apostrophe, as OWASP recommends for CSV injection; so does
    text that starts with an apostrophe, so that reading it back (:func:`unescaped`) gives it exactly."""
    if isinstance(value, str) and value[:1] in (*FORMULA_STARTS, "'"):
        return "'" + value
    return value


def unescaped(cell: str) -> str:
    """A cell's text as it was before :func:`csv_cell` (the instructor's files typed in a spreadsheet, as
    the overrides file, take the same apostrophe off: ``'+2``)."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in (*FORMULA_STARTS, "'") else cell


def csv_row(student: str, result: dict[str, Any], sha256: str = "",
            grading: GradeOptions = GradeOptions()) -> dict[str, str]:
    """A CSV row from a job's result: a JSON report, or an error, every cell as plain text (the writers
    escape it). An error row's max_score is what a graded row's would be
    under ``grading``: its exercises (the rubric's, or ``grading.exercises``) and the GPU-run check
    unless ``--gpu skip``. The cells of exercises a row was not graded on stay empty."""
    row = _csv_row(student, result, grading)
    row[HASH_COLUMN] = sha256
    return {column: str(value) for column, value in row.items()}


def _csv_row(student: str, result: dict[str, Any], grading: GradeOptions) -> dict[str, Any]:
    row: dict[str, Any] = {column: "" for column in csv_columns()}
    row["student"] = student
    report = result.get("report")
    if report is None:
        rubric = load_rubric()
        exercises = list(rubric.exercises) if grading.exercises is None else list(grading.exercises)
        gpu_points = 0 if grading.gpu == "skip" else rubric.gpu_points
        max_score = sum(rubric.exercises[ex_id].points for ex_id in exercises) + gpu_points
        row.update(score=0, max_score=max_score, status="error", message=result.get("error", "unknown error"))
        for ex_id in exercises:
            row[ex_id] = 0
        row["gpu_check"] = 0
        return row
    row.update(score=report["score"], max_score=report["max_score"], status="graded",
               message="; ".join(report.get("warnings", [])))
    row[REVIEW_COLUMN] = "; ".join(report.get("review", []))
    for ex_id, ex in report["exercises"].items():
        row[ex_id] = ex["score"]
    row["gpu_check"] = report["gpu_check"]["score"]
    return row


@dataclass
class CsvContent:
    """The rows of a score-all CSV, by student name, each cell as plain text (its escape taken off)."""

    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    truncated: str | None = None  # the student whose last row was cut short, if any


def read_grades(csv_path: Path) -> CsvContent:
    """Read a score-all CSV (none: empty). A last row without its line end (a write cut short) is
    dropped; a row that is not one of ours (wrong number of cells, unknown status, no hash) is
    dropped with a warning, so that student is graded again (a row whose ``graded_by`` is not this
    run's key is the resume's to judge: grader/classroom/score_all.py). SheetError: the file is not a
    score-all CSV of this version (another header; one line saying how to go on, for a CSV of a
    grader that wrote no provenance columns)."""
    content = CsvContent()
    if not csv_path.is_file():
        return content
    text = csv_path.read_bytes().decode("utf-8", "replace")
    header = ",".join(csv_columns())
    first_line = text.split("\n", 1)[0].rstrip("\r")
    if not text.strip() or (header.startswith(first_line) and "\n" not in text):
        return content  # empty, or killed while writing the header
    if first_line != header:
        theirs, ours = first_line.split(","), csv_columns()
        missing = [c for c in ours if c not in theirs]
        if missing and [c for c in ours if c in theirs] == theirs:  # ours, less the columns added since
            raise SheetError(f"{csv_path} was written by an older grader, without the columns {', '.join(missing)}: "
                             "grade the class again into it with score-all --force, or move it away")
        raise SheetError(f"{csv_path} exists and is not a score-all CSV with this rubric's columns "
                         f"(its header differs): move it away, or use --force to overwrite it")
    try:
        records = list(csv.reader(io.StringIO(text.split("\n", 1)[1], newline="")))
    except csv.Error as err:
        raise SheetError(f"{csv_path}: unreadable as CSV ({err}): move it away, or use --force to overwrite it") from None
    complete = text.endswith("\n")
    columns = csv_columns()
    for i, record in enumerate(records):
        last = i == len(records) - 1
        record = [unescaped(cell) for cell in record]
        name = record[0] if record else ""
        if last and not complete:
            content.truncated = name
            content.warnings.append(f"{csv_path}: the last row ({printable(name)!s}) was cut short: "
                                    "that student is graded again")
            continue
        row = dict(zip(columns, record))
        if len(record) != len(columns) or row["status"] not in STATUSES or not _HEX64.fullmatch(row[HASH_COLUMN]):
            content.warnings.append(f"{csv_path}: dropped a malformed row ({printable(name) or 'no name'}): "
                                    "that student is graded again")
            continue
        content.rows.pop(name, None)
        content.rows[name] = row  # a later row of the same student wins
    return content


def write_grades(csv_path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write ``rows`` (plain text) under the header, sorted by student name, escaped (see :func:`csv_cell`),
    atomically (a temporary file beside it, then renamed over it)."""
    ordered = sorted(rows, key=lambda row: str(row["student"]))
    write_atomically(csv_path, spreadsheet_text(csv_columns(), ordered))


def append_grade(out: IO[str], row: Mapping[str, Any]) -> None:
    """Append one row (plain text) to a grades CSV open for appending, escaped as :func:`write_grades` does."""
    csv.DictWriter(out, fieldnames=csv_columns()).writerow(_escaped(row))


def spreadsheet_text(columns: list[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """A CSV file's text: ``columns``, then ``rows`` (plain text, by column), every cell escaped once
    (:func:`csv_cell`). The one way this project writes a spreadsheet: the grades CSV and every
    class-level output that writes one (a grade-upload file) go through it."""
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    writer.writerows(_escaped(row) for row in rows)
    return out.getvalue()


def _escaped(row: Mapping[str, Any]) -> dict[str, Any]:
    return {column: csv_cell(value) for column, value in row.items()}


def read_spreadsheet(path: Path, flag: str) -> list[list[str]]:
    """The records of a CSV an instructor gives (a roster, the overrides: often a spreadsheet's export, a
    byte-order mark allowed), cells as written; SheetError (one line, ``flag`` first) when it cannot be
    read or is not CSV."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise SheetError(f"{flag} {path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    try:
        return list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise SheetError(f"{flag} {path}: not a CSV file ({err})") from None


# --- what a class-level output is handed ------------------------------------------------------------


@dataclass(frozen=True)
class ClassSheet:
    """A whole class's grades, as every class-level output gets them (grader/classroom/class_outputs.py):
    the CSV's rows as plain text by student (a student graded twice: their last row), this run's JSON
    reports, and the folder holding every graded student's report (``--json-dir``; None: only this run's)
    and the submissions folder score-all graded (None: not known, as after ``merge``)."""

    csv_path: Path
    rows: dict[str, dict[str, str]]
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    json_dir: Path | None = None
    submissions: Path | None = None


def read_class(csv_path: Path, reports: Mapping[str, dict[str, Any]] | None = None,
               json_dir: Path | None = None, submissions: Path | None = None) -> ClassSheet:
    """The :class:`ClassSheet` of the grades CSV at ``csv_path`` (SheetError: not one of ours)."""
    return ClassSheet(Path(csv_path), read_grades(Path(csv_path)).rows, dict(reports or {}), json_dir, submissions)


# --- the JSON reports, named after the students --------------------------------------------------


def safe_file_name(student: str, suffix: str) -> str:
    """``<student><suffix>``, refused (ValueError) when the name could leave its folder or is not a
    plain file name: empty, ``.``/``..``, a leading dot, a path separator, a NUL, over 200 bytes."""
    encoded = student.encode("utf-8", "surrogateescape")
    if (not student or student in (".", "..") or student.startswith(".") or "/" in student or "\\" in student
            or "\0" in student or len(encoded) > 200 or (os.altsep and os.altsep in student)):
        raise ValueError(f"student name {student!r} cannot be a file name")
    return student + suffix


def json_path(json_dir: Path, student: str) -> Path:
    """``json_dir/<student>.json``; ValueError for a name that is not a plain file name."""
    path = Path(json_dir) / safe_file_name(student, ".json")
    if path.parent != Path(json_dir):
        raise ValueError(f"student name {student!r} cannot be a file name")
    return path
