"""Record grades in nbgrader's gradebook, so ``nbgrader export`` (and formgrader) list them.

Why nbgrader's gradebook: instructors who already run an nbgrader course keep one database of
grades; the command-line kata is graded by ``python -m grader score-all``, and this module writes
its rows there as auto-scores, one student at a time (``score-all`` records each row as it writes
it, and every row of its CSV again when it resumes).

    with ClassGradebook(Path("gradebook.db"), "attention-kata") as gb:
        gb.record(csv_row)                       # a row of score-all's CSV (grader.classroom.grades_sheet.csv_row)

Two layouts, chosen by what the assignment already holds:

- the course of ``python -m grader release`` (``OUT/nbgrader/gradebook.db`` after ``nbgrader
  generate_assignment <group>``): an assignment per group (``03_causal``), whose notebook of the same
  name holds one grade cell per exercise of the group, named ``<module>_tests`` (``causal_mask_tests``),
  and in ``04_multihead`` a grade cell ``gpu_check``. Each of the assignment's exercises gets its score
  in its cell (a row's other exercises are not this assignment's and are left out), the GPU-run check
  its points in ``gpu_check`` where the assignment has that cell; nothing is added to the course and no
  max score is changed. (An older course with every group's notebook in one assignment is the same
  case with every exercise; without a ``gpu_check`` cell the check's points stay in the CSV, with a
  warning.) ``python -m grader nbgrader`` (grader/classroom/nbgrader_course.py) records its grades this way,
  and so does ``score-all --gradebook OUT/nbgrader/gradebook.db --assignment 03_causal``.
- otherwise (a new gradebook, a new assignment, or one this module made): one notebook,
  ``attention-kata``, whose grade cells are named after the exercise ids with ``/`` replaced by
  ``__`` (``03_causal__causal_mask``, since nbgrader cell names must be identifier-like) plus
  ``gpu_check``; the exercises' max scores are the rubric's, the GPU-run check's is the one of the
  last graded row (0 under ``--gpu skip``, as in the report).

An assignment that is neither (another course's) is refused: GradebookError, nothing written.
An ``error`` row records 0 in every cell and its reason as the autograder comment of the
exercises' solution cells (in the kata layout, of one solution cell named ``grader``); a later
graded row clears that comment. Recording a student again updates the scores in place.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import warnings
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from grader.authoring.nbgrader_release import gpu_group
from grader.classroom.grades_sheet import LATE_PENALTY_COLUMN
from grader.classroom.overrides import without_overrides
from grader.files import private_files
from grader.rubric import load_rubric

# nbgrader is imported where it is used: it takes about a second, and a student install lacks it.

NOTEBOOK = "attention-kata"
GPU_CELL = "gpu_check"
COMMENT_CELL = "grader"  # the kata layout's solution cell that holds an error row's reason
COMMENT_PREFIX = "attention-kata score-all: "  # marks the comments this module writes (and may clear)


class GradebookError(Exception):
    """The gradebook cannot take this kata's grades (one line for the instructor)."""


def cell_name(exercise_id: str) -> str:
    """``03_causal/causal_mask`` -> ``03_causal__causal_mask`` (a valid nbgrader cell name)."""
    return exercise_id.replace("/", "__")


def course_cell(exercise_id: str) -> tuple[str, str]:
    """(notebook, grade cell) of an exercise in the course of grader/authoring/release.py:
    ``03_causal/causal_mask`` -> ``("03_causal", "causal_mask_tests")``."""
    group, module = exercise_id.split("/")
    return group, f"{module}_tests"


@dataclass(frozen=True)
class ManualGrade:
    """A grade a person changed in formgrader: the CSV column it is (an exercise id, ``gpu_check``), the
    manual score (None: the autograder's stands), the extra credit and formgrader's comment."""

    column: str
    manual_score: float | None
    extra_credit: float
    comment: str


@dataclass
class _Layout:
    kind: str  # "course" | "kata"
    cells: dict[str, tuple[str, str]]  # CSV column (exercise id, gpu_check) -> (notebook, grade cell)
    comments: list[tuple[str, str]]  # (notebook, solution cell) that get an error row's reason


def ensure_alembic_on_path() -> None:
    """This interpreter's bin folder on PATH: nbgrader's Gradebook asks the ``alembic`` command for the
    schema version of a new database (unless stamp_new_gradebook did), and it must come from this
    interpreter's environment, which may not be on PATH (a venv not activated)."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def nbgrader_schema_head() -> str | None:
    """The revision ``alembic heads`` names for nbgrader's own migrations, read from their scripts
    (None when they do not name exactly one head)."""
    import nbgrader

    revisions, replaced = set(), set()
    for script in (Path(nbgrader.__file__).parent / "alembic" / "versions").glob("*.py"):
        text = script.read_text(encoding="utf-8", errors="replace")
        revision = re.search(r"^revision = ['\"](\w+)['\"]", text, re.M)
        down = re.search(r"^down_revision = ['\"](\w+)['\"]", text, re.M)
        if revision:
            revisions.add(revision.group(1))
        if down:
            replaced.add(down.group(1))
    heads = revisions - replaced
    return heads.pop() if len(heads) == 1 else None


def stamp_new_gradebook(db_path: Path) -> None:
    """Write a new database's schema version, as nbgrader would, before nbgrader opens it.

    nbgrader's Gradebook learns that version, a constant of its own package, by running the ``alembic``
    command: a second Python process of about 5 s for every new gradebook. The stamp is the same
    revision (grader/tests/test_gradebook.py compares them); with it nbgrader creates its tables
    without asking. Anything unexpected leaves the database to nbgrader alone. (The tests stamp the
    gradebooks they have nbgrader's own API create.)"""
    head = nbgrader_schema_head()
    if head is None or db_path.exists():
        return
    try:
        with closing(sqlite3.connect(db_path)) as db, db:
            db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            db.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))
    except sqlite3.Error:
        db_path.unlink(missing_ok=True)


class ClassGradebook:
    """An open gradebook and assignment, ready to record score-all rows one by one."""

    def __init__(self, db_path: Path, assignment: str, *, must_exist: bool = False):
        if not assignment:
            raise GradebookError("an nbgrader assignment name is needed (--assignment)")
        ensure_alembic_on_path()
        if not must_exist:  # must_exist creates nothing, not even the file
            with private_files():  # grades of other people: a new gradebook is for this user alone
                stamp_new_gradebook(Path(db_path))
        from nbgrader.api import Gradebook

        self.assignment = assignment
        self.must_exist = must_exist  # refuse (GradebookError) an assignment that is not the course's, create nothing
        self.warnings: list[str] = []
        self._rubric = load_rubric()
        self._warnings_filter = warnings.catch_warnings()
        self._warnings_filter.__enter__()
        # nbgrader 0.9's add_submission trips SQLAlchemy 2's autoflush warnings; the rows are right.
        warnings.filterwarnings("ignore", message=r".*not in session.*")
        try:
            with private_files():  # (what nbgrader creates, where it was not stamped above)
                self.gb = Gradebook(f"sqlite:///{Path(db_path).resolve()}")
        except Exception as err:  # not SQLite, or another program's database
            self._warnings_filter.__exit__(None, None, None)
            raise GradebookError(f"{db_path}: not an nbgrader gradebook ({type(err).__name__}: "
                                 f"{str(err).splitlines()[0] if str(err) else ''})") from None
        try:
            self.layout = self._layout()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "ClassGradebook":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.gb is not None:
            self.gb.close()
            self.gb = None
            self._warnings_filter.__exit__(None, None, None)

    # --- which layout ------------------------------------------------------------------------------

    def _layout(self) -> _Layout:
        from nbgrader.api import MissingEntry

        exercises = self._rubric.exercises
        try:
            assignment = self.gb.find_assignment(self.assignment)
        except MissingEntry:
            if self.must_exist:
                raise GradebookError(f"the gradebook has no assignment {self.assignment!r}: run nbgrader "
                                     f"generate_assignment {self.assignment} first") from None
            assignment = None
        notebooks = {nb.name: nb for nb in assignment.notebooks} if assignment is not None else {}
        grade_cells = {(nb.name, cell.name) for nb in notebooks.values() for cell in nb.grade_cells}
        groups = {ex.group for ex in exercises.values()}
        if notebooks and set(notebooks) <= groups and all(
                course_cell(ex_id) in grade_cells for ex_id, ex in exercises.items() if ex.group in notebooks):
            return self._course_layout(notebooks, grade_cells)
        return self._kata_layout(notebooks)

    def _course_layout(self, notebooks: dict, grade_cells: set) -> _Layout:
        """The course of ``python -m grader release``: its own grade cells, one notebook per group, whose
        max scores stay the course's (a difference from the rubric is a warning)."""
        exercises = self._rubric.exercises
        covered = {ex_id: ex for ex_id, ex in exercises.items() if ex.group in notebooks}
        cells = {ex_id: course_cell(ex_id) for ex_id in covered}
        max_scores = {(nb.name, cell.name): cell.max_score for nb in notebooks.values() for cell in nb.grade_cells}
        differ = [f"{ex_id} ({max_scores[cells[ex_id]]:g} there, {ex.points:g} in the rubric)"
                  for ex_id, ex in covered.items() if max_scores[cells[ex_id]] != ex.points]
        if differ:
            self.warnings.append(f"the nbgrader course's max scores differ from the rubric's, and stay: "
                                 f"{', '.join(differ)}")
        gpu = sorted(key for key in grade_cells if key[1] == GPU_CELL)
        if gpu:
            cells[GPU_CELL] = gpu[0]
        elif gpu_group() in notebooks:
            self.warnings.append(
                f"the nbgrader course's assignment {self.assignment!r} has no grade cell for the GPU-run check: "
                "its points are in the CSV, not in the gradebook (whose max scores stay the course's)")
        solution_cells = {(nb.name, cell.name) for nb in notebooks.values() for cell in nb.solution_cells}
        comments = [(ex.group, ex.module) for ex in covered.values() if (ex.group, ex.module) in solution_cells]
        return _Layout("course", cells, comments)

    def _kata_layout(self, notebooks: dict) -> _Layout:
        """The layout one score-all makes: a notebook of its own, one grade cell per exercise and the GPU-run
        check, created (or completed) here before anyone is recorded."""
        gb, exercises = self.gb, self._rubric.exercises
        if self.must_exist:  # nothing is created in an assignment nbgrader has not generated
            raise GradebookError(f"assignment {self.assignment!r} of the gradebook has no notebook of this kata's "
                                 f"course: run nbgrader generate_assignment {self.assignment} first")
        if set(notebooks) - {NOTEBOOK}:
            raise GradebookError(
                f"assignment {self.assignment!r} of the gradebook has notebooks {', '.join(sorted(notebooks))}: "
                f"neither the course of 'python -m grader release' nor one score-all made; "
                f"choose another --assignment")
        gb.update_or_create_assignment(self.assignment)
        if NOTEBOOK not in notebooks:
            gb.add_notebook(NOTEBOOK, self.assignment)
        existing = {cell.name: cell for cell in gb.find_notebook(NOTEBOOK, self.assignment).grade_cells}
        for ex_id, ex in exercises.items():
            cell = existing.get(cell_name(ex_id))
            if cell is None or cell.max_score != ex.points:
                gb.update_or_create_grade_cell(cell_name(ex_id), NOTEBOOK, self.assignment, max_score=ex.points,
                                               cell_type="code")
        if GPU_CELL not in existing:
            gb.update_or_create_grade_cell(GPU_CELL, NOTEBOOK, self.assignment, max_score=self._rubric.gpu_points,
                                           cell_type="code")
        gb.update_or_create_solution_cell(COMMENT_CELL, NOTEBOOK, self.assignment)
        cells = {ex_id: (NOTEBOOK, cell_name(ex_id)) for ex_id in exercises}
        cells[GPU_CELL] = (NOTEBOOK, GPU_CELL)
        return _Layout("kata", cells, [(NOTEBOOK, COMMENT_CELL)])

    # --- recording ---------------------------------------------------------------------------------

    def record(self, row: Mapping[str, Any], timestamp: Any = None) -> None:
        """Record one row of score-all's CSV (plain text, as grader.classroom.grades_sheet.csv_row and read_grades give it);
        ``timestamp`` (a datetime), when given, becomes the submission's; the row's ``late_penalty`` (the late
        policy's, grader/classroom/late_policy.py) becomes its first notebook's ``late_submission_penalty``,
        which ``nbgrader export`` and formgrader take off the sum of the cells, as ``nbgrader autograde``'s
        LateSubmissionPlugin would have (autograde does not run here)."""
        student = str(row["student"])
        graded = row["status"] == "graded"
        gb = self.gb
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(self.assignment, student,
                                                    **({"timestamp": timestamp} if timestamp else {}))
        penalty = self._penalty(row)  # nbgrader export: score = cells' sum - penalty
        for i, notebook in enumerate(sorted(submission.notebooks, key=lambda nb: nb.name)):
            notebook.late_submission_penalty = (penalty or None) if i == 0 else None
        if graded and self.layout.kind == "kata":
            gpu_max = max(0.0, _number(row["max_score"]) - sum(ex.points for ex in self._rubric.exercises.values()))
            cell = gb.find_grade_cell(GPU_CELL, NOTEBOOK, self.assignment)
            if cell.max_score != gpu_max:
                cell.max_score = gpu_max
        for column, (notebook, cell) in self.layout.cells.items():
            grade = self._grade(notebook, cell, student)
            grade.auto_score = _number(row[column]) if graded else 0.0
            grade.needs_manual_grade = False
        reason = None if graded else COMMENT_PREFIX + (str(row["message"]) or "not graded")
        for notebook, cell in self.layout.comments:
            comment = self._comment(notebook, cell, student)
            if reason is not None or (comment.auto_comment or "").startswith(COMMENT_PREFIX):
                comment.auto_comment = reason
        gb.db.commit()

    def _penalty(self, row: Mapping[str, Any]) -> float:
        """The row's late penalty in this assignment: the same share of what its cells hold as the policy took of
        the row's graded score (a score-all row holds every exercise; the course's 03_causal, three of them)."""
        taken = _number(row.get(LATE_PENALTY_COLUMN) or 0)
        graded = without_overrides(row)
        earned = _number(graded["score"]) + taken
        if not taken or earned <= 0:
            return 0.0
        return round(taken * sum(_number(graded.get(column) or 0) for column in self.layout.cells) / earned, 4)

    def manual_grades(self, student: str) -> list[ManualGrade]:
        """What a person changed in formgrader of ``student``'s grades of this assignment: each cell of the
        layout whose ``manual_score`` differs from the autograder's, or that holds ``extra_credit`` (nbgrader's
        score of a cell: the manual score, else the auto score, plus the extra credit), with formgrader's
        comment on the exercise's solution cell (nbgrader records no grader's name)."""
        from nbgrader.api import MissingEntry

        try:
            submission = self.gb.find_submission(self.assignment, student)
        except MissingEntry:
            return []
        columns = {cell: column for column, cell in self.layout.cells.items()}
        notebooks = list(submission.notebooks)
        comments = {(nb.name, comment.name): comment.manual_comment or "" for nb in notebooks for comment in nb.comments}
        found = []
        for nb in notebooks:
            for grade in nb.grades:
                column = columns.get((nb.name, grade.name))
                manual = grade.manual_score if grade.manual_score != grade.auto_score else None
                if column is None or (manual is None and not grade.extra_credit):
                    continue
                comment = comments.get((nb.name, column.rsplit("/", 1)[-1]), "")
                found.append(ManualGrade(column, manual, grade.extra_credit or 0.0, " ".join(comment.split())))
        return sorted(found, key=lambda g: g.column)

    def _find_or_add(self, find: Callable[[], Any], make: Callable[[], Any]) -> Any:
        """``find()``'s row, or ``make()``'s, added to the database, where nbgrader has none (a notebook or
        cell added to the course after the student's submission was first recorded)."""
        from nbgrader.api import MissingEntry

        try:
            return find()
        except MissingEntry:
            row = make()
            self.gb.db.add(row)
            return row

    def _notebook(self, notebook: str, student: str) -> Any:
        """The student's submitted ``notebook``."""
        from nbgrader.api import SubmittedNotebook

        return self._find_or_add(
            lambda: self.gb.find_submission_notebook(notebook, self.assignment, student),
            lambda: SubmittedNotebook(notebook=self.gb.find_notebook(notebook, self.assignment),
                                      assignment=self.gb.find_submission(self.assignment, student)))

    def _grade(self, notebook: str, cell: str, student: str) -> Any:
        """The student's grade of ``cell``."""
        from nbgrader.api import Grade

        return self._find_or_add(
            lambda: self.gb.find_grade(cell, notebook, self.assignment, student),
            lambda: Grade(cell_id=self.gb.find_grade_cell(cell, notebook, self.assignment).id,
                          notebook=self._notebook(notebook, student)))

    def _comment(self, notebook: str, cell: str, student: str) -> Any:
        """The student's comment on solution ``cell``."""
        from nbgrader.api import Comment

        return self._find_or_add(
            lambda: self.gb.find_comment(cell, notebook, self.assignment, student),
            lambda: Comment(cell_id=self.gb.find_solution_cell(cell, notebook, self.assignment).id,
                            notebook=self._notebook(notebook, student)))


def _number(cell: Any) -> float:
    try:
        return float(cell)
    except ValueError:
        return 0.0

