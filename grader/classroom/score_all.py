"""``score-all``: grade a whole class, in parallel, resumably, one CSV row per student.

The parent process never imports torch or runs student code: it lists the students, hands them to N
long-lived job processes (``python -m grader.classroom.score_all --job``) and writes each result as it arrives.
A job imports torch once and grades its students one after another in isolated workers. A job
that crashes or exceeds a student's time limit is killed and replaced; that student becomes a row
with status ``error`` and the reason, and the batch goes on.

Nothing lost, nothing stale: each student's results are written as soon as they arrive, in this
order: the JSON report (``--json-dir``), the feedback (``--feedback-dir``), the CSV row (flushed
and synced), the gradebook row (``--gradebook``, committed). A run that starts over an existing
CSV (a resume) keeps a row only when the student is still graded (``status`` ``graded``), their
submission's content hash (``submission_sha256``) is unchanged, their JSON report is there (with
``--json-dir``) and ``--only`` does not name them; everyone else is graded again. A last row cut
short (a kill mid-write) is dropped, never joined with the next one. Rows of students no longer in
the folder (or outside this ``--shard``) are kept, with a warning. The CSV is rewritten, atomically,
sorted by student name (code point order), when the run starts and when it ends; in between, rows
are appended as students finish. Every row kept is written into the gradebook again at the start,
so the gradebook lists every student of the CSV even after a kill between the two writes.

``--shard K/N`` grades the students whose name hashes to K (see ``in_shard``): N disjoint slices
that do not depend on which other students exist; ``grader.classroom.merge`` puts shards back together.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import io
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from grader.sandbox.domains import Domains, TemplateError
from grader.grading.grade import GradeOptions
from grader.files import caller_umask, private_files, write_atomically
from grader.rubric import load_rubric

STUDENT_TIME_LIMIT = 600.0  # seconds for one student, whatever happens inside
# Seconds a job may take to end (its template killed, its student's uid's processes killed and its files
# removed: well under a second) before it is killed itself.
JOB_END_TIMEOUT = 30.0
HASH_COLUMN = "submission_sha256"
STATUSES = ("graded", "error")
# Folders and files a submission's hash leaves out: tools' caches and version control, not the work.
HASH_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache"})
_HEX64 = re.compile(r"[0-9a-f]{64}")


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
    feedback_dir: Path | None = None  # grader.reports.feedback.write_feedback per graded student
    visibility: str = "full"
    gradebook: Path | None = None  # an nbgrader gradebook (sqlite file) written row by row
    assignment: str | None = None
    job_argv: tuple[str, ...] | None = None  # the job command (tests); default: python -m grader.classroom.score_all --job
    # How each student is graded, where not all alike (grader nbgrader: each staged notebook is graded
    # on its assignment's exercises); the sandbox is always ``grading``'s.
    grading_of: Callable[[str], GradeOptions] | None = None

    def grading_for(self, student: str) -> GradeOptions:
        return self.grading if self.grading_of is None else self.grading_of(student)


@dataclass
class BatchSummary:
    graded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # rows kept from an earlier run
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # the JSON reports of this run
    outputs: list[Path] = field(default_factory=list)  # what the summary hook wrote


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
        return (f"[{self.done}/{self.total}] {_printable(self.student)}: {_printable(self.outcome)} "
                f"(elapsed {_duration(self.elapsed)}{left}, {errors})")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _printable(text: str) -> str:
    """One line of a terminal: control characters of an untrusted name or message shown escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def csv_columns() -> list[str]:
    return ["student", "score", "max_score", *load_rubric().exercises, "gpu_check", "status", "message", HASH_COLUMN]


def list_students(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """{student name: path} for every subfolder or ``.zip`` in ``folder``; warnings for the rest."""
    students: dict[str, Path] = {}
    warnings: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            name = entry.name
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            name = entry.stem
        else:
            warnings.append(f"ignoring {_printable(entry.name)}: not a folder or a .zip")
            continue
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            warnings.append(f"ignoring {_printable(entry.name)}: its name is not valid UTF-8")
            continue
        if name in students:
            warnings.append(f"ignoring {_printable(entry.name)}: student {name!r} already has a submission")
            continue
        students[name] = entry
    return students, warnings


# --- shards ----------------------------------------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; ValueError unless 1 <= K <= N."""
    match = re.fullmatch(r"([0-9]{1,6})/([0-9]{1,6})", text.strip())
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"--shard takes K/N with 1 <= K <= N (such as 2/4), got {text!r}")
    return int(match[1]), int(match[2])


def shard_of(student: str, count: int) -> int:
    """The shard (1..count) of ``student``: from the SHA-256 of the name alone, so the same student
    lands in the same shard whoever else is in the class."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(student, shard[1]) == shard[0]


# --- the submission's content hash -----------------------------------------------------------------


def submission_hash(path: Path) -> str:
    """SHA-256 over a submission's content: a zip's bytes, or a folder's file names, types and bytes
    (symlinks by their target, never followed; caches and ``.git`` left out). Never raises: what
    cannot be read goes into the hash as the error, so it changes when the file becomes readable."""
    digest = hashlib.sha256()
    path = Path(path)
    if not path.is_dir() or path.is_symlink():
        digest.update(b"file\0")
        _hash_file(digest, path)
        return digest.hexdigest()
    digest.update(b"folder\0")
    for root, dirs, files in os.walk(path, onerror=lambda err: digest.update(f"unreadable: {err}\0".encode())):
        dirs[:] = sorted(d for d in dirs if d not in HASH_SKIPPED_DIRS)
        rel_root = Path(root).relative_to(path)
        for name in sorted([*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]):
            if name.endswith(".pyc"):
                continue
            full = os.path.join(root, name)
            rel = (rel_root / name).as_posix().encode("utf-8", "surrogateescape")
            if os.path.islink(full):
                digest.update(b"link\0" + rel + b"\0" + os.fsencode(_readlink(full)) + b"\0")
            else:
                digest.update(b"file\0" + rel + b"\0")
                _hash_file(digest, Path(full))
        for d in dirs:
            if not os.path.islink(os.path.join(root, d)):
                digest.update(b"dir\0" + (rel_root / d).as_posix().encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError as err:
        return f"unreadable: {err.strerror}"


def _hash_file(digest: Any, path: Path) -> None:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            digest.update(f"{size}\0".encode())
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        digest.update(f"unreadable: {err.strerror}\0".encode())


# --- the CSV -----------------------------------------------------------------------------------------


@dataclass
class CsvContent:
    """The rows of a score-all CSV as written (cells escaped, as strings), by student name."""

    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    truncated: str | None = None  # the student whose last row was cut short, if any


def read_grades(csv_path: Path) -> CsvContent:
    """Read a score-all CSV (none: empty). A last row without its line end (a write cut short) is
    dropped; a row that is not one of ours (wrong number of cells, unknown status, no hash) is
    dropped with a warning, so that student is graded again. BatchError: the file is not a
    score-all CSV of this version (another header)."""
    content = CsvContent()
    if not csv_path.is_file():
        return content
    text = csv_path.read_bytes().decode("utf-8", "replace")
    header = ",".join(csv_columns())
    first_line = text.split("\n", 1)[0].rstrip("\r")
    if not text.strip() or (header.startswith(first_line) and "\n" not in text):
        return content  # empty, or killed while writing the header
    if first_line != header:
        raise BatchError(f"{csv_path} exists and is not a score-all CSV with this rubric's columns "
                         f"(its header differs): move it away, or use --force to overwrite it")
    try:
        records = list(csv.reader(io.StringIO(text.split("\n", 1)[1], newline="")))
    except csv.Error as err:
        raise BatchError(f"{csv_path}: unreadable as CSV ({err}): move it away, or use --force to overwrite it") from None
    complete = text.endswith("\n")
    columns = csv_columns()
    for i, record in enumerate(records):
        last = i == len(records) - 1
        name = _unescaped(record[0]) if record else ""
        if last and not complete:
            content.truncated = name
            content.warnings.append(f"{csv_path}: the last row ({_printable(name)!s}) was cut short: "
                                    "that student is graded again")
            continue
        row = dict(zip(columns, record))
        if len(record) != len(columns) or row["status"] not in STATUSES or not _HEX64.fullmatch(row[HASH_COLUMN]):
            content.warnings.append(f"{csv_path}: dropped a malformed row ({_printable(name) or 'no name'}): "
                                    "that student is graded again")
            continue
        content.rows.pop(name, None)
        content.rows[name] = row  # a later row of the same student wins
    return content


def write_grades(csv_path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write ``rows`` (cells as written: escaped) under the header, sorted by student name, atomically
    (a temporary file beside it, then renamed over it)."""
    ordered = sorted(rows, key=lambda row: _unescaped(str(row["student"])))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=csv_columns())
    writer.writeheader()
    writer.writerows(ordered)
    write_atomically(csv_path, out.getvalue())


def already_graded(csv_path: Path) -> set[str]:
    """Students with a complete row (graded or not) in an existing CSV with our columns (else none)."""
    try:
        return set(read_grades(csv_path).rows)
    except BatchError:
        return set()


def csv_cell(value: Any) -> Any:
    """A value safe in a spreadsheet: text that would start a formula (``=2+5``, ``+``, ``-``, ``@``,
    a tab or carriage return) gets a leading apostrophe, as OWASP recommends for CSV injection."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _unescaped(cell: str) -> str:
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


unescaped = _unescaped


def csv_row(student: str, result: dict[str, Any], sha256: str = "",
            grading: GradeOptions = GradeOptions()) -> dict[str, str]:
    """A CSV row from a job's result: a JSON report, or an error (text cells escaped, see csv_cell),
    every cell as the text the CSV holds. An error row's max_score is what a graded row's would be
    under ``grading``: its exercises (the rubric's, or ``grading.exercises``) and the GPU-run check
    unless ``--gpu skip``. The cells of exercises a row was not graded on stay empty."""
    row = _csv_row(student, result, grading)
    row[HASH_COLUMN] = sha256
    return {column: str(csv_cell(value)) for column, value in row.items()}


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
    for ex_id, ex in report["exercises"].items():
        row[ex_id] = ex["score"]
    row["gpu_check"] = report["gpu_check"]["score"]
    return row


# --- files named after students --------------------------------------------------------------------


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


def hook(module: str, name: str) -> Callable[..., Any] | None:
    """``module.name`` when that module exists (hooks other parts of the grader provide), else None."""
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name == module:
            return None
        raise
    return getattr(found, name, None)


class _Job:
    """One job process and the student it is grading.

    The job's lifeline is a pipe whose write end this process alone holds (never inherited by another
    child): when this process ends, however it ends (``kill -9`` too), the job reads the end of the
    pipe at once and takes its template and every process of its student's uid down with it before
    it exits (:func:`job_main`). :meth:`kill` closes the lifeline to the same end."""

    def __init__(self, options: BatchOptions):
        lifeline, self.lifeline = os.pipe()
        argv = list(options.job_argv) if options.job_argv else [
            sys.executable, "-m", "grader.classroom.score_all", "--job", options.grading.to_json(), "--lifeline", str(lifeline)]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True, bufsize=1, start_new_session=True, pass_fds=(lifeline,),
                                         umask=caller_umask())
        except BaseException:
            os.close(self.lifeline)
            raise
        finally:
            os.close(lifeline)
        self.student: str | None = None
        self.started = 0.0

    def give(self, student: str, path: Path, grading: GradeOptions) -> None:
        self.student, self.started = student, time.monotonic()
        task = {"student": student, "path": str(path), "options": grading.to_json()}
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        """Tell the job to end now (its template and student's processes with it), without waiting."""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        """End the job now: it ends what it started and exits; killed if it has not within JOB_END_TIMEOUT."""
        self.stop()
        try:
            self.proc.wait(timeout=JOB_END_TIMEOUT)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
        try:
            self.proc.stdout.close()
        except OSError:
            pass

    def close(self) -> None:
        """The class is graded: end the job once it has ended its domains (or kill it)."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=JOB_END_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


@dataclass
class _Plan:
    kept: dict[str, dict[str, str]]  # rows of the existing CSV that stay
    queue: list[tuple[str, Path]]  # the students to grade, by name
    hashes: dict[str, str]
    warnings: list[str]


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
    existing = CsvContent() if options.force else read_grades(csv_path)
    warnings += existing.warnings
    hashes: dict[str, str] = {}
    kept: dict[str, dict[str, str]] = {}
    for name, row in existing.rows.items():
        if name not in selected:
            where = "not in this shard" if name in students else f"no submission in {folder} any more"
            warnings.append(f"kept the row of {_printable(name)}: {where}")
            kept[name] = row
        elif options.only is not None and name not in options.only:
            kept[name] = row
        elif options.only is None:
            hashes[name] = submission_hash(selected[name])
            if _still_valid(name, row, hashes[name], options):
                kept[name] = row
    wanted = options.only if options.only is not None else set(selected)
    queue = [(name, path) for name, path in selected.items() if name in wanted and name not in kept]
    for name, path in queue:
        if name not in hashes:
            hashes[name] = submission_hash(path)
    return _Plan(kept, queue, hashes, warnings)


def _still_valid(name: str, row: Mapping[str, str], sha256: str, options: BatchOptions) -> bool:
    if row["status"] != "graded" or row[HASH_COLUMN] != sha256:
        return False
    if options.json_dir is not None:
        try:
            return json_path(options.json_dir, name).is_file()
        except ValueError:
            return True  # no JSON can be written for this name: grading again changes nothing
    return True


def score_all(folder: Path, csv_path: Path, options: BatchOptions,
              progress: Callable[[Progress], None] | None = None) -> BatchSummary:
    """Grade the students of ``folder`` into ``csv_path`` (see the module docstring).

    BatchError (nothing graded): an existing CSV that is not ours (without ``force``), an
    ``only`` naming no submission. grader.classroom.gradebook.GradebookError: the gradebook's assignment is
    neither this kata's course nor one score-all made.

    What it writes (CSV, JSON reports, feedback, gradebook, class summary) is for this user alone
    (:func:`private_files`).
    """
    with private_files():
        return _score_all(folder, csv_path, options, progress)


def _score_all(folder: Path, csv_path: Path, options: BatchOptions,
               progress: Callable[[Progress], None] | None) -> BatchSummary:
    started = time.monotonic()
    work = plan(folder, csv_path, options)
    summary = BatchSummary(warnings=work.warnings, skipped=sorted(work.kept))
    if options.json_dir is not None:
        options.json_dir.mkdir(parents=True, exist_ok=True)
    if options.feedback_dir is not None:
        options.feedback_dir.mkdir(parents=True, exist_ok=True)
    total = len(work.queue)
    feedback = hook("grader.reports.feedback", "write_feedback") if options.feedback_dir is not None else None
    # the jobs import torch while the gradebook opens (nbgrader takes seconds too)
    jobs = [_Job(options) for _ in range(max(1, min(options.jobs, total)))] if total else []
    finished = False
    try:
        gradebook = None
        if options.gradebook is not None:
            from grader.classroom.gradebook import ClassGradebook

            gradebook = ClassGradebook(options.gradebook, options.assignment or "")  # may refuse: nothing written
            summary.warnings += gradebook.warnings
        rows = dict(work.kept)
        try:
            if gradebook is not None:
                for row in work.kept.values():  # a kill between the CSV and the gradebook loses nobody
                    gradebook.record(row)
            write_grades(csv_path, rows.values())
            with open(csv_path, "a", newline="", encoding="utf-8") as out:
                writer = csv.DictWriter(out, fieldnames=csv_columns())

                def record(student: str, result: dict[str, Any]) -> None:
                    row = _record(student, result, work.hashes[student], options, summary, feedback)
                    # in rows before it can be on disk: the rewrite after an interrupt keeps what the file showed
                    rows[student] = row
                    writer.writerow(row)
                    out.flush()
                    os.fsync(out.fileno())
                    if gradebook is not None:
                        gradebook.record(row)
                    if progress is not None:
                        outcome = (f"{row['score']}/{row['max_score']}" if row["status"] == "graded"
                                   else f"error: {_unescaped(row['message'])}")
                        progress(Progress(len(summary.graded) + len(summary.errors), total, student, outcome,
                                          time.monotonic() - started, len(summary.errors)))

                _run(jobs, work.queue, options, record)
            finished = True
        finally:
            try:
                write_grades(csv_path, rows.values())  # sorted, as one run writes it
            finally:
                if gradebook is not None:
                    gradebook.close()
    finally:
        if not finished:  # interrupted, or refused before grading: no one waits for a job's current student
            for job in jobs:
                job.stop()  # all of them end at once, each taking down what it started
        for job in jobs:
            if finished:
                job.close()
            else:
                job.kill()
    write_summary = hook("grader.reports.class_summary", "write_summary")
    if write_summary is not None:
        try:
            summary.outputs = list(write_summary(csv_path, summary.reports))
        except Exception as err:  # the grades are written: a summary that fails must not hide them
            summary.warnings.append(f"the class summary failed: {type(err).__name__}: {err}")
    return summary


def _record(student: str, result: dict[str, Any], sha256: str, options: BatchOptions, summary: BatchSummary,
            feedback: Callable[..., Any] | None) -> dict[str, str]:
    """Write a student's JSON report and feedback (or remove a stale report); their CSV row."""
    report = result.get("report")
    target = None
    if options.json_dir is not None:
        try:
            target = json_path(options.json_dir, student)
        except ValueError as err:
            summary.warnings.append(f"no JSON report for {_printable(student)}: {err}")
    if report is not None:
        summary.graded.append(student)
        summary.reports[student] = report
        if target is not None:
            try:
                write_atomically(target, json.dumps(report, indent=2) + "\n")
            except OSError as err:
                summary.warnings.append(f"no JSON report for {_printable(student)}: {err}")
        if feedback is not None:
            try:
                feedback(student, report, options.feedback_dir, options.visibility)
            except Exception as err:  # one student's feedback must not end the batch
                summary.warnings.append(f"no feedback for {_printable(student)}: {type(err).__name__}: {err}")
    else:
        summary.errors.append(student)
        if target is not None and (target.is_file() or target.is_symlink()):
            target.unlink()  # an earlier grade's report would contradict this row
    return csv_row(student, result, sha256, options.grading_for(student))


def _run(jobs: list[_Job], queue: list[tuple[str, Path]], options: BatchOptions,
         record: Callable[[str, dict[str, Any]], None]) -> None:
    pending = list(reversed(queue))

    def give(job: _Job) -> None:
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
            result: dict[str, Any] | None = None
            if job.proc.stdout in ready:
                line = job.proc.stdout.readline()
                try:
                    result = json.loads(line) if line else None
                except json.JSONDecodeError:
                    result = {"error": "the grading process answered garbage", "job_failed": True}
                if result is None:
                    result = {"error": f"the grading process died (exit code {job.proc.poll()})", "job_failed": True}
            elif time.monotonic() - job.started > options.student_time_limit:
                result = {"error": f"grading took longer than {options.student_time_limit:g} s", "job_failed": True}
            if result is None:
                continue
            student = job.student
            job.student = None
            if result.get("job_failed"):
                job.kill()
                jobs[i] = job = _Job(options)
            record(student, result)
            if pending:
                give(job)


def job_main(argv: list[str]) -> int:
    """A job process (``--job OPTIONS_JSON --lifeline FD``, from :class:`_Job`): read ``{"student", "path",
    "options"}`` lines (that student's GradeOptions; the sandbox is the job's), answer ``{"report"}`` or
    ``{"error"}`` lines. When the lifeline (a pipe's read end) reads its end, score-all is gone (or wants
    this job gone): the template and every process of the student's uid are killed at once, from a
    thread, whatever the grading under way is doing, and the job exits."""
    from grader.grading.gpu_check import GpuUnavailable
    from grader.grading.grade import grade
    from grader.sandbox.modes import Survivors, choose_isolation
    from grader.reports.report import to_json
    from grader.grading.intake import SubmissionError

    if len(argv) not in (2, 4) or argv[0] != "--job" or (len(argv) == 4 and argv[2] != "--lifeline"):
        print("usage: python -m grader.classroom.score_all --job OPTIONS_JSON [--lifeline FD] (started by score-all)", file=sys.stderr)
        return 2
    options = GradeOptions.from_json(argv[1])
    # torch imported once for all of this job's students; each of them gets domains of their own
    domains = _JobDomains(choose_isolation(options.sandbox, for_class=True))
    if len(argv) == 4:
        lifeline = int(argv[3])
        os.set_inheritable(lifeline, False)
        threading.Thread(target=_watch_lifeline, args=(lifeline, domains), daemon=True).start()
    answer = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the channel
    try:
        domains.warm_up()
        for line in sys.stdin:
            task = json.loads(line)
            try:
                result = {"report": to_json(grade(Path(task["path"]), GradeOptions.from_json(task["options"]), domains))}
            except (SubmissionError, GpuUnavailable) as err:
                result = {"error": str(err)}
            except Survivors as err:  # no result while a process of the student's uid runs: this job ends
                answer.write(json.dumps({"error": str(err), "job_failed": True}) + "\n")
                answer.flush()
                break
            except Exception as err:  # one student's failure must not end the batch
                result = {"error": f"internal error: {type(err).__name__}: {err}"}
            answer.write(json.dumps(result) + "\n")
            answer.flush()
    finally:
        domains.close()  # (or wait for the lifeline's watcher to have done it)
    return 0


def _watch_lifeline(fd: int, domains: _JobDomains) -> None:
    """Block until score-all's end of the lifeline closes (nothing is ever written on it); then end the
    domains and exit, whatever the main thread is doing."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    try:
        domains.close()
    finally:
        os._exit(1)


class _JobDomains(Domains):
    """A job's domains, which another thread may end at any moment (:meth:`close`): after that no
    template starts again, no clean-up of a domain starts (the close does it), and the grading under
    way fails instead."""

    def __init__(self, isolation: Any):
        self._starting = threading.Lock()  # held while a template starts: close() waits for it, then kills it
        self._ending = False
        self._closing = threading.Lock()
        self._closer: int | None = None  # the thread that closes
        super().__init__(isolation)

    def replace(self, broken: Any) -> None:
        with self._starting:
            if self._ending:
                raise TemplateError("this grading job is ending")
            super().replace(broken)

    def clean(self, root: Path | None) -> None:
        # A clean-up runs a process as the student's uid: once ending, only the close's own may start.
        if not self._ending or threading.get_ident() == self._closer:
            super().clean(root)

    def close(self) -> None:
        """Domains.close (the template killed: with bubblewrap its sandbox and every domain in it; in uid
        mode every process of the student's uid killed and its files removed; then a wait until none
        of the uid's processes is left), at once: the domain under way is not waited for. From any
        thread; once (a second call waits for the first to finish)."""
        with self._starting:
            self._ending = True
        with self._closing:
            if self._closer is not None:
                return
            self._closer = threading.get_ident()
            # The template's children (the domains, the student's processes) are orphaned when it is
            # killed: they become this process's children, reaped here (pid 1, in a container, may
            # never reap them, and the wait for the uid's processes counts zombies).
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 1)
            done = threading.Event()
            reaper = threading.Thread(target=_reap_adopted, args=(self.isolation.uid, done), daemon=True)
            reaper.start()
            try:
                super().close()
            finally:
                done.set()
                reaper.join()


PR_SET_CHILD_SUBREAPER = 36


def _libc_prctl(option: int, value: int) -> None:
    import ctypes

    ctypes.CDLL(None).prctl(option, value, 0, 0, 0)


def _reap_adopted(uid: int | None, done: threading.Event) -> None:
    """Until ``done``: reap this process's children of ``uid`` that have ended (adopted as a subreaper)."""
    from grader.sandbox.modes import processes_of

    while uid is not None and not done.wait(0.005):
        for pid, state in processes_of(uid).items():
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # not ours
                    pass


if __name__ == "__main__":
    sys.exit(job_main(sys.argv[1:]))
