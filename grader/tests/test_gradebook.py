"""grader.gradebook: reports land in nbgrader's gradebook and ``nbgrader export`` lists them."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.gradebook import GPU_CELL, NOTEBOOK, cell_name, record_in_gradebook
from grader.rubric import load_rubric

ASSIGNMENT = "attention-kata"


def fake_report(fraction: float, gpu: float = 10.0) -> dict:
    """A JSON report (grader/report.py ``to_json``) scoring ``fraction`` of every exercise."""
    rubric = load_rubric()
    exercises = {
        ex_id: {"score": round(ex.points * fraction, 2), "max_score": ex.points, "status": "partial", "message": ""}
        for ex_id, ex in rubric.exercises.items()
    }
    score = sum(e["score"] for e in exercises.values()) + gpu
    return {
        "submission": "fake", "score": score, "max_score": rubric.max_score, "execution_time": 1.0,
        "isolation": "process", "warnings": [], "tests": [], "exercises": exercises,
        "gpu_check": {"score": gpu, "max_score": rubric.gpu_points, "status": "passed", "device": "cpu", "message": ""},
    }


def export(course: Path, db: Path) -> dict[str, dict[str, str]]:
    """Run ``nbgrader export`` in ``course`` (config pointing at ``db``); {student id: CSV row}."""
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{db}'\n"
    )
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    result = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export"], cwd=course, env=env,
                            capture_output=True, text=True, timeout=110)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    with open(course / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len({r["student_id"] for r in rows}), f"a student is listed twice: {rows}"
    return {row["student_id"]: row for row in rows}


def test_cell_names_are_valid():
    for ex_id in load_rubric().exercises:
        name = cell_name(ex_id)
        assert name.replace("_", "").isalnum() and "/" not in name, name
    assert cell_name("03_causal/causal_mask") == "03_causal__causal_mask"


@pytest.mark.timeout(120)
def test_recorded_reports_are_exported_and_updated_not_duplicated(tmp_path: Path):
    db = tmp_path / "gradebook.db"
    reports = {"alice": fake_report(1.0), "bob": fake_report(0.5, gpu=0.0), "carol": fake_report(0.0)}
    record_in_gradebook(db, ASSIGNMENT, reports)
    rows = export(tmp_path, db)
    assert set(rows) == {"alice", "bob", "carol"}
    for student, report in reports.items():
        assert float(rows[student]["score"]) == pytest.approx(report["score"]), (student, rows[student])
        assert float(rows[student]["max_score"]) == pytest.approx(load_rubric().max_score)
        assert rows[student]["assignment"] == ASSIGNMENT

    # Re-grade bob: his row changes, nobody is added or duplicated, the others keep their scores.
    record_in_gradebook(db, ASSIGNMENT, {"bob": fake_report(0.75, gpu=10.0)})
    rows = export(tmp_path, db)
    assert set(rows) == {"alice", "bob", "carol"}
    assert float(rows["bob"]["score"]) == pytest.approx(fake_report(0.75, gpu=10.0)["score"])
    assert float(rows["alice"]["score"]) == pytest.approx(reports["alice"]["score"])
    assert float(rows["carol"]["score"]) == pytest.approx(10.0)


@pytest.mark.timeout(60)
def test_one_grade_cell_per_exercise_plus_gpu_check(tmp_path: Path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    record_in_gradebook(db, ASSIGNMENT, {"dave": fake_report(0.5)})
    record_in_gradebook(db, ASSIGNMENT, {"dave": fake_report(0.5)})  # idempotent
    with Gradebook(f"sqlite:///{db}") as gb:
        notebook = gb.find_notebook(NOTEBOOK, ASSIGNMENT)
        names = sorted(cell.name for cell in notebook.grade_cells)
        assert names == sorted([cell_name(ex_id) for ex_id in load_rubric().exercises] + [GPU_CELL])
        assert len(gb.students) == 1 and len(gb.find_assignment(ASSIGNMENT).submissions) == 1
        grade = gb.find_grade(cell_name("03_causal/causal_attention"), NOTEBOOK, ASSIGNMENT, "dave")
        assert grade.auto_score == 5.0 and grade.max_score == 10.0
