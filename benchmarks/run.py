#!/usr/bin/env python
"""Benchmarks (issue 6): the student loop, one ``grader score``, ``score-all`` on a class and nbgrader.

    python benchmarks/run.py [--students 50] [--nbgrader-students 10] [--repeat 3] [--batch-repeat 1]
                             [--skip-nbgrader] [--quick | --dry-run] [--out benchmarks/results.md]

Everything is measured in ONE run on this machine, side by side, with each baseline timed in the same
run and interleaved with what it is compared to (``python -c "import torch"`` runs between all the
other measurements), so that the machine's load affects both. Each figure is wall-clock seconds per
run or per submission (median over ``--repeat`` runs), the CPU seconds of the descendants that were
waited for, the CPU seconds the whole machine was busy meanwhile (/proc/stat), and ratios:

* ``× import torch``: the time over the median of all ``python -c "import torch"`` runs;
* ``× baseline``: the time over the row named in the ``baseline`` column (< 1: faster).

The issue's targets are checked below the table: ``grader score`` at most 2x ``import torch``;
``score-all`` at least 20x the throughput of one ``pytest tests --impl SUB`` process per submission
for 50 submissions; the CSV has one row per student; `grader nbgrader` gives the solved notebooks full
points in nbgrader's export.

The ``in-process-floor`` row is what the hidden tests themselves cost, with no isolation at all:
torch and pytest imported once, then ``--jobs`` processes each run the hidden tests on their share
of the class one submission after another, in-process. A grader that keeps the student's code out
of its own process cannot be faster than that, so its ratio to the per-submission loop bounds what
``score-all`` can reach here.

Only the standard library and what the project installs (grader.authoring.release builds the student copies and
the nbgrader course). Subprocesses run ``sys.executable`` from the repository root, with
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
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from grader.rubric import GROUPS  # noqa: E402  (importable once the repository root is on sys.path)
from grader.authoring import mutation  # noqa: E402  (the mutants are patches to the solutions: grader/authoring/mutation.py)

SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
BIN = str(Path(sys.executable).parent)
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")

# The keys of the table's rows, in order (grader/tests/test_benchmarks.py checks them).
ROW_KEYS = ("import-torch", "student-pass", "student-fail", "score-auto", "score-none", "pytest-impl",
            "score-all", "in-process-floor", "pytest-impl-each", "nbgrader-grade")


class BenchError(RuntimeError):
    """A benchmarked command did not do what it should (wrong exit code, missing output)."""


def bench_env() -> dict[str, str]:
    """This environment, venv bin first on PATH (nbgrader shells out to alembic), bytecode allowed."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in [k for k in env if k.startswith("PYTEST_")]:  # e.g. when run from the project's tests
        env.pop(name)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


ENV = bench_env()


@dataclass
class Timing:
    wall: float
    cpu: float  # user + system seconds of the command and its descendants that were waited for
    busy: float  # CPU seconds the whole machine was busy meanwhile (all processes, from /proc/stat)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy() -> float:
    """CPU seconds all cores of this machine have been busy (user, nice, system, irq, softirq); nan if unknown."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
    except (OSError, ValueError, IndexError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / _TICK


@dataclass
class Row:
    key: str
    what: str
    command: str
    per: int = 1  # submissions (or runs) one timing covers
    baseline: str = ""  # key of the row it is compared to
    timings: list[Timing] = field(default_factory=list)
    note: str = ""

    def wall(self) -> float:
        return statistics.median(t.wall for t in self.timings)

    def cpu(self) -> float:
        return statistics.median(t.cpu for t in self.timings)

    def busy(self) -> float:
        return statistics.median(t.busy for t in self.timings)

    def per_sub(self) -> float:
        return self.wall() / self.per


DRY_RUN = False  # --dry-run: every measured command is replaced by `python -c pass`


def run_timed(cmd: list[str], cwd: Path = REPO, ok: tuple[int, ...] = (0,), timeout: float = 600) -> tuple[Timing, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = machine_busy()
    start = time.perf_counter()
    run = [sys.executable, "-c", f"raise SystemExit({ok[0]})"] if DRY_RUN else cmd
    proc = subprocess.run(run, cwd=cwd, env=ENV, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    busy = machine_busy() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise BenchError(f"{' '.join(map(str, cmd))} (in {cwd}) exited {proc.returncode}, expected {ok}\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, busy), proc


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load_average()}] {message}", file=sys.stderr, flush=True)


# --- the machine ---------------------------------------------------------------------------------


def machine_line() -> str:
    from importlib.metadata import version

    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{platform.platform()}, nproc {nproc}, {model}, Python {platform.python_version()}, "
            f"torch {version('torch')}")


def code_version() -> str:
    """The commit measured, and whether the working tree differs from it (outside benchmarks/)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!benchmarks"], cwd=REPO,
                                 capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return f"commit {head or '?'}" + (f", plus uncommitted changes in {len(changed)} paths" if changed else ", clean")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# --- building the inputs -------------------------------------------------------------------------


def overlay_solutions(exercises_dir: Path) -> None:
    """Fill an ``exercises/`` copy: every module of ``solutions/`` written over its stub."""
    for path in sorted(SOLUTIONS.glob("*/*.py")):
        shutil.copyfile(path, exercises_dir / path.parent.name / path.name)


def mutant_names() -> list[str]:
    return [m["name"] for m in mutation.load_mutants()]


def class_plan(n: int) -> list[tuple[str, str]]:
    """(student, kind) for a class of ``n``: kind is ``solution``, ``stub`` or a mutant's name.

    Per ten students: six solutions, three mutants (taken in turn), one untouched stub copy; the
    first three are a solution, a mutant and a stub.
    """
    mutants = mutant_names()
    plan, used = [], 0
    for i in range(n):
        if i % 10 == 2:
            kind = "stub"
        elif i % 10 in (1, 5, 8) and mutants:
            kind, used = mutants[used % len(mutants)], used + 1
        else:
            kind = "solution"
        plan.append((f"student_{i + 1:03d}", kind))
    return plan


def build_class(folder: Path, n: int) -> list[tuple[str, str]]:
    """One ``<student>/exercises/`` per student (a copy of the repo's exercises, filled per the plan)."""
    plan = class_plan(n)
    mutants = {m["name"]: m for m in mutation.load_mutants()}
    for student, kind in plan:
        exercises = folder / student / "exercises"
        shutil.copytree(EXERCISES, exercises, ignore=IGNORE)
        if kind == "stub":
            continue
        overlay_solutions(exercises)
        if kind != "solution":
            mutation.write_patched(mutants[kind], exercises)
    return plan


# --- the measurements ----------------------------------------------------------------------------


def in_process_floor(klass: Path, jobs: int) -> int:
    """The ``in-process-floor`` row: the hidden tests on every submission, no worker, no sandbox.

    torch and pytest are imported once; ``jobs`` forks each take every ``jobs``-th submission and
    run the hidden tests on them one after another, in-process (``pytest.main`` with the grader's
    own pytest options), forgetting the previous submission's modules in between. Exit 1 when a run
    did not end with pytest's 0 (passed) or 1 (failed).
    """
    import contextlib
    import io

    import pytest
    import torch

    torch.set_num_threads(1)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = [str(REPO / "tests"), "-q", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "-p", "no:threadexception", "--rootdir", str(REPO), "-W", "ignore::UserWarning"]
    bare_modules = {p.stem for p in SOLUTIONS.glob("*/*.py")}
    submissions = sorted(p for p in klass.iterdir() if p.is_dir())

    def job(share: list[Path]) -> int:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for sub in share:
            for module in list(sys.modules.values()):
                if hasattr(module, "_local_impl"):  # tests/conftest.py: one implementation per process
                    module._local_impl = None
            for name in bare_modules:
                sys.modules.pop(name, None)
            sys.path[:] = [p for p in sys.path if not p.startswith(str(klass))]
            with contextlib.redirect_stdout(io.StringIO()):
                # --impl=DIR, not --impl DIR: pytest would also run DIR/conftest.py (the grader does not)
                if pytest.main([*args, f"--impl={sub / 'exercises'}"]) not in (0, 1):
                    return 1
        return 0

    pids = []
    for j in range(jobs):
        pid = os.fork()
        if pid == 0:
            rc = 1
            try:
                rc = job(submissions[j::jobs])
            finally:
                os._exit(rc)
        pids.append(pid)
    return 1 if any(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids) else 0


def main(argv: list[str] | None = None) -> int:
    argv_list = sys.argv[1:] if argv is None else argv
    if argv_list[:1] == ["--in-process-floor"]:
        return in_process_floor(Path(argv_list[1]), int(argv_list[3]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=50, help="submissions for score-all (default 50)")
    parser.add_argument("--nbgrader-students", type=int, default=10, help="students of the Jupyter class graded by grader nbgrader (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each single command (default 3; median reported)")
    parser.add_argument("--batch-repeat", type=int, default=1, help="runs of each batch measurement (default 1)")
    parser.add_argument("--skip-nbgrader", action="store_true", help="leave out the Jupyter class (grader nbgrader)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 3 students, 2 for nbgrader, every command once, no warm-up")
    parser.add_argument("--dry-run", action="store_true",
                        help="--quick with every measured command replaced by `python -c pass`: checks this script "
                             "and its table, measures nothing")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results.md", help="markdown file to write")
    args = parser.parse_args(argv)
    global DRY_RUN
    DRY_RUN = args.dry_run
    if args.quick or args.dry_run:
        args.students, args.nbgrader_students, args.repeat, args.batch_repeat = 3, 2, 1, 1
    if min(args.students, args.nbgrader_students, args.repeat, args.batch_repeat) < 1:
        parser.error("--students, --nbgrader-students, --repeat and --batch-repeat must be at least 1")

    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_start = load_average()
    machine = machine_line()
    code = code_version()
    jobs = cores()
    log(f"{machine}; load average {load_start}")
    torch_row = Row("import-torch", "baseline: start Python, import torch", 'python -c "import torch"')
    rows: dict[str, Row] = {"import-torch": torch_row}
    # (what, passed or None for a plain figure, detail, is a speed target: reported, not enforced)
    checks: list[tuple[str, bool | None, str, bool]] = []
    failures: list[str] = []

    def baseline_torch() -> None:
        timing, _ = run_timed([sys.executable, "-c", "import torch"])
        torch_row.timings.append(timing)

    with tempfile.TemporaryDirectory(prefix="kata-bench-") as tmp_name:
        tmp = Path(tmp_name)
        from grader.authoring.release import build_nbgrader_course, build_student_release

        # Warm-up (not timed): the page cache and the __pycache__ folders of the grader and tests.
        baseline_torch()
        torch_row.timings.clear()
        if not args.quick:
            log("warm-up")
            run_timed([sys.executable, "-m", "grader", "score", str(SOLUTIONS), "--sandbox", "none"])
            run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(SOLUTIONS), "-q"])

        # 1. The student loop, in copies of the student release (exercises/ + pytest.ini).
        try:
            passing, failing = tmp / "student-pass", tmp / "student-fail"
            build_student_release(passing)
            overlay_solutions(passing / "exercises")
            build_student_release(failing)
            rows["student-pass"] = Row("student-pass", "student loop, solutions filled in (passes)",
                                       "pytest exercises/03_causal", baseline="import-torch")
            rows["student-fail"] = Row("student-fail", "student loop, the stubs (fails)",
                                       "pytest exercises/03_causal", baseline="import-torch")
            cmd = [sys.executable, "-m", "pytest", "exercises/03_causal"]
            for i in range(args.repeat):
                log(f"student loop {i + 1}/{args.repeat}")
                baseline_torch()
                rows["student-pass"].timings.append(run_timed(cmd, cwd=passing, ok=(0,))[0])
                rows["student-fail"].timings.append(run_timed(cmd, cwd=failing, ok=(1,))[0])
        except (BenchError, subprocess.TimeoutExpired) as err:
            failures.append(f"student loop: {err}")

        # 2. One submission: grader score (bwrap when it works here, and none) vs one pytest process.
        sub = tmp / "solution-submission"
        shutil.copytree(EXERCISES, sub / "exercises", ignore=IGNORE)
        overlay_solutions(sub / "exercises")
        isolation = "?"
        try:
            rows["score-auto"] = Row("score-auto", "grade one submission (sandbox auto)",
                                     "python -m grader score SUB", baseline="pytest-impl")
            rows["score-none"] = Row("score-none", "grade one submission, no sandbox",
                                     "python -m grader score SUB --sandbox none", baseline="pytest-impl")
            rows["pytest-impl"] = Row("pytest-impl", "one pytest process on the hidden tests",
                                      "pytest tests --impl SUB/exercises", baseline="import-torch")
            score = [sys.executable, "-m", "grader", "score", str(sub), "--format", "json"]
            for i in range(args.repeat):
                log(f"single submission {i + 1}/{args.repeat}")
                baseline_torch()
                timing, proc = run_timed(score)
                rows["score-auto"].timings.append(timing)
                report = {"isolation": "dry run"} if DRY_RUN else _json(proc.stdout)
                isolation = report.get("isolation", "?")
                if report.get("score") != report.get("max_score"):
                    failures.append(f"grader score on the solutions: {report.get('score')} / {report.get('max_score')}")
                rows["score-none"].timings.append(run_timed([*score, "--sandbox", "none"])[0])
                rows["pytest-impl"].timings.append(
                    run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(sub / "exercises"), "-q"])[0])
            rows["score-auto"].note = f"isolation: {isolation}"
        except (BenchError, subprocess.TimeoutExpired) as err:
            failures.append(f"single submission: {err}")

        # 3. A class: score-all with one job per core vs one pytest process per submission, in turn.
        klass = tmp / "class"
        plan = build_class(klass, args.students)
        kinds = {"solution": 0, "stub": 0, "mutant": 0}
        for _, kind in plan:
            kinds[kind if kind in kinds else "mutant"] += 1
        mix = f"{kinds['solution']} solutions, {kinds['mutant']} mutants, {kinds['stub']} stubs"
        n = args.students
        try:
            rows["score-all"] = Row("score-all", f"grade a class of {n} ({mix})",
                                    f"python -m grader score-all CLASS --csv grades.csv --jobs {jobs}",
                                    per=n, baseline="pytest-impl-each")
            rows["in-process-floor"] = Row("in-process-floor", f"the hidden tests alone, no isolation: {jobs} processes, "
                                           f"{n} submissions in-process", f"python benchmarks/run.py "
                                           f"--in-process-floor CLASS --jobs {jobs}", per=n, baseline="pytest-impl-each")
            rows["pytest-impl-each"] = Row("pytest-impl-each", f"baseline: one pytest process per submission, {n} in turn",
                                           "for SUB in CLASS/*: pytest tests --impl SUB/exercises", per=n,
                                           baseline="import-torch")
            for i in range(args.batch_repeat):
                log(f"score-all on {n} {i + 1}/{args.batch_repeat}")
                baseline_torch()
                grades = tmp / f"grades-{i}.csv"
                timing, _ = run_timed([sys.executable, "-m", "grader", "score-all", str(klass), "--csv", str(grades),
                                       "--jobs", str(jobs)], timeout=3600)
                rows["score-all"].timings.append(timing)
                checks.append(_check_csv(grades, plan) if not DRY_RUN else
                              (f"score-all CSV has {len(plan)} rows (one per student)", None, "not checked (dry run)", False))
                log(f"in-process floor on {n} {i + 1}/{args.batch_repeat}")
                rows["in-process-floor"].timings.append(run_timed(
                    [sys.executable, str(Path(__file__).resolve()), "--in-process-floor", str(klass), "--jobs", str(jobs)],
                    timeout=3600)[0])
                log(f"one pytest per submission, {n} in turn {i + 1}/{args.batch_repeat}")
                baseline_torch()
                wall = cpu = busy = 0.0
                for student, _ in plan:
                    t, _ = run_timed([sys.executable, "-m", "pytest", "tests", "--impl", str(klass / student / "exercises"),
                                      "-q"], ok=(0, 1), timeout=600)
                    wall, cpu, busy = wall + t.wall, cpu + t.cpu, busy + t.busy
                rows["pytest-impl-each"].timings.append(Timing(wall, cpu, busy))
        except (BenchError, subprocess.TimeoutExpired) as err:
            failures.append(f"score-all: {err}")

        # 4. A Jupyter class: the source notebooks (solutions filled in) of every group, handed in by M
        #    students, graded by `python -m grader nbgrader` (one assignment per group, no kernel run).
        if not args.skip_nbgrader:
            m = args.nbgrader_students
            try:
                course = tmp / "nbgrader"
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
                rows["nbgrader-grade"] = Row(
                    "nbgrader-grade", f"grader nbgrader, {m} students (4 solved notebooks each)",
                    f"python -m grader nbgrader COURSE --jobs {jobs}", per=m, baseline="score-all")
                for i in range(args.batch_repeat):
                    log(f"grader nbgrader, {m} students {i + 1}/{args.batch_repeat}")
                    baseline_torch()
                    shutil.rmtree(course / "kata-grading", ignore_errors=True)  # no resume: grade everyone
                    rows["nbgrader-grade"].timings.append(run_timed(
                        [sys.executable, "-m", "grader", "nbgrader", str(course), "--jobs", str(jobs)],
                        timeout=3600)[0])
                run_timed([nbgrader, "export"], cwd=course)
                checks.append(_check_nbgrader(course / "grades.csv", m) if not DRY_RUN else
                              (f"nbgrader export: {m * len(GROUPS)} rows, all at full marks", None,
                               "not checked (dry run)", False))
            except (BenchError, subprocess.TimeoutExpired) as err:
                failures.append(f"nbgrader: {err}")
        baseline_torch()

    load_end = load_average()
    torch_s = torch_row.wall() if torch_row.timings else float("nan")
    for key, target, what in (("score-auto", 2.0, f"grader score (sandbox auto: {isolation}) ≤ 2x import torch"),
                              ("score-none", 2.0, "grader score --sandbox none ≤ 2x import torch")):
        if key in rows and rows[key].timings:
            ratio = rows[key].wall() / torch_s
            checks.append((what, ratio <= target, f"{ratio:.2f}x", True))
    if rows.get("score-all") and rows["score-all"].timings and rows["pytest-impl-each"].timings:
        speedup = rows["pytest-impl-each"].wall() / rows["score-all"].wall()
        checks.append((f"score-all throughput ≥ 20x one pytest process per submission ({args.students} submissions, "
                       f"--jobs {jobs})", speedup >= 20, f"{speedup:.1f}x", True))
    if rows.get("in-process-floor") and rows["in-process-floor"].timings and rows["pytest-impl-each"].timings:
        bound = rows["pytest-impl-each"].wall() / rows["in-process-floor"].wall()
        checks.append(("the in-process floor's throughput over one pytest process per submission (what the hidden "
                       "tests themselves allow here, with no isolation)", None, f"{bound:.1f}x", True))
    if rows.get("nbgrader-grade") and rows["nbgrader-grade"].timings and rows.get("score-all") and rows["score-all"].timings:
        ratio = rows["nbgrader-grade"].per_sub() / rows["score-all"].per_sub()
        checks.append(("grader nbgrader (4 notebooks) vs score-all (one folder), seconds per student", None,
                       f"{ratio:.1f}x", True))

    text = render(rows, checks, failures, machine=machine, code=code, started=started, load_start=load_start,
                  load_end=load_end, argv=argv if argv is not None else sys.argv[1:], jobs=jobs)
    sys.stdout.write(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    log(f"written to {args.out}")
    return 1 if failures or any(ok is False and not target for _, ok, _, target in checks) else 0


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
           load_end: str, argv: list[str], jobs: int) -> str:
    torch_s = rows["import-torch"].wall() if rows["import-torch"].timings else float("nan")
    out = [
        "# attention-kata benchmarks",
        "",
        f"- machine: {machine}",
        f"- code: {code}",
        f"- started {started}; load average (1, 5, 15 min) at start {load_start}, at end {load_end}",
        f"- command: `python benchmarks/run.py {' '.join(argv)}`".replace("run.py `", "run.py`"),
        *(["- DRY RUN: every measured command was replaced by `python -c pass`; the figures measure nothing"]
          if DRY_RUN else []),
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
