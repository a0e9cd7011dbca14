"""Helpers for proving the public tests (``exercises/<group>/test_<module>.py``): every run they need, at once.

``public_runs()`` (computed once per process, used by test_exercises.py and test_public_tests.py) runs
the public tests on a copy of ``exercises/`` beside its own tiny ``pytest.ini`` (so that the
repository's pyproject settings, testpaths and timeout, do not apply):

* ``"stubs"``: every public test on the stubs as they are;
* ``"solved"``: every public test with the reference solutions in place of the stubs;
* one run per student mistake of ``student_mistakes/mistakes.py``: the public tests of the patched
  module (its whole group's folder when the mistake says ``"run": "group"``), the solutions in place
  and the patched module in place of its solution;
* ``DOCTESTS``: ``pytest --doctest-modules solutions`` (the ``>>>`` examples, with the repository's
  settings and ``solutions/conftest.py``).

The public tests import the module under test by its bare name while they run (``kata_checks.load``,
never at import time: test_public_tests.py checks it), so "in place" means first on ``sys.path``: the
tests are collected once (forked_pytest.py: torch imported once, the collection checked to import no
exercise module), and every run is a forked child whose ``sys.path`` starts with the solutions' group
folders, after the folder of the patched module for a mistake. Results: ``{run: {nodeid: (status,
message)}}``, or ``{"__error__": (what, why)}`` for a run that could not happen.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from grader.authoring import mutation
from grader.rubric import GROUPS, REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, load_rubric

try:
    from . import forked_pytest
except ImportError:
    import forked_pytest

EXERCISES_DIR = REPO_ROOT / "exercises"
MISTAKES = mutation.load_patches(Path(__file__).resolve().parent / "student_mistakes" / "mistakes.py", "MISTAKES")
DOCTESTS = "__doctests__"
INI = "[pytest]\ntimeout = 60\nfilterwarnings =\n    ignore:Failed to initialize NumPy\n"
SOLVED_PATH = [str(SOLUTIONS_DIR / group) for group in GROUPS]


def public_test_file(ex_id: str, tree: Path = EXERCISES_DIR) -> Path:
    """``tree/<group>/test_<module>.py``: the public tests of an exercise (same layout as the hidden ones)."""
    return tree / load_rubric().exercises[ex_id].test_file.relative_to(TESTS_DIR)


def fill_in(tree: Path, modules: tuple[str, ...]) -> None:
    """Put the reference solutions of ``modules`` over their stubs in ``tree`` (an ``exercises/`` layout),
    as a student who has done those modules."""
    by_module = load_rubric().by_module
    for module in modules:
        ex = by_module[module]
        shutil.copy(SOLUTIONS_DIR / ex.group / f"{module}.py", tree / ex.group / f"{module}.py")


@functools.cache
def public_runs() -> dict[str, dict[str, tuple[str, str]]]:
    """Every run of the module's docstring (once per process)."""
    modules = [ex.module for ex in load_rubric().exercises.values()]
    with tempfile.TemporaryDirectory(prefix="public-runs-") as tmp_name:
        tmp = Path(tmp_name)
        shutil.copytree(EXERCISES_DIR, tmp / "exercises", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (tmp / "pytest.ini").write_text(INI)
        jobs = [{"id": "stubs"}, {"id": "solved", "path": SOLVED_PATH}]
        broken = {}
        for m in MISTAKES:
            try:
                patched = mutation.write_patched(m, tmp / "mistakes" / m["name"])
            except mutation.PatchError as err:
                broken[m["name"]] = {"__error__": ("patch", str(err))}
                continue
            target = public_test_file(m["exercise"], Path("exercises"))
            select = f"{target.parent.as_posix()}/" if m.get("run") == "group" else f"{target.as_posix()}::"
            jobs.append({"id": m["name"], "path": [str(patched.parent), *SOLVED_PATH], "select": [select]})
        raw = forked_pytest.run_sessions([
            {"args": ["exercises", "-c", "pytest.ini", "--rootdir", str(tmp)], "cwd": str(tmp), "forbid": modules,
             "jobs": jobs},
            {"args": ["--doctest-modules", "solutions"], "cwd": str(REPO_ROOT), "jobs": [{"id": DOCTESTS}]},
        ], timeout=180)
    results = {}
    for run, res in raw.items():
        if res["rc"] not in (0, 1) or not res["tests"]:
            results[run] = {"__error__": ("pytest", f"ended with {res['rc']}:\n{res['output']}")}
        else:
            results[run] = {nodeid: (status, message) for nodeid, (status, _, message) in res["tests"].items()}
    return {**results, **broken}
