"""``score-all``: grade a whole class, in parallel, resumably, one CSV row per student.

The parent process never imports torch or runs student code: it lists the students, hands them to N
long-lived job processes (``python -m grader.batch --job``) and writes each result as it arrives.
A job imports torch once and grades its students one after another in isolated workers. A job
that crashes or exceeds a student's time limit is killed and replaced; that student becomes a row
with status ``error`` and the reason, and the batch goes on.

Resumable: rows are appended (and flushed) as students finish; a student already in the CSV is
skipped unless ``--force``.
"""

from __future__ import annotations

import csv
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from grader.rubric import load_rubric

STUDENT_TIME_LIMIT = 600.0  # seconds for one student, whatever happens inside


@dataclass(frozen=True)
class BatchOptions:
    jobs: int
    call_timeout: float = 5.0
    sandbox: str = "auto"
    gpu: str = "auto"
    force: bool = False
    json_dir: Path | None = None
    student_time_limit: float = STUDENT_TIME_LIMIT


@dataclass
class BatchSummary:
    graded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # the JSON reports of this run


def csv_columns() -> list[str]:
    return ["student", "score", "max_score", *load_rubric().exercises, "gpu_check", "status", "message"]


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
            warnings.append(f"ignoring {entry.name}: not a folder or a .zip")
            continue
        if name in students:
            warnings.append(f"ignoring {entry.name}: student {name!r} already has a submission")
            continue
        students[name] = entry
    return students, warnings


def already_graded(csv_path: Path) -> set[str]:
    """Students that have a row in an existing CSV with our columns (else none)."""
    if not csv_path.is_file():
        return set()
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != csv_columns():
            return set()
        return {_unescaped(row["student"]) for row in reader}


def csv_cell(value: Any) -> Any:
    """A value safe in a spreadsheet: text that would start a formula (``=2+5``, ``+``, ``-``, ``@``,
    a tab or carriage return) gets a leading apostrophe, as OWASP recommends for CSV injection."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _unescaped(cell: str) -> str:
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


def csv_row(student: str, result: dict[str, Any]) -> dict[str, Any]:
    """A CSV row from a job's result: a JSON report, or an error (text cells escaped, see csv_cell)."""
    row = _csv_row(student, result)
    return {column: csv_cell(value) for column, value in row.items()}


def _csv_row(student: str, result: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {column: "" for column in csv_columns()}
    row["student"] = student
    report = result.get("report")
    if report is None:
        rubric = load_rubric()
        row.update(score=0, max_score=rubric.max_score, status="error", message=result.get("error", "unknown error"))
        for ex_id in rubric.exercises:
            row[ex_id] = 0
        row["gpu_check"] = 0
        return row
    row.update(score=report["score"], max_score=report["max_score"], status="graded",
               message="; ".join(report.get("warnings", [])))
    for ex_id, ex in report["exercises"].items():
        row[ex_id] = ex["score"]
    row["gpu_check"] = report["gpu_check"]["score"]
    return row


class _Job:
    """One job process and the student it is grading."""

    def __init__(self, options: BatchOptions):
        argv = [sys.executable, "-m", "grader.batch", "--job", "--timeout", str(options.call_timeout),
                "--sandbox", options.sandbox, "--gpu", options.gpu]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1, start_new_session=True)
        self.student: str | None = None
        self.started = 0.0

    def give(self, student: str, path: Path) -> None:
        self.student, self.started = student, time.monotonic()
        self.proc.stdin.write(json.dumps({"student": student, "path": str(path)}) + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


def score_all(folder: Path, csv_path: Path, options: BatchOptions,
              progress: Callable[[int, int, str, str], None] | None = None) -> BatchSummary:
    """Grade every student in ``folder`` into ``csv_path`` (see the module docstring)."""
    students, warnings = list_students(folder)
    summary = BatchSummary(warnings=warnings)
    done = set() if options.force else already_graded(csv_path)
    summary.skipped = sorted(done & set(students))
    queue = [(name, path) for name, path in students.items() if name not in done]
    total = len(queue)
    fresh = options.force or not done
    with open(csv_path, "w" if fresh else "a", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=csv_columns())
        if fresh:
            writer.writeheader()
            out.flush()
        jobs = [_Job(options) for _ in range(max(1, min(options.jobs, total)))] if total else []
        try:
            _run(jobs, queue, options, lambda student, result: _record(student, result, writer, out, summary, options,
                                                                       progress, total))
        finally:
            for job in jobs:
                job.close()
    return summary


def _record(student: str, result: dict[str, Any], writer: csv.DictWriter, out: TextIO, summary: BatchSummary,
            options: BatchOptions, progress: Callable[[int, int, str, str], None] | None, total: int) -> None:
    row = csv_row(student, result)
    writer.writerow(row)
    out.flush()
    if result.get("report") is not None:
        summary.graded.append(student)
        summary.reports[student] = result["report"]
        if options.json_dir is not None:
            (options.json_dir / f"{student}.json").write_text(json.dumps(result["report"], indent=2) + "\n")
    else:
        summary.errors.append(student)
    if progress is not None:
        progress(len(summary.graded) + len(summary.errors), total, student,
                 f"{row['score']}/{row['max_score']}" if row["status"] == "graded" else f"error: {row['message']}")


def _run(jobs: list[_Job], queue: list[tuple[str, Path]], options: BatchOptions,
         record: Callable[[str, dict[str, Any]], None]) -> None:
    pending = list(reversed(queue))
    for job in jobs:
        if pending:
            job.give(*pending.pop())
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
                job.give(*pending.pop())


def job_main(argv: list[str]) -> int:
    """A job process: read ``{"student", "path"}`` lines, answer ``{"report"}`` or ``{"error"}`` lines."""
    import argparse

    from grader.domains import Domains
    from grader.gpu_check import GpuUnavailable
    from grader.grading import GradeOptions, grade
    from grader.isolation import Survivors, choose_isolation
    from grader.report import to_json
    from grader.submission import SubmissionError

    parser = argparse.ArgumentParser()
    parser.add_argument("--job", action="store_true")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--gpu", default="auto")
    args = parser.parse_args(argv)
    options = GradeOptions(call_timeout=args.timeout, sandbox=args.sandbox, gpu=args.gpu)
    # torch imported once for all of this job's students; each of them gets domains of their own
    domains = Domains(choose_isolation(args.sandbox, for_class=True), options.memory_mb)
    domains.warm_up()
    answer = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the channel
    for line in sys.stdin:
        task = json.loads(line)
        try:
            result = {"report": to_json(grade(Path(task["path"]), options, domains))}
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
    domains.close()
    return 0


if __name__ == "__main__":
    sys.exit(job_main(sys.argv[1:]))
