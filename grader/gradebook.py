"""Record grading reports in nbgrader's gradebook, so ``nbgrader export`` (and formgrader) list them.

Why nbgrader's gradebook: instructors who already run an nbgrader course keep one database of
grades; the command-line kata is graded by ``python -m grader score``, and this module writes its
JSON reports there as auto-scores, one graded cell per exercise plus ``gpu_check``.

    record_in_gradebook(Path("gradebook.db"), "attention-kata", {"alice": report, ...})

The assignment gets one notebook, ``attention-kata``, whose grade cells are named after the
exercise ids with ``/`` replaced by ``__`` (``03_causal__causal_mask``), since nbgrader cell names
must be identifiers-like. Recording a student again updates the scores in place.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any, Mapping

NOTEBOOK = "attention-kata"
GPU_CELL = "gpu_check"


def cell_name(exercise_id: str) -> str:
    """``03_causal/causal_mask`` -> ``03_causal__causal_mask`` (a valid nbgrader cell name)."""
    return exercise_id.replace("/", "__")


def _scores(report: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """{cell name: (score, max_score)} from a JSON report (grader/report.py ``to_json``)."""
    cells = {cell_name(ex_id): (float(r["score"]), float(r["max_score"])) for ex_id, r in report["exercises"].items()}
    gpu = report["gpu_check"]
    cells[GPU_CELL] = (float(gpu["score"]), float(gpu["max_score"]))
    return cells


def record_in_gradebook(db_path: Path, assignment: str, reports: Mapping[str, dict]) -> None:
    """Create or update ``assignment`` and each student's submission with the reports' scores.

    ``reports`` maps a student id to that student's JSON report. The grade cells' max scores
    come from the reports (the last one recorded wins if the rubric changed).
    """
    # nbgrader's Gradebook asks the ``alembic`` command for the schema version of a new database;
    # it must come from this interpreter's environment, which may not be on PATH (a venv not activated).
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    from nbgrader.api import Gradebook, MissingEntry

    per_student = {student: _scores(report) for student, report in reports.items()}
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{Path(db_path).resolve()}") as gb:
        # nbgrader 0.9's add_submission trips SQLAlchemy 2's autoflush warnings; the rows are right.
        warnings.filterwarnings("ignore", message=r".*not in session.*")
        gb.update_or_create_assignment(assignment)
        try:
            gb.find_notebook(NOTEBOOK, assignment)
        except MissingEntry:
            gb.add_notebook(NOTEBOOK, assignment)
        max_scores: dict[str, float] = {}
        for scores in per_student.values():
            max_scores.update({name: max_score for name, (_, max_score) in scores.items()})
        for name, max_score in max_scores.items():
            gb.update_or_create_grade_cell(name, NOTEBOOK, assignment, max_score=max_score, cell_type="code")
        for student, scores in per_student.items():
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment, student)
            for name, (score, _) in scores.items():
                _grade(gb, name, assignment, student).auto_score = score
            gb.db.commit()


def _grade(gb: Any, cell: str, assignment: str, student: str) -> Any:
    """The student's grade of ``cell``; created when the cell was added after the submission."""
    from nbgrader.api import Grade, MissingEntry

    try:
        return gb.find_grade(cell, NOTEBOOK, assignment, student)
    except MissingEntry:
        notebook = gb.find_submission_notebook(NOTEBOOK, assignment, student)
        grade_cell = gb.find_grade_cell(cell, NOTEBOOK, assignment)
        grade = Grade(cell_id=grade_cell.id, notebook=notebook)
        gb.db.add(grade)
        return grade
