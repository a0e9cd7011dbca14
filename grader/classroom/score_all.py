"""``score-all``: grade a whole class, in parallel, resumably, one CSV row per student.

The parent process never imports torch or runs student code: it lists the students
(grader.classroom.roster), hands them to N long-lived job processes (grader.classroom.jobs) and writes
each result as it arrives. A job imports torch once and grades its students one after another in
isolated workers. A job that crashes or exceeds a student's time limit is killed and replaced; that
student becomes a row with status ``error`` and the reason, and the batch goes on.

Nothing lost, nothing stale: each student's results are written as soon as they arrive, in this
order: the JSON report (``--json-dir``), the feedback (``--feedback-dir``; an error row's says why), the
CSV row (flushed and synced), the gradebook row (``--gradebook``, committed). A run that writes no
feedback file at all (every row kept from an earlier run) says so in a warning, which names the command
that writes the kept students' feedback from their JSON reports (``python -m grader feedback``).

A run that starts over an existing CSV (a resume) keeps a row only when the student is still graded
(``status`` ``graded``), their submission's content hash (``submission_sha256``) is unchanged, their JSON
report is there (with ``--json-dir``) and ``--only`` does not name them; everyone else is graded again.
A row it would keep that was graded under another provenance key (``graded_by``: another rubric, hidden
tests, grader, torch or grading options; grader.classroom.provenance) is refused, saying what changed,
or with ``regrade_stale`` graded again: a CSV never holds two gradings. Each row is stamped with the
run's key and its time; the whole key goes to ``<csv>.provenance.json``. The run holds the CSV's lock
(grader.classroom.sheet_lock) from before it reads the CSV to the end, so a second run is refused. A last row cut
short (a kill mid-write) is dropped, never joined with the next one. Rows of students no longer in
the folder (or outside this ``--shard``) are kept, with a warning. The CSV (grader.classroom.grades_sheet)
is rewritten, atomically, sorted by student name (code point order), when the run starts and when it
ends; in between, rows are appended as students finish. Every row kept is written into the gradebook
again at the start, so the gradebook lists every student of the CSV even after a kill between the two
writes. At the end, the class-level outputs (grader.classroom.class_outputs: the class summary) are
written beside the CSV.

``--shard K/N`` grades the students whose name hashes to K (see ``grader.classroom.roster.in_shard``):
N disjoint slices that do not depend on which other students exist; ``grader.classroom.merge`` puts
shards back together.
"""

from __future__ import annotations

import json
import os
import select
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping

from grader.blind_ids import BlindIds
from grader.classroom.class_outputs import write_class_outputs
from grader.classroom.final_grades import Shown, finish, held_and_checked  # overrides, regrade log
from grader.classroom.gradebook import ClassGradebook
from grader.classroom.grades_sheet import (GRADED_BY_COLUMN, HASH_COLUMN, CsvContent, SheetError, append_grade,
                                           csv_row, json_path, read_grades, write_grades)
from grader.classroom.jobs import Job
from grader.classroom.late_policy import LatePolicy, LatePolicyError
from grader.classroom.late_policy import check_held as check_late_held
from grader.classroom.overrides import OverrideError, Overrides, rows_without_overrides
from grader.classroom.provenance import Provenance, current, record_key, stale_reason, stale_refusal, stamp
from grader.classroom.roster import in_shard, list_students, submission_hash
from grader.classroom.sheet_lock import SheetBusy, take_lock
from grader.classroom.submission_time import submission_times
from grader.files import private_files, write_atomically
from grader.grading.options import GradeOptions
from grader.reports.feedback import write_error_feedback, write_feedback
from grader.safe_text import escape_line, printable

STUDENT_TIME_LIMIT = 600.0  # seconds for one student, whatever happens inside


class BatchError(Exception):
    """score-all cannot start (an existing CSV it must not overwrite, a student --only names that is
    not there, ...): one line for the instructor, nothing graded."""


@dataclass(frozen=True)
class BatchOptions:
    jobs: int
    grading: GradeOptions = GradeOptions()  # how each student is graded (limits, sandbox, GPU-run check)
    force: bool = False
    json_dir: Path | None = None
    student_time_limit: float = STUDENT_TIME_LIMIT
    only: frozenset[str] | None = None  # grade these students (again), keep everyone else's row
    shard: tuple[int, int] | None = None  # (K, N): the K-th of N slices, 1 <= K <= N
    feedback_dir: Path | None = None  # grader.reports.feedback's file per student graded (or in error) this run
    visibility: str = "full"
    gradebook: Path | None = None  # an nbgrader gradebook (sqlite file) written row by row
    assignment: str | None = None
    job_argv: tuple[str, ...] | None = None  # the job command (tests); default: grader.classroom.jobs's
    # How each student is graded, where not all alike (grader nbgrader: each staged notebook is graded
    # on its assignment's exercises); the sandbox is always ``grading``'s.
    grading_of: Callable[[str], GradeOptions] | None = None
    # Rows graded under another provenance key (grader.classroom.provenance) are graded again (False: refused)
    regrade_stale: bool = False
    blind: BlindIds | None = None  # blind grading: the feedback and the summary name students by an opaque id
    overrides: Overrides | None = None  # applied at the end of the run (grader/classroom/final_grades.py)
    late_policy: LatePolicy | None = None  # applied at the end of the run, before the overrides (final_grades.py)
    # The submission times by student where the folder graded does not hold them (grader nbgrader: the
    # timestamp.txt of submitted/, not the staged copies); None: read from the folder (submission_time.py)
    submission_times: Mapping[str, datetime] | None = None
    class_outputs: bool = True  # False: the caller writes them (grader nbgrader: one set per assignment)

    def grading_for(self, student: str) -> GradeOptions:
        return self.grading if self.grading_of is None else self.grading_of(student)


@dataclass
class BatchSummary:
    graded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rows kept from an earlier run
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # the JSON reports of this run
    outputs: list[Path] = field(default_factory=list)  # what the class-level outputs wrote
    feedback: list[Path] = field(default_factory=list)  # the feedback files this run wrote


@dataclass(frozen=True)
class Progress:
    """One graded student, for the progress line: ``[3/32] alice: 90.0/100.0 (elapsed 0:12, about
    1:58 left, 1 error so far)``."""

    done: int
    total: int
    student: str
    outcome: str
    elapsed: float
    errors: int

    @property
    def remaining(self) -> float | None:
        """Seconds left at this run's pace so far (None before the first student)."""
        return self.elapsed / self.done * (self.total - self.done) if self.done else None

    def line(self) -> str:
        left = "" if self.remaining is None else f", about {_duration(self.remaining)} left"
        errors = f"{self.errors} error{'s' if self.errors != 1 else ''} so far"
        return (f"[{self.done}/{self.total}] {printable(self.student)}: {printable(self.outcome)} "
                f"(elapsed {_duration(self.elapsed)}{left}, {errors})")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


# --- the plan: who is graded, which rows stay -----------------------------------------------------


@dataclass
class _Plan:
    kept: dict[str, dict[str, str]]  # rows of the existing CSV that stay
    queue: list[tuple[str, Path]]  # the students to grade, by name
    hashes: dict[str, str]
    warnings: list[str]
    provenance: Provenance  # what grades this run's rows


def plan(folder: Path, csv_path: Path, options: BatchOptions) -> _Plan:
    """Who is graded and which rows stay (see the module docstring). BatchError: nothing can start."""
    students, warnings = list_students(folder)
    if options.only is not None:
        missing = sorted(options.only - set(students))
        if missing:
            raise BatchError(f"--only: no submission in {folder} for {', '.join(map(repr, missing))}")
        outside = sorted(name for name in options.only if not in_shard(name, options.shard))
        if outside:
            raise BatchError(f"--only: {', '.join(map(repr, outside))} not in shard {options.shard[0]}/{options.shard[1]}")
    selected = {name: path for name, path in students.items() if in_shard(name, options.shard)}
    try:
        existing = CsvContent() if options.force else read_grades(csv_path)
        existing.rows = rows_without_overrides(existing.rows)  # overrides: applied anew at the end
    except (SheetError, OverrideError) as err:
        raise BatchError(str(err)) from None
    warnings += existing.warnings
    hashes: dict[str, str] = {}
    kept: dict[str, dict[str, str]] = {}
    for name, row in existing.rows.items():
        if name not in selected:
            where = "not in this shard" if name in students else f"no submission in {folder} any more"
            warnings.append(f"kept the row of {printable(name)}: {where}")
            kept[name] = row
        elif options.only is not None and name not in options.only:
            kept[name] = row
        elif options.only is None:
            hashes[name] = submission_hash(selected[name])
            if _still_valid(name, row, hashes[name], options):
                kept[name] = row
    now = current(options.grading)
    wanted = set(options.only) if options.only is not None else set(selected)
    wanted |= _drop_stale(kept, set(selected), now, csv_path, options, warnings)
    queue = [(name, path) for name, path in selected.items() if name in wanted and name not in kept]
    for name, path in queue:
        if name not in hashes:
            hashes[name] = submission_hash(path)
    return _Plan(kept, queue, hashes, warnings, now)


def _drop_stale(kept: dict[str, dict[str, str]], selected: set[str], now: Provenance, csv_path: Path,
                options: BatchOptions, warnings: list[str]) -> set[str]:
    """Never a CSV of two gradings: the rows ``kept`` graded under another key than ``now``'s are refused
    (BatchError saying what changed), or with ``regrade_stale`` taken out of ``kept``: the students of
    this run (``selected``) among them are returned, to be graded again, and the others' rows dropped."""
    stale = {name: row[GRADED_BY_COLUMN] for name, row in kept.items() if row[GRADED_BY_COLUMN] != now.key}
    if not stale:
        return set()
    if not options.regrade_stale:
        raise BatchError(stale_refusal(csv_path, stale, now))
    warnings.append(f"grading again (--regrade-stale): {stale_reason(csv_path, stale, now)}")
    for name in sorted(stale):
        del kept[name]
        if name not in selected:
            warnings.append(f"dropped the row of {printable(name)}: graded under another key, and not graded by this run")
    return set(stale) & selected


def _still_valid(name: str, row: Mapping[str, str], sha256: str, options: BatchOptions) -> bool:
    if row["status"] != "graded" or row[HASH_COLUMN] != sha256:
        return False
    if options.json_dir is not None:
        try:
            return json_path(options.json_dir, name).is_file()
        except ValueError:
            return True  # no JSON can be written for this name: grading again changes nothing
    return True


# --- the run -----------------------------------------------------------------------------------------


def score_all(folder: Path, csv_path: Path, options: BatchOptions,
              progress: Callable[[Progress], None] | None = None) -> BatchSummary:
    """Grade the students of ``folder`` into ``csv_path`` (see the module docstring).

    BatchError (nothing graded): an existing CSV that is not ours (without ``force``), an
    ``only`` naming no submission, rows graded under another provenance key (without ``force`` or
    ``regrade_stale``), another run holding the CSV's lock (grader.classroom.sheet_lock, held for
    the whole run). grader.classroom.gradebook.GradebookError: the gradebook's assignment is
    neither this kata's course nor one score-all made.

    What it writes (CSV, JSON reports, feedback, gradebook, class summary) is for this user alone
    (:func:`private_files`).
    """
    with private_files():
        try:
            lock = take_lock(csv_path, "score-all")
        except SheetBusy as err:
            raise BatchError(str(err)) from None
        with lock:
            return _score_all(folder, csv_path, options, progress)


def _score_all(folder: Path, csv_path: Path, options: BatchOptions,
               progress: Callable[[Progress], None] | None) -> BatchSummary:
    started = time.monotonic()
    try:  # what the CSV holds, for the regrade log; refused: overrides or penalties held but not given, ...
        held = held_and_checked(csv_path, options.overrides, set(list_students(folder)[0]), str(folder))
        check_late_held(held, csv_path, options.late_policy is not None)
    except (OverrideError, LatePolicyError) as err:
        raise BatchError(str(err)) from None
    work = plan(folder, csv_path, options)
    record_key(csv_path, work.provenance.key, work.provenance.describe())
    summary = BatchSummary(warnings=work.warnings, skipped=sorted(work.kept))
    for out_dir in (options.json_dir, options.feedback_dir):
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
    # the jobs import torch while the gradebook opens (nbgrader takes seconds too)
    jobs = [Job(options.grading, options.job_argv) for _ in range(max(1, min(options.jobs, len(work.queue))))
            ] if work.queue else []

    def graded(student: str, row: Mapping[str, str]) -> None:
        if progress is not None:
            outcome = (f"{row['score']}/{row['max_score']}" if row["status"] == "graded"
                       else f"error: {row['message']}")
            progress(Progress(len(summary.graded) + len(summary.errors), len(work.queue), student, outcome,
                              time.monotonic() - started, len(summary.errors)))

    finished = False
    try:
        _write_rows(csv_path, work, options, summary, jobs, graded)
        finished = True
    finally:
        if not finished:  # interrupted, or refused before grading: no one waits for a job's current student
            for job in jobs:
                job.stop()  # all of them end at once, each taking down what it started
        for job in jobs:
            if finished:
                job.close()
            else:
                job.kill()
    regraded = ("regrade (--only)" if options.only is not None else "regrade (--force)" if options.force else
                "regrade (--regrade-stale)" if options.regrade_stale else "regrade")
    times = (options.submission_times if options.submission_times is not None
             else submission_times(folder, options.late_policy, summary.warnings,
                                   {*work.kept, *(name for name, _ in work.queue)}))  # this CSV's (shard's)
    shown = Shown(summary.reports, options.json_dir, options.feedback_dir, options.visibility, options.gradebook,
                  options.assignment, blind=options.blind)
    summary.warnings += finish(csv_path, held, options.overrides, regraded, shown, options.late_policy, times)
    summary.feedback += [path for path in shown.written if path not in summary.feedback]  # final grades changed
    if options.class_outputs:
        summary.outputs = write_class_outputs(csv_path, summary.reports, summary.warnings, options.json_dir, folder,
                                              options.blind)
    if options.feedback_dir is not None and not summary.feedback:
        summary.warnings.append(no_feedback_warning(options, len(work.kept), csv_path))
    return summary


def no_feedback_warning(options: BatchOptions, kept: int, csv_path: Path) -> str:
    """The one line of a run with ``--feedback-dir`` that wrote no feedback file (a resume writes none for the rows
    it keeps); its way on shows the final grades (overrides, penalties: the rescore's, not ``feedback``'s)."""
    where, json_dir = printable(str(options.feedback_dir)), printable(str(options.json_dir))
    if not kept:
        return f"no feedback file written to {where}: no student was graded"
    final = options.overrides is not None or options.late_policy is not None
    again = ("--force grades them again" if options.json_dir is None else
             f"python -m grader rescore {json_dir} --csv {printable(str(csv_path))} --feedback-dir {where}, with the "
             "same --overrides and --late-policy, writes theirs with the final grades" if final else
             f"python -m grader feedback {json_dir} --feedback-dir {where} writes theirs")
    return f"no feedback file written to {where}: all {kept} rows were kept from an earlier run ({again})"


def _write_rows(csv_path: Path, work: _Plan, options: BatchOptions, summary: BatchSummary, jobs: list[Job],
                graded: Callable[[str, Mapping[str, str]], None]) -> None:
    """The CSV and the gradebook: the rows kept, then each student's row as their result arrives
    (``graded`` is told of it), then the whole CSV again, sorted, however the run ends."""
    gradebook = None
    if options.gradebook is not None:
        gradebook = ClassGradebook(options.gradebook, options.assignment or "")  # may refuse: nothing written
        summary.warnings += gradebook.warnings
    rows = dict(work.kept)
    paths = dict(work.queue)
    try:
        if gradebook is not None:
            for row in work.kept.values():  # a kill between the CSV and the gradebook loses nobody
                gradebook.record(row)
        write_grades(csv_path, rows.values())
        with open(csv_path, "a", newline="", encoding="utf-8") as out:

            def record(student: str, result: dict[str, Any]) -> None:
                row = {**_record(student, paths[student], result, work.hashes[student], options, summary),
                       **stamp(work.provenance.key)}
                # in rows before it can be on disk: the rewrite after an interrupt keeps what the file showed
                rows[student] = row
                append_grade(out, row)
                out.flush()
                os.fsync(out.fileno())
                if gradebook is not None:
                    gradebook.record(row)
                graded(student, row)

            _run(jobs, work.queue, options, record)
    finally:
        try:
            write_grades(csv_path, rows.values())  # sorted, as one run writes it
        finally:
            if gradebook is not None:
                gradebook.close()


def _record(student: str, path: Path, result: dict[str, Any], sha256: str, options: BatchOptions,
            summary: BatchSummary) -> dict[str, str]:
    """Write a student's JSON report and feedback (or remove a stale report); their CSV row."""
    report = result.get("report")
    target = None
    if options.json_dir is not None:
        try:
            target = json_path(options.json_dir, student)
        except ValueError as err:
            summary.warnings.append(f"no JSON report for {printable(student)}: {err}")
    if report is not None:
        summary.graded.append(student)
        summary.reports[student] = report
        if target is not None:
            try:
                write_atomically(target, json.dumps(report, indent=2) + "\n")
            except OSError as err:
                summary.warnings.append(f"no JSON report for {printable(student)}: {err}")
    else:
        summary.errors.append(student)
        if target is not None and (target.is_file() or target.is_symlink()):
            target.unlink()  # an earlier grade's report would contradict this row
    if options.feedback_dir is not None:
        shown, reason = student, _for_the_student(str(result.get("error", "unknown error")), path)
        if options.blind is not None:
            shown = options.blind(student)
            reason = reason.replace(escape_line(student), shown)
        try:
            summary.feedback.append(
                write_feedback(shown, report, options.feedback_dir, options.visibility) if report is not None else
                write_error_feedback(shown, reason, options.feedback_dir))
        except Exception as err:  # one student's feedback must not end the batch
            summary.warnings.append(f"no feedback for {printable(student)}: {type(err).__name__}: {err}")
    return csv_row(student, result, sha256, options.grading_for(student))


def _for_the_student(reason: str, path: Path) -> str:
    """An error row's reason as the student's feedback tells it: their submission by its own name, not
    by where it lies on the instructor's machine (the CSV keeps the whole path)."""
    return reason.replace(escape_line(str(path)), escape_line(path.name))


def _run(jobs: list[Job], queue: list[tuple[str, Path]], options: BatchOptions,
         record: Callable[[str, dict[str, Any]], None]) -> None:
    """Hand the students of ``queue`` to the jobs, one at a time each, and ``record`` each result; a job
    that failed (it died, answered garbage, or took longer than a student may) is replaced."""
    pending = list(reversed(queue))

    def give(job: Job) -> None:
        student, path = pending.pop()
        job.give(student, path, options.grading_for(student))

    for job in jobs:
        if pending:
            give(job)
    while any(job.student for job in jobs):
        busy = [job for job in jobs if job.student]
        ready, _, _ = select.select([job.proc.stdout for job in busy], [], [], 1.0)
        for i, job in enumerate(jobs):
            if not job.student:
                continue
            result = _answer(job, job.proc.stdout in ready, options.student_time_limit)
            if result is None:
                continue
            student = job.student
            job.student = None
            if result.get("job_failed"):
                job.kill()
                jobs[i] = job = Job(options.grading, options.job_argv)
            record(student, result)
            if pending:
                give(job)


def _answer(job: Job, ready: bool, time_limit: float) -> dict[str, Any] | None:
    """The result of the job's student: its answer when ``ready``, an error when it took too long, else None."""
    if not ready:
        if time.monotonic() - job.started > time_limit:
            return {"error": f"grading took longer than {time_limit:g} s", "job_failed": True}
        return None
    line = job.proc.stdout.readline()
    try:
        result = json.loads(line) if line else None
    except json.JSONDecodeError:
        return {"error": "the grading process answered garbage", "job_failed": True}
    if result is None:
        return {"error": f"the grading process died (exit code {job.proc.poll()})", "job_failed": True}
    return result
