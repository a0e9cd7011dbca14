"""grader.classroom.gradebook: reports land in nbgrader's gradebook and ``nbgrader export`` lists them."""

from __future__ import annotations

import csv
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from grader.authoring.nbgrader_release import build_nbgrader_course
from grader.classroom.gradebook import (COMMENT_CELL, GPU_CELL, NOTEBOOK, ClassGradebook, GradebookError, cell_name,
                                        nbgrader_schema_head, stamp_new_gradebook)
from grader.classroom.grades_sheet import csv_row, read_grades, write_grades
from grader.rubric import GROUPS, load_rubric
from support import fake_report

ASSIGNMENT = "attention-kata"


def record_in_gradebook(db_path: Path, assignment: str, reports: dict[str, dict]) -> None:
    """Record each student's JSON report in ``assignment``, as score-all records their CSV row."""
    with ClassGradebook(db_path, assignment) as gb:
        for student, report in reports.items():
            gb.record(csv_row(student, {"report": report}))


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


@pytest.mark.slow  # nbgrader's gradebook, end to end
@pytest.mark.timeout(120)
def test_recorded_reports_are_exported_and_updated_not_duplicated(tmp_path: Path):
    db = tmp_path / "gradebook.db"
    reports = {"alice": fake_report(fraction=1.0), "bob": fake_report(fraction=0.5, gpu=0.0),
               "carol": fake_report(fraction=0.0)}
    record_in_gradebook(db, ASSIGNMENT, reports)
    rows = export(tmp_path, db)
    assert set(rows) == {"alice", "bob", "carol"}
    for student, report in reports.items():
        assert float(rows[student]["score"]) == pytest.approx(report["score"]), (student, rows[student])
        assert float(rows[student]["max_score"]) == pytest.approx(load_rubric().max_score)
        assert rows[student]["assignment"] == ASSIGNMENT

    # Re-grade bob: his row changes, nobody is added or duplicated, the others keep their scores
    # (read with export's CSV plugin in this process: the command's start costs seconds).
    record_in_gradebook(db, ASSIGNMENT, {"bob": fake_report(fraction=0.75)})
    rows = {student: row for (_, student), row in in_process_export(db, tmp_path / "again.csv").items()}
    assert len(rows) == 3
    assert set(rows) == {"alice", "bob", "carol"}
    assert float(rows["bob"]["score"]) == pytest.approx(fake_report(fraction=0.75)["score"])
    assert float(rows["alice"]["score"]) == pytest.approx(reports["alice"]["score"])
    assert float(rows["carol"]["score"]) == pytest.approx(load_rubric().gpu_points)  # the GPU-run check's only


@pytest.mark.timeout(60)
def test_one_grade_cell_per_exercise_plus_gpu_check(tmp_path: Path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    record_in_gradebook(db, ASSIGNMENT, {"dave": fake_report(fraction=0.5)})
    record_in_gradebook(db, ASSIGNMENT, {"dave": fake_report(fraction=0.5)})  # idempotent
    with Gradebook(f"sqlite:///{db}") as gb:
        notebook = gb.find_notebook(NOTEBOOK, ASSIGNMENT)
        names = sorted(cell.name for cell in notebook.grade_cells)
        assert names == sorted([cell_name(ex_id) for ex_id in load_rubric().exercises] + [GPU_CELL])
        assert len(gb.students) == 1 and len(gb.find_assignment(ASSIGNMENT).submissions) == 1
        grade = gb.find_grade(cell_name("03_causal/causal_attention"), NOTEBOOK, ASSIGNMENT, "dave")
        points = load_rubric().exercises["03_causal/causal_attention"].points
        assert grade.auto_score == pytest.approx(0.5 * points) and grade.max_score == points


@pytest.fixture(scope="module")
def course_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gradebook of the course grader/authoring/nbgrader_release.py writes, as ``nbgrader generate_assignment
    <group>`` fills it for every group (its SaveCells preprocessor on each source notebook; the command
    takes seconds more and gives the same assignments, notebooks, cells and max scores)."""
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveCells

    course = tmp_path_factory.mktemp("course") / "nbgrader"
    build_nbgrader_course(course)
    db = course / "gradebook.db"
    stamp_new_gradebook(db)  # instead of nbgrader's 3 s run of the alembic command (see below)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    with Gradebook(f"sqlite:///{db}") as gb:
        for group in GROUPS:
            gb.update_or_create_assignment(group)
    for group in GROUPS:
        nb = nbformat.read(course / "source" / group / f"{group}.ipynb", as_version=4)
        SaveCells().preprocess(nb, {"nbgrader": {"db_url": f"sqlite:///{db}", "assignment": group, "notebook": group}})
    return db


def course_max_scores(db: Path) -> dict[str, float]:
    """{assignment: its max score} of every assignment of the course."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        return {assignment.name: assignment.max_score for assignment in gb.assignments}


def in_process_export(db: Path, out: Path) -> dict[tuple[str, str], dict[str, str]]:
    """What ``nbgrader export`` writes (its CSV plugin, without the 7 s of starting the app), by
    (assignment, student)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(f"sqlite:///{db}") as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    with open(out, newline="") as f:
        return {(row["assignment"], row["student_id"]): row for row in csv.DictReader(f)}


def _points(group: str, report: dict, gpu: bool) -> float:
    return sum(ex["score"] for ex_id, ex in report["exercises"].items() if ex_id.startswith(group + "/")) + (
        report["gpu_check"]["score"] if gpu else 0.0)


@pytest.mark.timeout(120)
def test_the_release_course_gradebook_takes_each_assignments_grades_and_keeps_its_max_scores(course_db: Path, tmp_path: Path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    shutil.copy(course_db, db)
    before = course_max_scores(db)
    rubric = load_rubric()
    assert before == {g: sum(ex.points for ex in rubric.in_group(g)) + (rubric.gpu_points if g == "04_multihead" else 0)
                      for g in GROUPS}  # one assignment per group; the GPU-run check's cell in 04_multihead
    with Gradebook(f"sqlite:///{db}") as gb, warnings.catch_warnings():  # erin was autograded by nbgrader before
        warnings.filterwarnings("ignore", message=r".*not in session.*")  # nbgrader 0.9 with SQLAlchemy 2
        gb.update_or_create_student("erin")
        gb.add_submission("03_causal", "erin")
    reports = {"alice": fake_report(fraction=1.0), "bob": fake_report(fraction=0.5),
               "erin": fake_report(fraction=0.25, gpu=0.25)}
    for group in ("03_causal", "04_multihead"):
        record_in_gradebook(db, group, reports)
    with ClassGradebook(db, "03_causal") as gb:
        assert gb.layout.kind == "course" and gb.warnings == []
        assert set(gb.layout.cells) == {ex.id for ex in rubric.in_group("03_causal")}  # only its own exercises
        gb.record(csv_row("carol", {"error": "-nothing to grade"}, "0" * 64))
    assert course_max_scores(db) == before  # nothing added, no max score changed
    dan = csv_row("dan", {"report": fake_report(fraction=1.0)}, "2" * 64)  # 5% late, taken from the whole kata's
    taken = 0.05 * float(dan["score"])  # score (grader/classroom/late_policy.py): 5% of 03_causal's in 03_causal
    dan.update(score=str(float(dan["score"]) - taken), late_penalty=str(taken))
    with ClassGradebook(db, "03_causal") as gb:
        gb.record(dan)
    rows = in_process_export(db, tmp_path / "grades.csv")
    assert float(rows["03_causal", "dan"]["score"]) == pytest.approx(0.95 * before["03_causal"])
    for student, report in reports.items():
        for group in ("03_causal", "04_multihead"):
            row = rows[group, student]
            assert float(row["score"]) == pytest.approx(_points(group, report, group == "04_multihead")), (group, student)
            assert float(row["max_score"]) == pytest.approx(before[group])
        assert float(rows["01_simple_attention", student]["score"]) == 0.0  # not recorded there
    assert float(rows["03_causal", "carol"]["score"]) == 0.0
    with Gradebook(f"sqlite:///{db}") as gb:
        grade = gb.find_grade("causal_attention_tests", "03_causal", "03_causal", "bob")
        points = rubric.exercises["03_causal/causal_attention"].points
        assert grade.auto_score == pytest.approx(0.5 * points) and grade.max_score == points and not grade.needs_manual_grade
        erin_gpu = gb.find_grade("gpu_check", "04_multihead", "04_multihead", "erin").auto_score
        assert erin_gpu == pytest.approx(0.25 * rubric.gpu_points)
        comment = gb.find_comment("causal_mask", "03_causal", "03_causal", "carol")
        assert comment.auto_comment.endswith("-nothing to grade")  # the reason, unescaped
    # carol's submission is graded at last: the reason goes, the scores come
    with ClassGradebook(db, "03_causal") as gb:
        gb.record(csv_row("carol", {"report": fake_report(fraction=1.0)}, "1" * 64))
    with Gradebook(f"sqlite:///{db}") as gb:
        assert gb.find_comment("causal_mask", "03_causal", "03_causal", "carol").auto_comment is None
        assert gb.find_submission("03_causal", "carol").score == pytest.approx(before["03_causal"])


@pytest.mark.timeout(120)
def test_another_courses_assignment_is_refused(course_db: Path, tmp_path: Path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    shutil.copy(course_db, db)
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_assignment("hw1")
        gb.add_notebook("problem1", "hw1")
    with pytest.raises(GradebookError, match="hw1"):
        ClassGradebook(db, "hw1")
    with Gradebook(f"sqlite:///{db}") as gb:
        assert [nb.name for nb in gb.find_assignment("hw1").notebooks] == ["problem1"]
    # the course's gradebook also takes a separate assignment of the kata layout, beside the course's
    before = course_max_scores(db)
    record_in_gradebook(db, "attention-kata-cli", {"alice": fake_report(fraction=1.0)})
    assert course_max_scores(db) == dict(before, **{"attention-kata-cli": load_rubric().max_score})
    with pytest.raises(GradebookError, match="generate_assignment 02_trainable"):  # what the nbgrader path asks for
        ClassGradebook(db, "02_trainable_weights_typo", must_exist=True)


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_class_summary")  # the summary's page is test_summary.py's; the assignment's CSV is here
def test_what_formgrader_changed_is_read_back_and_shown_as_overrides(course_db: Path, tmp_path: Path):
    """A manual score (with formgrader's comment) and extra credit on alice's cells show in her feedback page and
    the assignment's grades CSV as overrides by formgrader, with the total nbgrader export gives; bob's score
    confirmed by hand at its graded value is no change. (A whole course run shows it too: test_nbgrader_course.py.)"""
    from nbgrader.api import Gradebook

    from grader.classroom.nbgrader_course import (Course, Graded, assignment_outputs, manual_overrides, staged_name,
                                                  write_feedback)

    group, report = "03_causal", fake_report(fraction=0.5)
    first, second = load_rubric().in_group(group)[:2]
    course = Course(tmp_path / "course", [group], {group: ["alice", "bob"]})
    (course.work).mkdir(parents=True)
    shutil.copy(course_db, course.gradebook)
    rows = {name: csv_row(name, {"report": report}, "1" * 64) for name in ("alice", "bob")}
    with ClassGradebook(course.gradebook, group, must_exist=True) as gb:
        for row in rows.values():
            gb.record(row)
    with Gradebook(f"sqlite:///{course.gradebook}") as gb:
        gb.find_grade(f"{first.module}_tests", group, group, "alice").manual_score = first.points
        gb.find_comment(first.module, group, group, "alice").manual_comment = "regrade request; the mask is right"
        gb.find_grade(f"{second.module}_tests", group, group, "alice").extra_credit = 0.5
        confirmed = gb.find_grade(f"{first.module}_tests", group, group, "bob")
        confirmed.manual_score = confirmed.auto_score
        gb.db.commit()
    with ClassGradebook(course.gradebook, group, must_exist=True) as gb:
        manual = {(group, name): gb.manual_grades(name) for name in rows}
    assert manual[group, "bob"] == []
    assert [(m.column, m.manual_score, m.extra_credit) for m in manual[group, "alice"]] == sorted(
        [(first.id, first.points, 0.0), (second.id, None, 0.5)], key=lambda m: m[0])
    exported = in_process_export(course.gradebook, tmp_path / "export.csv")[group, "alice"]
    page = write_feedback(course, Graded(group, "alice", rows["alice"], report), "full", None,
                          manual_overrides("alice", manual[group, "alice"])).read_text()
    assert f"overridden: {first.id} {first.points:g} by formgrader: regrade request, the mask is right" in page
    assert f"overridden: {second.id} +0.5 by formgrader: extra credit: manual grade in formgrader" in page
    graded = {ex.id: report["exercises"][ex.id]["score"] for ex in load_rubric().in_group(group)}
    assert float(exported["score"]) == pytest.approx(sum(graded.values()) + first.points - graded[first.id] + 0.5)
    assert f"Total: {float(exported['score']):g} / " in page
    write_grades(course.work / "grades.csv", [dict(row, student=staged_name(group, name), late_by="16.5" * (name == "alice"))
                                              for name, row in rows.items()])  # alice late too: both flags
    assignment_outputs(course, course.work / "grades.csv", {}, [], manual)
    sheet = read_grades(course.work / group / "grades.csv").rows
    alice, bob = (sheet[staged_name(group, name)] for name in ("alice", "bob"))
    changed = float(exported["score"]) - sum(graded.values())  # what nbgrader export adds, the CSV adds
    assert float(alice["score"]) == pytest.approx(report["score"] + changed) and "override applied" in alice["flags"]
    assert "late by 16.5 h" in alice["flags"] and not bob["overrides"] and "override" not in bob["flags"]
    assert float(read_grades(course.work / "grades.csv").rows[staged_name(group, "alice")]["score"]) == report["score"]


@pytest.mark.timeout(120)
def test_error_rows_are_recorded_with_their_reason(tmp_path: Path):
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    with ClassGradebook(db, ASSIGNMENT) as gb:
        gb.record(csv_row("dave", {"error": "grading took longer than 600 s"}, "0" * 64))
        gb.record(csv_row("erin", {"report": fake_report(fraction=0.5)}, "0" * 64))
    rows = in_process_export(db, tmp_path / "grades.csv")
    assert set(rows) == {(ASSIGNMENT, "dave"), (ASSIGNMENT, "erin")} and float(rows[ASSIGNMENT, "dave"]["score"]) == 0.0
    with Gradebook(f"sqlite:///{db}") as gb:
        assert "longer than 600 s" in gb.find_comment(COMMENT_CELL, NOTEBOOK, ASSIGNMENT, "dave").auto_comment
        assert gb.find_assignment(ASSIGNMENT).max_score == pytest.approx(load_rubric().max_score)


@pytest.mark.timeout(120)
def test_a_new_gradebook_is_stamped_with_the_schema_head_alembic_names(tmp_path: Path) -> None:
    """grader.classroom.gradebook stamps new databases itself instead of letting nbgrader run `alembic heads`."""
    import nbgrader
    from alembic.script import ScriptDirectory

    head = nbgrader_schema_head()
    # nbgrader's get_alembic_version() runs `alembic heads` on its own scripts (a second Python, 4 s):
    # alembic's answer, computed here in this process
    assert head is not None and [head] == ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_heads()
    with ClassGradebook(tmp_path / "new.db", "hw3"):
        pass
    with sqlite3.connect(tmp_path / "new.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]
    assert (tmp_path / "new.db").stat().st_mode & 0o777 == 0o600  # other people's grades: for this user alone


def test_notebooks_still_validate_without_the_iri_format_checker() -> None:
    """grader/__init__.py keeps jsonschema from importing rfc3987_syntax; nbformat's checks still run."""
    import nbformat

    import grader

    assert grader.__name__ in sys.modules and sys.modules["rfc3987_syntax"] is None
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.validate(nb)
    nb.cells[0]["cell_type"] = "not a cell type"
    with pytest.raises(nbformat.ValidationError):
        nbformat.validate(nb)
