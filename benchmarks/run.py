#!/usr/bin/env python
"""Benchmarks (issues 6, 24): the student loop and progress view, one ``grader score``, ``score-all`` on a class
and nbgrader.

    python benchmarks/run.py [--students 50] [--nbgrader-students 10] [--repeat 3] [--batch-repeat 1]
                             [--skip-nbgrader | --student-only] [--quick | --dry-run] [--out benchmarks/results.md]

Everything is measured in ONE run on this machine, side by side, with each baseline timed in the same
run and interleaved with what it is compared to (``python -c "import torch"`` runs between all the
other measurements), so that the machine's load affects both. Each figure is wall-clock seconds per
run or per submission (median over ``--repeat`` runs), the CPU seconds of the descendants that were
waited for, the CPU seconds the whole machine was busy meanwhile (/proc/stat), and ratios:

* ``× import torch``: the time over the median of all ``python -c "import torch"`` runs;
* ``× baseline``: the time over the row named in the ``baseline`` column (< 1: faster).

The targets are checked below the table: ``grader score`` at most 2x ``import torch`` (issue 6); the
progress view (``python check_progress.py``, what ``grader check`` runs) at most 1.5x ``import torch``
(issue 24), on the stubs and on the solutions; the CSV has one row per student; `grader nbgrader` gives
the solved notebooks full points in nbgrader's export. ``score-all``'s throughput over one ``pytest tests
--impl SUB`` process per submission is reported beside the in-process floor's, with no target: issue 6's
20x, retired, is out of reach of the hidden tests themselves (benchmarks/README.md).

The ``in-process-floor`` row is what the hidden tests themselves cost, with no isolation at all:
torch and pytest imported once, then ``--jobs`` processes each run the hidden tests on their share
of the class one submission after another, in-process. A grader that keeps the student's code out
of its own process cannot be faster than that, so its ratio to the per-submission loop bounds what
``score-all`` can reach here.

Only the standard library and what the project installs (grader.authoring.release builds the student copies and
the nbgrader course); ``timing.py`` beside this file times each command, ``submissions.py`` builds what is
graded (and runs the in-process floor). Subprocesses run ``sys.executable`` from the repository root, with
``PYTHONDONTWRITEBYTECODE`` unset, except the student loop (run from the student's copy, as a student
does) and nbgrader (run from the course folder, where its config is). Exit code: 0 when every command
did what it should (the speed targets are reported, not enforced), 1 otherwise.

``--dry-run`` checks this script, not the grader: everything runs (the student releases, the class
with its mutants, every row, check and target line of the table) except the measured commands, each
replaced by a timed ``python -c pass`` that "succeeds" as the real one should; the outputs the checks
read (the score report, the CSV) are not there, so those checks say ``not checked (dry run)``.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Importable once the repository root is on sys.path (benchmarks/ is a folder of it, not a package):
from benchmarks import timing  # noqa: E402
from benchmarks.submissions import (SOLUTIONS, build_class, in_process_floor,  # noqa: E402
                                    overlay_solutions, solution_submission)
from benchmarks.timing import (BIN, BenchError, Row, Timing, cores, code_version, load_average, log,  # noqa: E402
                               machine_line, run_timed)
from grader.rubric import GROUPS  # noqa: E402

# The keys of the table's rows, in order (grader/tests/test_benchmarks.py checks them).
ROW_KEYS = ("import-torch", "student-pass", "student-fail", "progress-pass", "progress-fail", "score-auto", "score-none", "pytest-impl",
            "score-all", "in-process-floor", "pytest-impl-each", "nbgrader-grade")


# (what, passed or None for a plain figure, detail, is a speed target: reported, not enforced)
Check = tuple[str, "bool | None", str, bool]


@dataclass
class Bench:
    """One run: its options, its scratch folder, and the rows, checks and failures found so far."""

    args: argparse.Namespace
    tmp: Path
    jobs: int
    rows: dict[str, Row]
    checks: list[Check] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    isolation: str = "?"  # what `grader score` reported using

    def baseline_torch(self) -> None:
        """One `python -c "import torch"`, timed: run before each round, so that load affects both sides."""
        self.rows["import-torch"].timings.append(run_timed([sys.executable, "-c", "import torch"])[0])

    def add(self, key: str, what: str, command: str, baseline: str, per: int = 1) -> Row:
        self.rows[key] = Row(key, what, command, per=per, baseline=baseline)
        return self.rows[key]

    def section(self, name: str, measure) -> None:
        """``measure(self)``; a command that does not do what it should is this section's failure."""
        try:
            measure(self)
        except (BenchError, subprocess.TimeoutExpired) as err:
            self.failures.append(f"{name}: {err}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=50, help="submissions for score-all (default 50)")
    parser.add_argument("--nbgrader-students", type=int, default=10, help="students of the Jupyter class graded by grader nbgrader (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each single command (default 3; median reported)")
    parser.add_argument("--batch-repeat", type=int, default=1, help="runs of each batch measurement (default 1)")
    parser.add_argument("--skip-nbgrader", action="store_true", help="leave out the Jupyter class (grader nbgrader)")
    parser.add_argument("--student-only", action="store_true",
                        help="only the student loop and the progress view, against import torch (no grading)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 3 students, 2 for nbgrader, every command once, no warm-up")
    parser.add_argument("--dry-run", action="store_true",
                        help="--quick with every measured command replaced by `python -c pass`: checks this script "
                             "and its table, measures nothing")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results.md", help="markdown file to write")
    args = parser.parse_args(argv)
    if args.quick or args.dry_run:
        args.students, args.nbgrader_students, args.repeat, args.batch_repeat = 3, 2, 1, 1
    if min(args.students, args.nbgrader_students, args.repeat, args.batch_repeat) < 1:
        parser.error("--students, --nbgrader-students, --repeat and --batch-repeat must be at least 1")
    return args


def warm_up(bench: Bench) -> None:
    """Not timed: the page cache and the __pycache__ folders of the grader and tests."""
    bench.baseline_torch()
    bench.rows["import-torch"].timings.clear()
    if not (bench.args.quick or bench.args.student_only):
        log("warm-up")
        run_timed([sys.executable, "-m", "grader", "score", str(SOLUTIONS), "--sandbox", "none"])
        run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(SOLUTIONS), "-q"])


def measure_student_loop(bench: Bench) -> None:
    """1. The student loop and the progress view, in copies of the student release (exercises/ + pytest.ini)."""
    # Imported here, not at the top: the timed --in-process-floor subprocess runs this file without it.
    from grader.authoring.release import build_student_release

    passing, failing = bench.tmp / "student-pass", bench.tmp / "student-fail"
    build_student_release(passing)
    overlay_solutions(passing / "exercises")
    build_student_release(failing)
    rows = (bench.add("student-pass", "student loop, solutions filled in (passes)", "pytest exercises/03_causal",
                      "import-torch"),
            bench.add("student-fail", "student loop, the stubs (fails)", "pytest exercises/03_causal", "import-torch"))
    progress = (bench.add("progress-pass", "progress view, solutions filled in (every module done)",
                          "python check_progress.py", "import-torch"),
                bench.add("progress-fail", "progress view, the stubs (every module not started)",
                          "python check_progress.py", "import-torch"))
    cmd = [sys.executable, "-m", "pytest", "exercises/03_causal"]
    check = [sys.executable, "check_progress.py"]  # exit 0 whenever the tests ran, whatever they say
    for i in range(bench.args.repeat):
        log(f"student loop and progress view {i + 1}/{bench.args.repeat}")
        bench.baseline_torch()
        rows[0].timings.append(run_timed(cmd, cwd=passing, ok=(0,))[0])
        rows[1].timings.append(run_timed(cmd, cwd=failing, ok=(1,))[0])
        progress[0].timings.append(run_timed(check, cwd=passing, ok=(0,))[0])
        progress[1].timings.append(run_timed(check, cwd=failing, ok=(0,))[0])


def measure_one_submission(bench: Bench, sub: Path) -> None:
    """2. One submission: grader score (bwrap when it works here, and none) vs one pytest process."""
    auto = bench.add("score-auto", "grade one submission (sandbox auto)", "python -m grader score SUB", "pytest-impl")
    none = bench.add("score-none", "grade one submission, no sandbox", "python -m grader score SUB --sandbox none",
                     "pytest-impl")
    pytest_impl = bench.add("pytest-impl", "one pytest process on the hidden tests", "pytest tests --impl SUB/exercises",
                            "import-torch")
    score = [sys.executable, "-m", "grader", "score", str(sub), "--format", "json"]
    for i in range(bench.args.repeat):
        log(f"single submission {i + 1}/{bench.args.repeat}")
        bench.baseline_torch()
        timing, proc = run_timed(score)
        auto.timings.append(timing)
        report = {"isolation": "dry run"} if bench.args.dry_run else _json(proc.stdout)
        bench.isolation = report.get("isolation", "?")
        if report.get("score") != report.get("max_score"):
            bench.failures.append(f"grader score on the solutions: {report.get('score')} / {report.get('max_score')}")
        none.timings.append(run_timed([*score, "--sandbox", "none"])[0])
        pytest_impl.timings.append(
            run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(sub / "exercises"), "-q"])[0])
    auto.note = f"isolation: {bench.isolation}"


def measure_class(bench: Bench, klass: Path, plan: list[tuple[str, str]]) -> None:
    """3. A class: score-all with one job per core vs one pytest process per submission, in turn."""
    kinds = {"solution": 0, "stub": 0, "mutant": 0}
    for _, kind in plan:
        kinds[kind if kind in kinds else "mutant"] += 1
    mix = f"{kinds['solution']} solutions, {kinds['mutant']} mutants, {kinds['stub']} stubs"
    n, jobs = len(plan), bench.jobs
    score_all = bench.add("score-all", f"grade a class of {n} ({mix})",
                          f"python -m grader score-all CLASS --csv grades.csv --jobs {jobs}", "pytest-impl-each", per=n)
    floor = bench.add("in-process-floor", f"the hidden tests alone, no isolation: {jobs} processes, {n} submissions "
                      f"in-process", f"python benchmarks/run.py --in-process-floor CLASS --jobs {jobs}",
                      "pytest-impl-each", per=n)
    each = bench.add("pytest-impl-each", f"baseline: one pytest process per submission, {n} in turn",
                     "for SUB in CLASS/*: pytest tests --impl SUB/exercises", "import-torch", per=n)
    for i in range(bench.args.batch_repeat):
        log(f"score-all on {n} {i + 1}/{bench.args.batch_repeat}")
        bench.baseline_torch()
        grades = bench.tmp / f"grades-{i}.csv"
        score_all.timings.append(run_timed([sys.executable, "-m", "grader", "score-all", str(klass), "--csv", str(grades),
                                            "--jobs", str(jobs)], timeout=3600)[0])
        bench.checks.append(_check_csv(grades, plan) if not bench.args.dry_run else
                            (f"score-all CSV has {n} rows (one per student)", None, "not checked (dry run)", False))
        log(f"in-process floor on {n} {i + 1}/{bench.args.batch_repeat}")
        floor.timings.append(run_timed(
            [sys.executable, str(Path(__file__).resolve()), "--in-process-floor", str(klass), "--jobs", str(jobs)],
            timeout=3600)[0])
        log(f"one pytest per submission, {n} in turn {i + 1}/{bench.args.batch_repeat}")
        bench.baseline_torch()
        each.timings.append(_one_pytest_each(klass, plan))


def _one_pytest_each(klass: Path, plan: list[tuple[str, str]]) -> Timing:
    """The per-submission baseline: one hidden-test process per student, in turn; the sum of their timings."""
    wall = cpu = busy = 0.0
    for student, _ in plan:
        t, _ = run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(klass / student / "exercises"), "-q"],
                         ok=(0, 1), timeout=600)
        wall, cpu, busy = wall + t.wall, cpu + t.cpu, busy + t.busy
    return Timing(wall, cpu, busy)


def measure_nbgrader(bench: Bench) -> None:
    """4. A Jupyter class: the source notebooks (solutions filled in) of every group, handed in by M
    students, graded by `python -m grader nbgrader` (one assignment per group, no kernel run)."""
    from grader.authoring.release import build_nbgrader_course  # as in measure_student_loop

    m, jobs = bench.args.nbgrader_students, bench.jobs
    course = bench.tmp / "nbgrader"
    build_nbgrader_course(course)
    course.chmod(0o700)  # uid isolation refuses a class folder others can read
    nbgrader = os.path.join(BIN, "nbgrader")
    log("nbgrader generate_assignment, every group (setup, not timed)")
    for group in GROUPS:
        run_timed([nbgrader, "generate_assignment", group, "--force"], cwd=course)
        for k in range(m):
            handed_in = course / "submitted" / f"student_{k + 1:03d}" / group
            handed_in.mkdir(parents=True)
            shutil.copy(course / "source" / group / f"{group}.ipynb", handed_in)
    row = bench.add("nbgrader-grade", f"grader nbgrader, {m} students ({len(GROUPS)} solved notebooks each)",
                    f"python -m grader nbgrader COURSE --jobs {jobs}", "score-all", per=m)
    for i in range(bench.args.batch_repeat):
        log(f"grader nbgrader, {m} students {i + 1}/{bench.args.batch_repeat}")
        bench.baseline_torch()
        shutil.rmtree(course / "kata-grading", ignore_errors=True)  # no resume: grade everyone
        row.timings.append(run_timed([sys.executable, "-m", "grader", "nbgrader", str(course), "--jobs", str(jobs)],
                                     timeout=3600)[0])
    run_timed([nbgrader, "export"], cwd=course)
    bench.checks.append(_check_nbgrader(course / "grades.csv", m) if not bench.args.dry_run else
                        (f"nbgrader export: {m * len(GROUPS)} rows, all at full marks", None, "not checked (dry run)",
                         False))


def target_checks(bench: Bench) -> list[Check]:
    """The issue's speed targets and the ratios reported beside them, from the rows measured."""
    rows = {key: row for key, row in bench.rows.items() if row.timings}
    checks: list[Check] = []
    torch_s = rows["import-torch"].wall() if "import-torch" in rows else float("nan")
    for key, what, most in (("score-auto", f"grader score (sandbox auto: {bench.isolation}) ≤ 2x import torch", 2.0),
                            ("score-none", "grader score --sandbox none ≤ 2x import torch", 2.0),
                            ("progress-pass", "progress view, solutions filled in ≤ 1.5x import torch", 1.5),
                            ("progress-fail", "progress view, the stubs ≤ 1.5x import torch", 1.5)):
        if key in rows:
            ratio = rows[key].wall() / torch_s
            checks.append((what, ratio <= most, f"{ratio:.2f}x", True))
    if "score-all" in rows and "pytest-impl-each" in rows:
        speedup = rows["pytest-impl-each"].wall() / rows["score-all"].wall()
        checks.append((f"score-all's throughput over one pytest process per submission ({bench.args.students} "
                       f"submissions, --jobs {bench.jobs})", None, f"{speedup:.1f}x", True))
    if "in-process-floor" in rows and "pytest-impl-each" in rows:
        bound = rows["pytest-impl-each"].wall() / rows["in-process-floor"].wall()
        checks.append(("the in-process floor's throughput over one pytest process per submission (what the hidden "
                       "tests themselves allow here, with no isolation)", None, f"{bound:.1f}x", True))
    if "nbgrader-grade" in rows and "score-all" in rows:
        ratio = rows["nbgrader-grade"].per_sub() / rows["score-all"].per_sub()
        checks.append((f"grader nbgrader ({len(GROUPS)} notebooks) vs score-all (one folder), seconds per student",
                       None, f"{ratio:.1f}x", True))
    return checks


def main(argv: list[str] | None = None) -> int:
    argv_list = sys.argv[1:] if argv is None else argv
    if argv_list[:1] == ["--in-process-floor"]:
        return in_process_floor(Path(argv_list[1]), int(argv_list[3]))
    args = parse_args(argv)
    timing.DRY_RUN = args.dry_run
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_start, machine, code = load_average(), machine_line(), code_version()
    log(f"{machine}; load average {load_start}")
    torch_row = Row("import-torch", "baseline: start Python, import torch", 'python -c "import torch"')
    with tempfile.TemporaryDirectory(prefix="kata-bench-") as tmp_name:
        bench = Bench(args, Path(tmp_name), cores(), {"import-torch": torch_row})
        warm_up(bench)
        bench.section("student loop", measure_student_loop)
        if not args.student_only:
            sub = solution_submission(bench.tmp / "solution-submission")
            bench.section("single submission", lambda b: measure_one_submission(b, sub))
            klass = bench.tmp / "class"
            plan = build_class(klass, args.students)
            bench.section("score-all", lambda b: measure_class(b, klass, plan))
        if not (args.skip_nbgrader or args.student_only):
            bench.section("nbgrader", measure_nbgrader)
        bench.baseline_torch()
    checks = bench.checks + target_checks(bench)
    text = render(bench.rows, checks, bench.failures, machine=machine, code=code, started=started,
                  load_start=load_start, load_end=load_average(), argv=argv_list, jobs=bench.jobs, dry_run=args.dry_run)
    sys.stdout.write(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    log(f"written to {args.out}")
    return 1 if bench.failures or any(ok is False and not target for _, ok, _, target in checks) else 0


def _json(text: str) -> dict:
    import json

    try:
        return json.loads(text)
    except ValueError:
        raise BenchError(f"grader score printed no JSON report: {text[-500:]!r}") from None


def _check_csv(path: Path, plan: list[tuple[str, str]]) -> tuple[str, bool, str, bool]:
    """The CSV has one row per student, none an error, and the solution copies have full marks."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    by_student = {r["student"]: r for r in rows}
    errors = [r["student"] for r in rows if r.get("status") != "graded"]
    full = [s for s, kind in plan if kind == "solution" and s in by_student
            and float(by_student[s]["score"]) == float(by_student[s]["max_score"])]
    n_solutions = sum(kind == "solution" for _, kind in plan)
    ok = len(rows) == len(plan) and set(by_student) == {s for s, _ in plan} and len(full) == n_solutions
    detail = f"{len(rows)} rows, {len(full)}/{n_solutions} solution copies at full marks"
    if errors:
        detail += f", not graded: {', '.join(errors[:5])}"
    return (f"score-all CSV has {len(plan)} rows (one per student)", ok, detail, False)


def _check_nbgrader(path: Path, m: int) -> tuple[str, bool, str, bool]:
    """nbgrader's export: one row per student and assignment, each at full marks."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    full = [r for r in rows if float(r["score"]) == float(r["max_score"]) > 0]
    n = m * len(GROUPS)
    return (f"nbgrader export: {n} rows, all at full marks", len(rows) == n and len(full) == n,
            f"{len(rows)} rows, {len(full)} at full marks", False)


def render(rows: dict[str, Row], checks, failures, *, machine: str, code: str, started: str, load_start: str,
           load_end: str, argv: list[str], jobs: int, dry_run: bool = False) -> str:
    torch_s = rows["import-torch"].wall() if rows["import-torch"].timings else float("nan")
    out = [
        "# attention-kata benchmarks",
        "",
        f"- machine: {machine}",
        f"- code: {code}",
        f"- started {started}; load average (1, 5, 15 min) at start {load_start}, at end {load_end}",
        f"- command: `python benchmarks/run.py {' '.join(argv)}`".replace("run.py `", "run.py`"),
        *(["- DRY RUN: every measured command was replaced by `python -c pass`; the figures measure nothing"]
          if dry_run else []),
        f"- score-all and the batch rows use --jobs {jobs} (the number of cores); SUB is a copy of the "
        "repository's exercises/ with the solutions filled in",
        "",
        "| row | what | command | runs | wall s (median; min-max) | per | s / submission | CPU s / submission "
        "| machine CPU s / submission | × import torch | × baseline | baseline |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for key in ROW_KEYS:
        row = rows.get(key)
        if row is None or not row.timings:
            continue
        walls = [t.wall for t in row.timings]
        base = rows.get(row.baseline)
        vs_base = f"{row.per_sub() / base.per_sub():.3f}" if base is not None and base.timings else "-"
        what = row.what + (f" ({row.note})" if row.note else "")
        out.append(
            f"| {key} | {what} | `{row.command}` | {len(walls)} | {row.wall():.3f} ({min(walls):.3f}-{max(walls):.3f}) "
            f"| {row.per} | {row.per_sub():.3f} | {row.cpu() / row.per:.3f} | {row.busy() / row.per:.3f} "
            f"| {row.per_sub() / torch_s:.3f} "
            f"| {vs_base} | {row.baseline or '-'} |")
    out += ["", "## Targets and checks", ""]
    for what, ok, detail, _ in checks:
        mark = "info" if ok is None else ("PASS" if ok else "FAIL")
        out.append(f"- {mark}: {what}: {detail}")
    for failure in failures:
        out.append(f"- ERROR: {failure.splitlines()[0]}")
        out += [f"    {line}" for line in failure.splitlines()[1:40]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
