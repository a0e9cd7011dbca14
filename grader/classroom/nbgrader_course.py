"""``python -m grader nbgrader COURSE_DIR [--assignment NAME]``: grade an nbgrader course's notebooks
with the isolated grader, instead of ``nbgrader autograde``.

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
   test source), with the ``timestamp.txt`` and ``submission_secret.txt`` that ``nbgrader
   release_feedback`` needs, copied from the submission.

Nothing is written into ``submitted/``.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.rubric import GROUPS, load_rubric

HELP = "grade an nbgrader course's submitted notebooks with the isolated grader (instead of nbgrader autograde)"
# COURSE_DIR/kata-grading: the staged layouts, the CSV and the JSON reports. Not "grader": instructors run
# nbgrader's commands from the course folder, and there a folder named grader would shadow this package
# for `python -m grader` (the current folder comes first on sys.path).
WORK_DIR = "kata-grading"
SEPARATOR = "__"  # <assignment>__<student>: a staged submission's name (no group name holds it)
RELEASE_FILES = ("timestamp.txt", "submission_secret.txt")  # what nbgrader release_feedback reads beside the html


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


# --- the command line ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grader.cli import VISIBILITY_HELP, add_grading_options
    from grader.reports.report import VISIBILITIES

    parser.add_argument("course", type=Path, metavar="COURSE_DIR",
                        help="an nbgrader course folder (gradebook.db, submitted/<student>/<assignment>/)")
    parser.add_argument("--assignment", metavar="NAME", choices=GROUPS,
                        help="grade this assignment only (default: every assignment with submissions)")
    add_grading_options(parser, for_class=True)
    parser.add_argument("--visibility", choices=VISIBILITIES, default="full", help=VISIBILITY_HELP)


def run(args: argparse.Namespace) -> int:
    import signal

    from grader.classroom.score_all import BatchOptions, unescaped
    from grader.cli import UsageError, _raise_interrupt, check_class_isolation, grade_options

    try:
        course = find_course(args.course, args.assignment)
        # Refuse before anything is written. Under uid isolation (no mount namespace) a student's code
        # could otherwise read the course: the other students' notebooks, and the solutions in source/.
        check_class_isolation(args.sandbox, course.root)
        prepare_work_dir(course)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        summary = grade_course(course, BatchOptions(jobs=args.jobs, grading=grade_options(args)), args.visibility,
                               progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    except CourseError as err:
        raise UsageError(str(err)) from None
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for assignment in course.assignments:
        results = [r for r in summary.results if r.assignment == assignment]
        errors = [r for r in results if r.report is None]
        graded = [r for r in results if r.report is not None and r.this_run]
        print(f"{assignment}: graded {len(graded)}, errors {len(errors)}, "
              f"unchanged since an earlier run: {len(results) - len(graded) - len(errors)}", file=sys.stderr)
        for result in errors:
            print(f"  {result.student}: {unescaped(result.row['message'])}", file=sys.stderr)
    print(f"grades in {course.gradebook} (nbgrader export), feedback in {course.root / 'feedback'} "
          "(nbgrader release_feedback)", file=sys.stderr)
    return 0


# --- the course ------------------------------------------------------------------------------------


def find_course(root: Path, assignment: str | None = None) -> Course:
    """The course at ``root`` and the assignments to grade; CourseError when it cannot be graded."""
    from grader.classroom.gradebook import ClassGradebook, GradebookError
    from grader.files import is_real_dir

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
    for group in students:
        try:
            with ClassGradebook(root / "gradebook.db", group, must_exist=True):
                pass  # the course's assignment (GradebookError otherwise): nothing is created
        except GradebookError as err:
            raise CourseError(str(err)) from None
    return Course(root, list(students), students)


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


def stage(course: Course) -> dict[tuple[str, str], str]:
    """Write each notebook's module layout into the intake folder; {(assignment, student): error} for
    the notebooks that cannot be graded (their staged folder is removed)."""
    from grader.authoring.nbgrader_release import notebook_modules
    from grader.classroom.notebook_intake import NotebookError
    from grader.classroom.notebook_intake import notebook_modules as read_modules

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
                files = read_modules(notebook, modules)
            except NotebookError as err:
                errors[(assignment, student)] = str(err)
                continue
            dest = intake / staged_name(assignment, student)
            for group in GROUPS:
                (dest / group).mkdir(parents=True, exist_ok=True)
            for relative, data in files.items():
                (dest / relative).write_bytes(data)
    return errors


def assignment_options(options: Any, assignment: str) -> Any:
    """How a notebook of ``assignment`` is graded (``options``: the command's GradeOptions): on that
    group's exercises, and with the GPU-run check only where its cell is (``--gpu skip`` elsewhere)."""
    from dataclasses import replace

    from grader.authoring.nbgrader_release import gpu_group

    return replace(options, exercises=tuple(ex.id for ex in load_rubric().in_group(assignment)),
                   gpu=options.gpu if assignment == gpu_group() else "skip")


def grade_course(course: Course, options: Any, visibility: str = "full",
                 progress: Callable[[Any], None] | None = None) -> CourseSummary:
    """Stage, grade (grader.classroom.score_all.score_all with ``options``, a BatchOptions, each notebook graded with
    its :func:`assignment_options`), record, write feedback. What it creates is for this user alone
    (grader.classroom.score_all.private_files), but for the feedback pages themselves (see :func:`write_feedback`)."""
    from grader.files import private_files

    with private_files():
        return _grade_course(course, options, visibility, progress)


def _grade_course(course: Course, options: Any, visibility: str,
                  progress: Callable[[Any], None] | None) -> CourseSummary:
    from dataclasses import replace

    from grader.classroom.score_all import BatchError, csv_cell, csv_row, read_grades, score_all, write_grades

    prepare_work_dir(course)
    errors = stage(course)
    csv_path, json_dir = course.work / "grades.csv", course.work / "json"
    staged = {p.name for p in (course.work / "intake").iterdir()}
    try:  # rows of notebooks that are gone or unreadable now must not be kept by the resume
        existing = read_grades(csv_path).rows
    except BatchError:
        existing = {}
    write_grades(csv_path, [row for name, row in existing.items() if name in staged])

    def grading_of(name: str) -> Any:
        return assignment_options(options.grading, name.split(SEPARATOR, 1)[0])

    batch = score_all(course.work / "intake", csv_path, replace(options, json_dir=json_dir, grading_of=grading_of),
                      progress=progress)
    summary = CourseSummary(warnings=list(batch.warnings))
    rows = read_grades(csv_path).rows
    for assignment, students in course.students.items():
        for student in students:
            name = staged_name(assignment, student)
            if (assignment, student) in errors:
                row = csv_row(student, {"error": errors[assignment, student]},
                              grading=assignment_options(options.grading, assignment))
                summary.results.append(Graded(assignment, student, row))
            elif name in rows:
                row = dict(rows[name], student=str(csv_cell(student)))
                report = None
                if row["status"] == "graded":
                    try:
                        report = json.loads((json_dir / f"{name}.json").read_text())
                    except (OSError, ValueError) as err:  # a name score-all could not write a report for
                        row = csv_row(student, {"error": f"no report: {err}"},
                                      grading=assignment_options(options.grading, assignment))
                summary.results.append(Graded(assignment, student, row, report, this_run=name not in batch.skipped))
    record(course, summary)
    unreleasable: dict[str, list[str]] = {}
    for result in summary.results:
        try:
            page = write_feedback(course, result, visibility)
        except OSError as err:
            summary.warnings.append(f"no feedback for {result.student} ({result.assignment}): {err}")
            continue
        summary.feedback.append(page)
        if not all((page.parent / name).is_file() for name in RELEASE_FILES):
            unreleasable.setdefault(result.assignment, []).append(result.student)
    for assignment, students in unreleasable.items():
        summary.warnings.append(release_feedback_warning(assignment, students))
    return summary


def release_feedback_warning(assignment: str, students: list[str]) -> str:
    """Feedback that ``nbgrader release_feedback`` cannot release: the submitted/ folder was not made by
    ``nbgrader collect`` (no timestamp.txt or submission_secret.txt beside the notebook). nbgrader 0.9
    reads both for every page and stops with FileNotFoundError at the first that lacks one."""
    names = ", ".join(students)
    return (f"{assignment}: no {' or '.join(RELEASE_FILES)} in the submitted/ folder of {names} (not handed in "
            f"through nbgrader submit and collect): nbgrader release_feedback stops at their pages; hand those "
            f"out another way and release the others with --CourseDirectory.student_id_exclude={','.join(students)}")


def record(course: Course, summary: CourseSummary) -> None:
    """Every result into the course's gradebook, with the submission's timestamp."""
    from grader.classroom.gradebook import ClassGradebook

    for assignment in course.assignments:
        with ClassGradebook(course.gradebook, assignment, must_exist=True) as gb:
            summary.warnings += gb.warnings
            for result in summary.results:
                if result.assignment == assignment:
                    gb.record(result.row, timestamp=_timestamp(course.submitted / result.student / assignment))


def _timestamp(folder: Path) -> Any:
    from nbgrader.utils import parse_utc

    try:
        return parse_utc((folder / "timestamp.txt").read_text().strip())
    except (OSError, ValueError, OverflowError):
        return None


# --- feedback --------------------------------------------------------------------------------------


def assignment_report(assignment: str, report: dict[str, Any]) -> dict[str, Any]:
    """The part of a report that belongs to ``assignment``: its exercises (and their tests), and the
    GPU-run check in the assignment whose notebook holds its cell; totals over those."""
    from grader.authoring.nbgrader_release import gpu_group

    own = {ex.id for ex in load_rubric().in_group(assignment)}
    exercises = {ex_id: ex for ex_id, ex in report["exercises"].items() if ex_id in own}
    gpu = report["gpu_check"] if assignment == gpu_group() else None
    parts = [*exercises.values(), *([gpu] if gpu else [])]
    return {"score": sum(p["score"] for p in parts), "max_score": sum(p["max_score"] for p in parts),
            "exercises": exercises, "gpu_check": gpu,
            "tests": [t for t in report.get("tests", []) if t["name"].split(": ", 1)[0] in own]}


def feedback_html(result: Graded, visibility: str) -> str:
    """The feedback page of one student and assignment (everything from the student's own report)."""
    from grader.classroom.score_all import unescaped
    from grader.reports.feedback import sections
    from grader.reports.report import gpu_line, wrap

    e = html.escape
    title = f"{result.assignment}: feedback for {result.student}"
    body = [f"<h1>{e(title)}</h1>"]
    if result.report is None:
        body.append(f"<p>This notebook could not be graded: {e(unescaped(result.row['message']))}</p>")
    else:
        part = assignment_report(result.assignment, result.report)
        body += [f"<p><strong>Total: {part['score']:g} / {part['max_score']:g}</strong></p>",
                 "<table><tr><th>exercise</th><th>score</th><th>status</th></tr>"]
        for ex_id, ex in part["exercises"].items():
            body.append(f"<tr><td><code>{e(ex_id)}</code></td><td>{ex['score']:g} / {ex['max_score']:g}</td>"
                        f"<td>{e(ex['status'])}</td></tr>")
        body.append("</table>")
        if part["gpu_check"] is not None:
            body += ["<h2>The GPU-run check</h2>", f"<pre>{e(wrap(gpu_line(part['gpu_check'], visibility)))}</pre>"]
        for section in sections(part, visibility):
            body.append(f"<h2><code>{e(section.exercise)}</code>: {section.score:g} / {section.max_score:g}</h2>")
            if section.summary:
                body.append(f"<p>{e(section.summary)}</p>")
            for test in section.failing:
                body.append(f"<h3><code>{e(test.name)}</code>: {test.score:g} / {test.max_score:g}</h3>")
                if test.message:
                    body.append(f"<pre>{e(wrap(test.message))}</pre>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + e(title) + "</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}pre{background:#f4f4f4;padding:.5em;"
            "white-space:pre-wrap}td,th{padding:.2em .8em;text-align:left}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_feedback(course: Course, result: Graded, visibility: str) -> Path:
    """``feedback/<student>/<assignment>/<assignment>.html`` and the submission's timestamp and secret
    beside it (what ``nbgrader release_feedback`` reads); returns the html file.

    The folders it creates are the instructor's alone (0700), and so are the timestamp and the secret
    (0600); a new page is 0644 all the same: ``release_feedback`` copies it into the exchange with its
    mode, under a name made from the secret, and the student (another user) reads it there with
    ``nbgrader fetch_feedback``. In the course folder no other user can reach it."""
    from grader.files import write_atomically
    from grader.files import UnreadableFile, read_regular

    folder = course.root / "feedback" / result.student / result.assignment
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{result.assignment}.html"
    write_atomically(target, feedback_html(result, visibility), new_mode=0o644)
    submitted = course.submitted / result.student / result.assignment
    for name in RELEASE_FILES:
        try:
            data = read_regular(submitted / name, 4095)
        except UnreadableFile:
            continue
        write_atomically(folder / name, data.decode(errors="replace"))
    return target
