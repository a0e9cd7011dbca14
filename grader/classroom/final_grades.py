"""The last step of every run that writes a grades CSV (score-all, merge, rescore): the graded rows become
the final grades. The instructor's overrides (grader/classroom/overrides.py) are applied to the rows,
the CSV is written with them, each change of a total from what the CSV held goes into the regrade log
(grader/classroom/regrade_log.py), and what else shows a student's grade follows: their feedback file
(a line per override, the scores overridden) and their nbgrader gradebook row (an exercise override is
its cell's score; a total override has no cell there: nbgrader's total is the sum of its cells). A late
policy (grader/classroom/late_policy.py) is applied first, the same way: taken off the rows and applied
anew on every run that is given it; in the gradebook it is the submission's ``late_submission_penalty``.

Runs read the CSV they resume without the overrides (grader.classroom.overrides.rows_without_overrides), so an override is applied
once per run, to whatever the grading or the rescore gave, and survives ``--force``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

from grader.blind_ids import BlindIds
from grader.classroom.flags import with_flags
from grader.classroom.grades_sheet import FLAGS_COLUMN, OVERRIDES_COLUMN, json_path, read_grades, write_grades
from grader.classroom.late_policy import LatePolicy, apply_late
from grader.classroom.overrides import (Overrides, apply_overrides, check_held, notes, overridden_report,
                                        rows_without_overrides)
from grader.classroom.regrade_log import held_rows, log_changes
from grader.reports.feedback import write_feedback
from grader.reports.feedback_from_json import read_report
from grader.safe_text import printable


@dataclass(frozen=True)
class Shown:
    """Where else a run shows the grades: this run's JSON reports, the folder of earlier ones, the feedback
    folder and its visibility, the nbgrader gradebook and its assignment."""

    reports: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    json_dir: Path | None = None
    feedback_dir: Path | None = None
    visibility: str = "full"
    gradebook: Path | None = None
    assignment: str | None = None
    every_report: bool = False  # the feedback of every student of ``reports`` too (a rescore's), not only the overridden
    blind: BlindIds | None = None  # blind grading: feedback files by the students' opaque ids (grader/blind_ids.py)
    written: list[Path] = field(default_factory=list)  # filled by finish: the feedback files it wrote


def held_and_checked(csv_path: Path, overrides: Overrides | None, known: set[str] | None = None,
                     where: str = "the class") -> dict[str, dict[str, str]]:
    """What the CSV at ``csv_path`` holds (for the regrade log), after the refusals a run makes before it
    writes anything (OverrideError): overrides held but no file given; a student of the file not in
    ``known`` (with the CSV's own students)."""
    held = held_rows(csv_path)
    check_held(held, csv_path, overrides is not None)
    rows_without_overrides(held)  # a hand-edited overrides cell is refused now, not after the grading
    if overrides is not None and known is not None:
        overrides.check_students(set(known) | set(held), where)
    return held


def finish(csv_path: Path, held: Mapping[str, Mapping[str, str]], overrides: Overrides | None, regraded: str,
           shown: Shown = Shown(), late: LatePolicy | None = None,
           times: Mapping[str, datetime] | None = None) -> list[str]:
    """Apply the ``late`` policy (the students' submission times: ``times``, else their rows' ``submitted_at``),
    then ``overrides``, to the CSV at ``csv_path`` (written by the run, no override applied), rewrite it
    when they change it, log the totals that changed from ``held``, and show the final grades in the
    feedback and the gradebook of ``shown``. The warnings.

    The penalty comes first, on the score the grading gave; an override (of an exercise or of the total)
    then applies to the penalized row, so that an instructor can correct a penalty (an excused delay)."""
    base = read_grades(Path(csv_path)).rows
    penalized, late_notes = apply_late(base, late, times or {})
    final, warnings = apply_overrides(penalized, overrides)
    flagged = with_flags(final, lambda name: _report(name, shown)[0])  # who needs a look: the last cell decided
    if flagged != base:
        write_grades(Path(csv_path), flagged.values())
    log_changes(csv_path, held, final, regraded, overrides)
    touched = sorted(name for name in final if _grade(final[name]) != _grade(base[name])
                     or held.get(name, {}).get(OVERRIDES_COLUMN))
    if shown.feedback_dir is not None:
        # an error row's feedback says why it was not graded: only an override is worth a warning there
        overridden = {name for name in touched
                      if final[name].get(OVERRIDES_COLUMN) or held.get(name, {}).get(OVERRIDES_COLUMN)}
        students = sorted({*(name for name in touched if final[name]["status"] == "graded"), *overridden,
                           *(shown.reports if shown.every_report else ())})
        warnings += _feedback(students, final, overrides, shown, late_notes)
    if shown.gradebook is not None and touched:
        from grader.classroom.gradebook import ClassGradebook  # imports nbgrader (2 s): only with a gradebook

        with ClassGradebook(shown.gradebook, shown.assignment or "") as book:
            for name in touched:
                book.record(final[name])
    return warnings


def _grade(row: Mapping[str, str]) -> dict[str, str]:
    """A row less its flags: what the feedback and the gradebook show."""
    return {column: cell for column, cell in row.items() if column != FLAGS_COLUMN}


def _report(name: str, shown: Shown) -> tuple[dict[str, Any] | None, str]:
    """The student's JSON report (this run's, else the one in ``--json-dir``) and, when there is none, why."""
    report = shown.reports.get(name)
    if report is not None:
        return report, ""
    if shown.json_dir is None:
        return None, "no JSON report (--json-dir) to render it from"
    try:
        return read_report(json_path(shown.json_dir, name)), ""
    except ValueError as err:
        return None, str(err)


def _feedback(students: list[str], final: Mapping[str, Mapping[str, str]], overrides: Overrides | None,
              shown: Shown, late_notes: Mapping[str, str]) -> list[str]:
    """Write the feedback of ``students`` again with their final grades; the warnings."""
    warnings = []
    for name in students:
        row = final[name]
        report, why = _report(name, shown)
        if row["status"] != "graded" or report is None:
            why = "an error row's feedback says why it was not graded" if row["status"] != "graded" else why
            warnings.append(f"the feedback of {printable(name)} does not show their final grade "
                            f"(overrides, late penalty): {why}")
            continue
        lines = [late_notes[name]] if name in late_notes else []
        shown.written.append(write_feedback(name if shown.blind is None else shown.blind(name),
                                            overridden_report(report, row), shown.feedback_dir, shown.visibility,
                                            lines + notes(row, overrides)))
    return warnings
