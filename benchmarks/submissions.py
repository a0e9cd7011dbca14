"""The submissions benchmarks/run.py grades: the solutions laid over a copy of the stubs, a class of
solutions, mutants (tests/mutants) and stubs, and the in-process floor that runs the hidden tests
over such a class with no isolation at all (``python benchmarks/run.py --in-process-floor``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from grader.authoring import mutation  # the mutants are patches to the solutions

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def overlay_solutions(exercises_dir: Path) -> None:
    """Fill an ``exercises/`` copy: every module of ``solutions/`` written over its stub."""
    for path in sorted(SOLUTIONS.glob("*/*.py")):
        shutil.copyfile(path, exercises_dir / path.parent.name / path.name)


def solution_submission(folder: Path) -> Path:
    """``folder/exercises``: a copy of the repository's exercises/ with the solutions filled in."""
    shutil.copytree(EXERCISES, folder / "exercises", ignore=IGNORE)
    overlay_solutions(folder / "exercises")
    return folder


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
