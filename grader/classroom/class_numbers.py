"""The numbers of the class summary (grader/classroom/class_summary.py renders them): from the grades CSV
as grader/classroom/grades_sheet.py hands it over (a ClassSheet) and the students' JSON reports.

It covers the whole CSV (every row, earlier runs of a resumed batch and error rows included; a student
graded twice counts once, with their last row), with every graded student's JSON report: this run's,
as score-all hands them over, else ``<json dir>/<student>.json`` (grader.classroom.grades_sheet.json_path).
A report is used only where it is the grading of the student's CSV row (its shape, the row's total).

- Per exercise (and the GPU-run check): how many students got full points, partial points, none although
  they attempted it (*wrong*), or none because they did not start it (*not started*, :func:`not_started`).
  A graded student without a usable report is counted from the CSV row alone, and one note says who:
  the CSV cannot tell wrong from not started, so their exercises without points are counted apart.
- The totals and their histogram.
- The hidden tests failed most: each counted over the students who attempted its exercise (those who
  did not start it fail every test, which says nothing of what to teach), and only where the failure
  cost points.
- The students whose grading failed, and why, with no absolute path (:func:`without_absolute_paths`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.classroom.grades_sheet import (FLAGS_COLUMN, LATE_BY_COLUMN, LATE_PENALTY_COLUMN, OVERRIDES_COLUMN,
                                           REVIEW_COLUMN, SUBMITTED_AT_COLUMN, ClassSheet, json_path)
from grader.classroom.late_policy import without_late
from grader.classroom.overrides import OverrideError, without_overrides
from grader.files import UnreadableFile, read_regular
from grader.reports.json_report import stopped_at
from grader.rubric import load_rubric

TOP_FAILED = 15
BIN_WIDTH = 10
NAMED_IN_A_NOTE = 10  # students a note names before "and N more"
MAX_REPORT_BYTES = 2**24  # a JSON report is tens of kB: far larger is not one of ours
# The GPU-run check's message when it had no module of the student's to run: none there, or none that works
# on the CPU (grader/grading/gpu_check.py: run_gpu_check).
NOTHING_TO_RUN = "nothing to run"
# An absolute POSIX path in a message: a '/' that starts a word, then no space, quote or separator.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/:-])/[^\s'\"`:;,()<>|]+")


@dataclass
class ExerciseCounts:
    full: int = 0
    partial: int = 0
    wrong: int = 0  # attempted, earned nothing
    not_started: int = 0  # see not_started()
    unreported: int = 0  # earned nothing, and no JSON report to tell wrong from not started
    skipped: int = 0  # the GPU-run check when the run skipped it (its max_score was 0)


@dataclass
class ClassSummary:
    csv_name: str
    max_score: float
    totals: dict[str, float]  # graded students only
    errors: dict[str, str]  # student -> why the grading failed (no absolute path)
    exercises: dict[str, ExerciseCounts]  # exercise id (and "gpu_check") -> counts over graded students
    failed_tests: list[tuple[str, int, int]]  # (test name, students failing it, students attempting its exercise)
    reports_read: int  # graded students whose JSON report was read
    notes: list[str] = field(default_factory=list)  # what the instructor must know to read the numbers
    bins: list[tuple[float, float, int]] = field(default_factory=list)  # (from, to, students)
    review: dict[str, str] = field(default_factory=dict)  # student -> what could hide operations from the trace
    overrides: dict[str, str] = field(default_factory=dict)  # student -> the overrides applied (grader/classroom/overrides.py)
    late: dict[str, str] = field(default_factory=dict)  # student -> how late, the penalty (grader/classroom/late_policy.py)
    look: dict[str, str] = field(default_factory=dict)  # student -> why they need a look (grader/classroom/flags.py)


# --- reading a JSON report -----------------------------------------------------------------------------


def _exercise_of(test_name: str) -> str:
    """A report's tests are named ``<exercise id>: <test>``, or the exercise id alone (its tests never
    ran), or ``gpu_check``."""
    return test_name.split(": ", 1)[0]


def not_started(report: dict[str, Any], ex_id: str) -> bool:
    """Did the student leave exercise ``ex_id`` unstarted (or, for ``"gpu_check"``, give the GPU-run check
    nothing to run)? Read from their JSON report, so that the summary tells those who handed in a stub
    from those whose code is wrong: the two need different teaching.

    An exercise is not started as grader/reports/json_report.py's ``stopped_at`` says (the feedback reads
    the same): it earned nothing and every failed test stopped at a stub or at a kata module not handed
    in. Another module's stub counts too: a test that stops there never reached this module (a written
    one is graded again over a stand-in, grader/grading/scoring.py, and one that earns nothing even so
    cannot be told from an unwritten one). The GPU-run check is not started when it earned nothing because it had
    :data:`NOTHING_TO_RUN` (no module there or working on the CPU; their own exercises say which)."""
    if ex_id == "gpu_check":
        check = report.get("gpu_check") or {}
        return (not check.get("score") and (check.get("max_score") or 0) > 0
                and NOTHING_TO_RUN in str(check.get("message", "")))
    tests = [t for t in report.get("tests", []) if _exercise_of(str(t.get("name", ""))) == ex_id]
    return stopped_at(ex_id, tests, load_rubric().module_groups) is not None


def _failures_that_cost(report: dict[str, Any]) -> set[str]:
    """The names of the report's tests whose failure cost points: failed (an edge test that passed but
    counts nothing while the core tests fail is no failure), worth points, and, where a test entry gives
    its ``kind`` (TestOutcome.kind), not an edge test of an exercise whose core tests earned nothing: it
    would have earned nothing passing (grader/grading/scoring.py), and the core failures say what is wrong."""
    tests = report.get("tests", [])
    cores = [t for t in tests if t.get("kind") == "core"]
    no_core = {_exercise_of(str(t.get("name", ""))) for t in cores} - {
        _exercise_of(str(t.get("name", ""))) for t in cores if t.get("score")}
    return {str(t.get("name", "")) for t in tests if t.get("status") == "failed" and (t.get("max_score") or 0) > 0
            and not (t.get("kind") == "edge" and _exercise_of(str(t.get("name", ""))) in no_core)}


def _failed_most(reports: dict[str, dict[str, Any]]) -> list[tuple[str, int, int]]:
    """[(test, students failing it, students who attempted its exercise)], most failing first: over the
    students who attempted each exercise only (a stub fails every test, and says nothing of what to teach)."""
    failing: Counter[str] = Counter()
    attempted: Counter[str] = Counter()
    for report in reports.values():
        graded_on = {*report["exercises"], *(_exercise_of(str(t.get("name", ""))) for t in report["tests"])}
        started = {ex_id for ex_id in graded_on if not not_started(report, ex_id)}
        attempted.update(started)
        failing.update(name for name in _failures_that_cost(report) if _exercise_of(name) in started)
    ranked = sorted(failing.items(), key=lambda item: (-item[1], item[0]))[:TOP_FAILED]
    return [(name, count, attempted[_exercise_of(name)]) for name, count in ranked]


def read_report(json_dir: Path, student: str) -> Any:
    """``json_dir/<student>.json`` parsed, or None (missing, unreadable, not JSON, a name that is no file name)."""
    try:
        return json.loads(read_regular(json_path(json_dir, student), MAX_REPORT_BYTES).decode("utf-8"))
    except (UnreadableFile, ValueError):  # ValueError: not JSON, not UTF-8, or json_path's refusal
        return None


def _is_grading_of(report: Any, row: dict[str, str]) -> bool:
    """``report`` has a JSON report's shape and the row's total: it is the grading the CSV row records
    (not an older one left beside it)."""
    if not (isinstance(report, dict) and isinstance(report.get("tests"), list)
            and all(isinstance(t, dict) for t in report["tests"])
            and isinstance(report.get("exercises"), dict) and isinstance(report.get("gpu_check"), dict)):
        return False
    score = _graded_score(row)
    try:
        return score is not None and abs(float(report.get("score")) - score) < 0.005
    except (TypeError, ValueError):
        return False


def _graded_score(row: dict[str, str]) -> float | None:
    """The total the grading gave the row, which its report holds: its overrides taken off, its late penalty
    given back (the CSV's score is the final grade)."""
    try:
        return _number(without_late(without_overrides(row)).get("score", ""))
    except (OverrideError, ValueError):  # a cell not as score-all writes it: the row's own score
        return _number(row.get("score", ""))


def _reports_of(rows: dict[str, dict[str, str]], graded: list[str], reports: dict[str, dict[str, Any]],
                json_dir: Path | None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each graded student's JSON report (this run's, else ``json_dir``'s) where it is their row's grading;
    and the graded students who have none."""
    found: dict[str, dict[str, Any]] = {}
    missing = []
    for student in graded:
        report = reports.get(student)
        if report is None and json_dir is not None:
            report = read_report(Path(json_dir), student)
        if _is_grading_of(report, rows[student]):
            found[student] = report
        else:
            missing.append(student)
    return found, missing


# --- the numbers ---------------------------------------------------------------------------------------


def _number(cell: str | None) -> float | None:
    """A CSV cell's number (None: empty, not a number, or missing from a short row)."""
    try:
        return float(cell or "")
    except ValueError:
        return None


def _category(score: float, points: float, report: dict[str, Any] | None, ex_id: str) -> str:
    """The ExerciseCounts field a student's result on ``ex_id`` goes to."""
    if points <= 0:
        return "skipped"
    if score >= points - 1e-6:
        return "full"
    if score > 0:
        return "partial"
    if report is None:
        return "unreported"
    return "not_started" if not_started(report, ex_id) else "wrong"


def _count(rows: dict[str, dict[str, str]], graded: list[str], reports: dict[str, dict[str, Any]]
           ) -> dict[str, ExerciseCounts]:
    rubric = load_rubric()
    exercises = {ex_id: ExerciseCounts() for ex_id in [*rubric.exercises, "gpu_check"]}
    for student in graded:
        row = rows[student]
        row_max = _number(row.get("max_score", ""))
        # a row graded on some exercises only (grader nbgrader: one assignment's) leaves the others empty
        graded_on = [ex_id for ex_id in rubric.exercises if row.get(ex_id, "") != ""]
        exercise_points = sum(rubric.exercises[ex_id].points for ex_id in graded_on)
        for ex_id in [*graded_on, "gpu_check"]:
            points = (rubric.exercises[ex_id].points if ex_id in rubric.exercises
                      else (row_max if row_max is not None else rubric.max_score) - exercise_points)
            category = _category(_number(row.get(ex_id, "")) or 0.0, points, reports.get(student), ex_id)
            setattr(exercises[ex_id], category, getattr(exercises[ex_id], category) + 1)
    return exercises


def without_absolute_paths(text: str, folder: Path) -> str:
    """``text`` with each absolute path in it relative to ``folder`` where it lies inside, else by its
    name: the instructor's home and layout stay out of a summary that gets mailed and shared."""
    inside = (folder.absolute(), folder.resolve())  # as given, and with its links resolved

    def shorter(match: re.Match[str]) -> str:
        path = Path(match.group(0))
        for base in inside:
            if path.is_relative_to(base):
                return str(path.relative_to(base))
        return path.name or match.group(0)

    return _ABSOLUTE_PATH.sub(shorter, text)


def _missing_note(missing: list[str], json_dir: Path | None) -> list[str]:
    """The one note on the graded students who have no report to read (none: no note)."""
    if not missing:
        return []
    names = ", ".join(sorted(missing)[:NAMED_IN_A_NOTE])
    if len(missing) > NAMED_IN_A_NOTE:
        names += f" and {len(missing) - NAMED_IN_A_NOTE} more"
    why = ("missing, unreadable, or of another grading than their CSV row" if json_dir is not None else
           "score-all ran without --json-dir, so only this run's reports were there to read")
    return [f"Graded students without a JSON report to read ({len(missing)}: {why}): {names}. They are counted "
            "from their CSV rows alone: their exercises without points are under \"no points, no report\" "
            "(the CSV cannot tell wrong from not started), and their tests are not among the hidden tests "
            "failed most."]


def summarize_class(sheet: ClassSheet) -> ClassSummary:
    """The numbers of the summary (see the module docstring): every row of the sheet, with its reports
    (this run's) and those of its ``json_dir`` (earlier runs')."""
    rows, reports, json_dir, csv_path = sheet.rows, sheet.reports, sheet.json_dir, sheet.csv_path
    folder = Path(csv_path).parent
    totals: dict[str, float] = {}
    errors: dict[str, str] = {}
    for student, row in rows.items():
        if row.get("status") != "graded":
            errors[student] = without_absolute_paths(row.get("message") or "not graded", folder)
        else:
            totals[student] = _number(row.get("score", "")) or 0.0
    usable, missing = _reports_of(rows, list(totals), reports, json_dir)
    max_score = load_rubric().max_score
    row_maxima = [m for student in totals for m in [_number(rows[student].get("max_score", ""))]
                  if m is not None and m > 0]
    if row_maxima:  # a run with --gpu skip is out of 90, not 100
        max_score = max(row_maxima)
    summary = ClassSummary(Path(csv_path).name, max_score, totals, errors, _count(rows, list(totals), usable),
                           _failed_most(usable), len(usable), _missing_note(missing, json_dir))
    summary.bins = _bins(list(totals.values()), max_score)
    summary.review = {student: without_absolute_paths(row.get(REVIEW_COLUMN) or "", folder)
                      for student, row in rows.items() if row.get(REVIEW_COLUMN)}
    summary.overrides = {student: row[OVERRIDES_COLUMN] for student, row in rows.items() if row.get(OVERRIDES_COLUMN)}
    summary.look = {student: without_absolute_paths(row[FLAGS_COLUMN], folder)
                    for student, row in rows.items() if row.get(FLAGS_COLUMN)}
    summary.late = {student: f"late by {row[LATE_BY_COLUMN]} h (submitted {row[SUBMITTED_AT_COLUMN]}): "
                             f"-{row[LATE_PENALTY_COLUMN]} points"
                    for student, row in rows.items() if (_number(row.get(LATE_BY_COLUMN, "")) or 0) > 0}
    return summary


def _bins(values: list[float], max_score: float) -> list[tuple[float, float, int]]:
    edges = list(range(0, int(max_score) + 1, BIN_WIDTH))
    if edges[-1] < max_score:
        edges.append(int(max_score))
    bins = []
    for i, low in enumerate(edges[:-1]):
        high = edges[i + 1]
        last = i == len(edges) - 2
        bins.append((low, high, sum(1 for v in values if low <= v < high or (last and v >= high))))
    return bins
