"""An nbgrader course graded with the isolated grader, instead of ``nbgrader autograde``: the course
logic of ``python -m grader nbgrader COURSE_DIR [--assignment NAME]`` (its command line: grader/classroom/commands.py).

``nbgrader autograde`` runs the students' code in the grading kernel, where it can forge its grade
(replace ``get_ipython().run_cell`` and no later test cell runs). Here no notebook is executed, in
this process or any other:

1. intake (grader/classroom/notebook_intake.py): each ``COURSE_DIR/submitted/<student>/<assignment>/<assignment>.ipynb``
   is read as JSON and its solution cells become the module files of the command-line layout, staged
   in ``COURSE_DIR/kata-grading/intake/<assignment>__<student>/<group>/<module>.py`` (a folder only its
   owner can read). A notebook that cannot be read becomes that student's error, with one line;
2. grading: grader.classroom.score_all.score_all over the staged folder, as ``score-all`` grades a class (the same
   jobs, sandbox, time and memory limits, hidden tests, partial credit, re-grades), each notebook on
   its assignment's exercises alone (:func:`assignment_options`: the GPU-run check in ``04_multihead``
   only), resumable: its CSV and JSON reports are ``COURSE_DIR/kata-grading/grades.csv`` and ``json/``;
3. the gradebook (grader/classroom/gradebook.py, the course layout): each assignment's exercises in their
   ``<module>_tests`` cells, the GPU-run check in ``04_multihead``'s ``gpu_check`` cell; a student
   whose notebook could not be graded gets 0 and the reason as the comment;
4. feedback: ``COURSE_DIR/feedback/<student>/<assignment>/<assignment>.html`` (the assignment's own
   exercises: scores, and the messages of the student's own failing tests at ``--visibility``; no
   test source; grader/reports/nbgrader_feedback.py), with the ``timestamp.txt`` and ``submission_secret.txt`` that ``nbgrader
   release_feedback`` needs, copied from the submission.

Nothing is written into ``submitted/``.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from grader.authoring.nbgrader_release import gpu_group, notebook_modules
from grader.classroom.flags import with_flags
from grader.classroom.gradebook import ClassGradebook, GradebookError, ManualGrade
from grader.classroom.grades_sheet import (LATE_PENALTY_COLUMN, SheetError, csv_row, json_path, read_grades,
                                           write_grades)
from grader.classroom.late_policy import LatePolicy, row_note
from grader.classroom.class_outputs import write_class_outputs
from grader.classroom.notebook_intake import NotebookError
from grader.classroom.overrides import Override, Overrides, apply_overrides, notes, overridden_report
from grader.classroom.notebook_intake import notebook_modules as read_modules
from grader.classroom.score_all import BatchOptions, Progress, score_all
from grader.classroom.sheet_lock import SheetBusy, take_lock
from grader.classroom.submission_time import submission_time
from grader.files import UnreadableFile, is_real_dir, private_files, read_regular, write_atomically
from grader.grading.options import GradeOptions
from grader.reports.feedback_from_json import read_report
from grader.reports.nbgrader_feedback import feedback_html
from grader.rubric import GROUPS, load_rubric

# COURSE_DIR/kata-grading: the staged layouts, the CSV and the JSON reports. Not "grader": instructors run
# nbgrader's commands from the course folder, and there a folder named grader would shadow this package
# for `python -m grader` (the current folder comes first on sys.path).
WORK_DIR = "kata-grading"
SEPARATOR = "__"  # <assignment>__<student>: a staged submission's name (no group name holds it)
RELEASE_FILES = ("timestamp.txt", "submission_secret.txt")  # what nbgrader release_feedback reads beside the html
FORMGRADER = "formgrader"  # who changed a grade in formgrader, as its overrides say (nbgrader records no name)
Manual = dict[tuple[str, str], list[ManualGrade]]  # (assignment, student) -> what formgrader changed


class CourseError(Exception):
    """The course folder or assignment cannot be graded (one line, exit 2)."""


@dataclass
class Course:
    root: Path
    assignments: list[str]
    students: dict[str, list[str]]  # assignment -> students with a submitted folder for it

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def work(self) -> Path:
        return self.root / WORK_DIR


@dataclass
class Graded:
    """One student's result for one assignment: a CSV row (student = the nbgrader id), and the report."""

    assignment: str
    student: str
    row: dict[str, str]
    report: dict[str, Any] | None = None
    this_run: bool = True  # graded (or refused) by this run; False: its row was kept from an earlier run


@dataclass
class CourseSummary:
    results: list[Graded] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    feedback: list[Path] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)  # the class-level outputs, one set per assignment


# --- the course ------------------------------------------------------------------------------------


def find_course(root: Path, assignment: str | None = None) -> Course:
    """The course at ``root`` and the assignments to grade, from its folders (:func:`check_gradebook`
    reads its gradebook); CourseError when it cannot be graded."""
    root = Path(root)
    if not root.is_dir():
        raise CourseError(f"{root}: not a directory")
    if not (root / "submitted").is_dir():
        raise CourseError(f"{root}: no submitted/ folder (nbgrader collect puts the students' notebooks there)")
    if not (root / "gradebook.db").is_file():
        raise CourseError(f"{root}: no gradebook.db (run nbgrader generate_assignment there first)")
    if assignment is not None and assignment not in GROUPS:
        raise CourseError(f"{assignment!r} is not an assignment of this course ({', '.join(GROUPS)})")
    students: dict[str, list[str]] = {}
    for group in [assignment] if assignment else GROUPS:
        found = sorted(entry.name for entry in (root / "submitted").iterdir()
                       if not entry.name.startswith(".") and is_real_dir(entry) and is_real_dir(entry / group))
        if found or assignment:
            students[group] = found
    if not students:
        raise CourseError(f"{root}: nothing submitted (no submitted/<student>/<assignment>/ for an assignment "
                          f"of this course: {', '.join(GROUPS)})")
    return Course(root, list(students), students)


def check_gradebook(course: Course) -> None:
    """CourseError unless the course's gradebook holds each assignment to grade (``nbgrader
    generate_assignment`` ran). Nothing is created."""
    for group in course.assignments:
        try:
            with ClassGradebook(course.gradebook, group, must_exist=True):
                pass
        except GradebookError as err:
            raise CourseError(str(err)) from None


def prepare_work_dir(course: Course) -> None:
    """``COURSE_DIR/kata-grading/``, readable by its owner only (uid isolation: no student reads another)."""
    try:
        (course.work / "intake").mkdir(parents=True, exist_ok=True)
        os.chmod(course.work, 0o700)
        os.chmod(course.work / "intake", 0o700)
    except OSError as err:
        raise CourseError(f"{course.work}: {err.strerror or err}") from None


def staged_name(assignment: str, student: str) -> str:
    return f"{assignment}{SEPARATOR}{student}"


# --- grading ---------------------------------------------------------------------------------------


def stage(course: Course, notes: list[str] | None = None) -> dict[tuple[str, str], str]:
    """Write each notebook's module layout into the intake folder; {(assignment, student): error} for
    the notebooks that cannot be graded (their staged folder is removed). ``notes`` gets a line for each
    helper a graded cell borrows from a cell that is not graded (grader/classroom/notebook_intake.py)."""
    intake = course.work / "intake"
    errors: dict[tuple[str, str], str] = {}
    for assignment, students in course.students.items():
        for old in intake.glob(staged_name(assignment, "*")):
            shutil.rmtree(old)
        modules = [ex.module for ex in notebook_modules(assignment)]
        for student in students:
            folder = course.submitted / student / assignment
            notebook = folder / f"{assignment}.ipynb"
            try:
                if not os.path.lexists(notebook):
                    others = sorted(p.name for p in folder.glob("*.ipynb"))
                    raise NotebookError(f"no {notebook.name} in {folder.relative_to(course.root)}"
                                        + (f" (found {', '.join(others)})" if others else ""))
                borrowed: list[str] = []
                files = read_modules(notebook, modules, borrowed)
                if notes is not None:
                    notes += [f"{student} ({assignment}): {note}" for note in borrowed]
            except NotebookError as err:
                errors[(assignment, student)] = str(err)
                continue
            dest = intake / staged_name(assignment, student)
            for group in GROUPS:
                (dest / group).mkdir(parents=True, exist_ok=True)
            for relative, data in files.items():
                (dest / relative).write_bytes(data)
    return errors


def assignment_options(options: GradeOptions, assignment: str) -> GradeOptions:
    """How a notebook of ``assignment`` is graded (``options``: the command's GradeOptions): on that
    group's exercises, and with the GPU-run check only where its cell is (``--gpu skip`` elsewhere)."""
    return replace(options, exercises=tuple(ex.id for ex in load_rubric().in_group(assignment)),
                   gpu=options.gpu if assignment == gpu_group() else "skip")


def grade_course(course: Course, options: BatchOptions, visibility: str = "full",
                 progress: Callable[[Progress], None] | None = None) -> CourseSummary:
    """Stage, grade (grader.classroom.score_all.score_all with ``options``, each notebook graded with
    its :func:`assignment_options`), record, write feedback. What it creates is for this user alone
    (grader.files.private_files), but for the feedback pages themselves (see :func:`write_feedback`).
    One run at a time: it holds ``COURSE_DIR/kata-grading.lock`` (grader/classroom/sheet_lock.py) from
    before it stages anything, since a second run would stage over the notebooks the first is grading
    (CourseError: another run holds it)."""
    with private_files():
        try:
            lock = take_lock(course.work, "nbgrader")
        except SheetBusy as err:
            raise CourseError(str(err)) from None
        with lock:
            return _grade_course(course, options, visibility, progress)


def _grade_course(course: Course, options: BatchOptions, visibility: str,
                  progress: Callable[[Progress], None] | None) -> CourseSummary:
    prepare_work_dir(course)
    borrowed: list[str] = []
    errors = stage(course, borrowed)
    csv_path, json_dir = course.work / "grades.csv", course.work / "json"
    staged = {p.name for p in (course.work / "intake").iterdir()}
    try:  # rows of notebooks that are gone or unreadable now must not be kept by the resume
        existing = read_grades(csv_path).rows
    except SheetError:
        existing = {}
    write_grades(csv_path, [row for name, row in existing.items() if name in staged])

    def grading_of(name: str) -> GradeOptions:
        return assignment_options(options.grading, name.split(SEPARATOR, 1)[0])

    options = replace(options, json_dir=json_dir, grading_of=grading_of, class_outputs=False,
                      **late_options(course, options))
    batch = score_all(course.work / "intake", csv_path, options, progress=progress)
    summary = CourseSummary(warnings=[*batch.warnings, *borrowed])
    rows = read_grades(csv_path).rows
    for assignment, students in course.students.items():
        for student in students:
            name = staged_name(assignment, student)
            if (assignment, student) in errors:
                row = csv_row(student, {"error": errors[assignment, student]},
                              grading=assignment_options(options.grading, assignment))
                summary.results.append(Graded(assignment, student, row))
            elif name in rows:
                row = dict(rows[name], student=student)
                report = None
                if row["status"] == "graded":
                    try:
                        report = json.loads((json_dir / f"{name}.json").read_text())
                    except (OSError, ValueError) as err:  # a name score-all could not write a report for
                        row = csv_row(student, {"error": f"no report: {err}"},
                                      grading=assignment_options(options.grading, assignment))
                summary.results.append(Graded(assignment, student, row, report, this_run=name not in batch.skipped))
    manual = record(course, summary)  # and what formgrader changed: shown in the summaries and the feedback
    summary.outputs = assignment_outputs(course, csv_path, batch.reports, summary.warnings, manual)
    unreleasable: dict[str, list[str]] = {}
    for result in summary.results:
        try:
            page = write_feedback(course, result, visibility, options.late_policy,
                                  manual_overrides(result.student, manual.get((result.assignment, result.student), [])))
        except OSError as err:
            summary.warnings.append(f"no feedback for {result.student} ({result.assignment}): {err}")
            continue
        summary.feedback.append(page)
        if not all((page.parent / name).is_file() for name in RELEASE_FILES):
            unreleasable.setdefault(result.assignment, []).append(result.student)
    for assignment, students in unreleasable.items():
        summary.warnings.append(release_feedback_warning(assignment, students))
    return summary


def late_options(course: Course, options: BatchOptions) -> dict[str, Any]:
    """What score-all needs to apply ``options``' late policy to the staged notebooks: each submission's time
    from nbgrader's ``timestamp.txt`` in ``submitted/<student>/<assignment>/`` (grader/classroom/submission_time.py),
    and the extensions by staged name. Nothing without a policy."""
    policy = options.late_policy
    if policy is None:
        return {}
    times: dict[str, Any] = {}
    for assignment, students in course.students.items():
        for student in students:
            found = submission_time(course.submitted / student / assignment)
            if found is not None:
                times[staged_name(assignment, student)] = found.when
    extensions = {staged_name(assignment, student): when for assignment in course.students
                  for student, when in policy.extensions.items()}
    return {"late_policy": replace(policy, extensions=extensions), "submission_times": times}


def assignment_outputs(course: Course, csv_path: Path, reports: dict[str, dict], warnings: list[str],
                       manual: Manual | None = None) -> list[Path]:
    """The class-level outputs of each assignment apart (``kata-grading/<assignment>/grades.csv`` and,
    beside it, its summary): one summary over 03 and 04 would count rows out of 26 under a total of 30.
    ``manual``: what formgrader changed (:func:`record`), applied there as overrides (``kata-grading/grades.csv``
    keeps the autograder's scores, which the gradebook holds as such)."""
    rows = read_grades(csv_path).rows
    written: list[Path] = []
    for assignment in course.students:
        own = {name: row for name, row in rows.items() if name.split(SEPARATOR, 1)[0] == assignment}
        if not own:
            continue
        changed = [o for (group, student), grades in (manual or {}).items() if group == assignment
                   for o in manual_overrides(staged_name(group, student), grades).items]
        if changed:
            own, said = apply_overrides(own, Overrides(course.gradebook, tuple(changed)))
            warnings += said
            own = with_flags(own, lambda name: reports.get(name) or _stored_report(course.work / "json", name))
        sheet = course.work / assignment / "grades.csv"
        sheet.parent.mkdir(exist_ok=True)
        write_grades(sheet, own.values())
        written += write_class_outputs(sheet, {name: report for name, report in reports.items() if name in own},
                                       warnings, course.work / "json", course.work / "intake")
    return written


def release_feedback_warning(assignment: str, students: list[str]) -> str:
    """Feedback that ``nbgrader release_feedback`` cannot release: the submitted/ folder was not made by
    ``nbgrader collect`` (no timestamp.txt or submission_secret.txt beside the notebook). nbgrader 0.9
    reads both for every page and stops with FileNotFoundError at the first that lacks one."""
    names = ", ".join(students)
    return (f"{assignment}: no {' or '.join(RELEASE_FILES)} in the submitted/ folder of {names} (not handed in "
            f"through nbgrader submit and collect): nbgrader release_feedback stops at their pages; hand those "
            f"out another way and release the others with --CourseDirectory.student_id_exclude={','.join(students)}")


def record(course: Course, summary: CourseSummary) -> Manual:
    """Every result into the course's gradebook, with the submission's timestamp; and what formgrader changed
    of each (gradebook.ClassGradebook.manual_grades: nbgrader keeps a manual score over an auto score)."""
    manual: Manual = {}
    for assignment in course.assignments:
        with ClassGradebook(course.gradebook, assignment, must_exist=True) as gb:
            summary.warnings += gb.warnings
            for result in summary.results:
                if result.assignment == assignment:
                    gb.record(result.row, timestamp=_timestamp(course.submitted / result.student / assignment))
                    manual[assignment, result.student] = gb.manual_grades(result.student)
    return manual


def manual_overrides(student: str, grades: list[ManualGrade]) -> Overrides:
    """formgrader's changes of ``student``'s grades as the overrides of grader/classroom/overrides.py (a manual
    score is a value, extra credit a change), by ``formgrader`` (it records no grader's name), its comment why."""
    items = []
    for grade in grades:
        why = (grade.comment or "manual grade in formgrader").replace(";", ",")
        if grade.manual_score is not None:
            items.append(Override(student, grade.column, f"{max(grade.manual_score, 0.0):g}", why, FORMGRADER))
        if grade.extra_credit:
            items.append(Override(student, grade.column, f"{grade.extra_credit:+g}", f"extra credit: {why}", FORMGRADER))
    return Overrides(Path("gradebook.db"), tuple(items))


def _stored_report(json_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        return read_report(json_path(json_dir, name))
    except ValueError:
        return None


def _timestamp(folder: Path) -> Any:
    from nbgrader.utils import parse_utc  # here: nbgrader takes about a second to import

    try:
        return parse_utc((folder / "timestamp.txt").read_text().strip())
    except (OSError, ValueError, OverflowError):
        return None


# --- feedback --------------------------------------------------------------------------------------


def assignment_report(assignment: str, report: dict[str, Any]) -> dict[str, Any]:
    """The part of a report that belongs to ``assignment``: its exercises (and their tests), and the
    GPU-run check in the assignment whose notebook holds its cell; totals over those."""
    own = {ex.id for ex in load_rubric().in_group(assignment)}
    exercises = {ex_id: ex for ex_id, ex in report["exercises"].items() if ex_id in own}
    gpu = report["gpu_check"] if assignment == gpu_group() else None
    parts = [*exercises.values(), *([gpu] if gpu else [])]
    return {"score": sum(p["score"] for p in parts), "max_score": sum(p["max_score"] for p in parts),
            "exercises": exercises, "gpu_check": gpu,
            "tests": [t for t in report.get("tests", []) if t["name"].split(": ", 1)[0] in own]}


def write_feedback(course: Course, result: Graded, visibility: str, late: LatePolicy | None = None,
                   manual: Overrides | None = None) -> Path:
    """``feedback/<student>/<assignment>/<assignment>.html`` and the submission's timestamp and secret
    beside it (what ``nbgrader release_feedback`` reads); returns the html file.

    The folders it creates are the instructor's alone (0700), and so are the timestamp and the secret
    (0600); a new page is 0644 all the same: ``release_feedback`` copies it into the exchange with its
    mode, under a name made from the secret, and the student (another user) reads it there with
    ``nbgrader fetch_feedback``. In the course folder no other user can reach it."""
    folder = course.root / "feedback" / result.student / result.assignment
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{result.assignment}.html"
    shown, _ = apply_overrides({result.student: result.row}, manual)  # formgrader's changes (``manual``)
    row = shown[result.student]
    part = (assignment_report(result.assignment, overridden_report(result.report, row))
            if result.report is not None else None)
    note = row_note(result.row, staged_name(result.assignment, result.student), late)
    if part is not None and note:
        part["score"] = max(0.0, part["score"] - float(result.row[LATE_PENALTY_COLUMN]))
    page = feedback_html(result.assignment, result.student, part, visibility, result.row["message"],
                         [note] * bool(note) + notes(row, manual))
    write_atomically(target, page, new_mode=0o644)
    submitted = course.submitted / result.student / result.assignment
    for name in RELEASE_FILES:
        try:
            data = read_regular(submitted / name, 4095)
        except UnreadableFile:
            continue
        write_atomically(folder / name, data.decode(errors="replace"))
    return target
