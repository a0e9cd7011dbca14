"""Helpers for proving the public tests (``exercises/<group>/test_<module>.py``): every run they need, at once.

``public_runs()`` (computed once per process, used by test_exercises.py and test_public_tests.py) runs
the public tests on a copy of ``exercises/`` beside its own tiny ``pytest.ini`` (so that the
repository's pyproject settings, testpaths and timeout, do not apply):

* ``"stubs"``: every public test on the stubs as they are;
* ``"solved"``: every public test with the reference solutions in place of the stubs;
* one run per student mistake of ``tests/mutants/student_mistakes.py`` and per mutant of the library
  with a cause (grader/authoring/known_results.py): the public tests of the patched module (its whole
  group's folder when the mistake says ``"run": "group"``), the solutions in place and the patched
  module in place of its solution, every check recording what it was given (``recorded()``);
* ``DOCTESTS``: ``pytest --doctest-modules solutions`` (the ``>>>`` examples, with the repository's
  settings and ``solutions/conftest.py``).

The public tests import the module under test by its bare name while they run (``kata_checks.load``,
never at import time: test_public_tests.py checks it), so "in place" means first on ``sys.path``: the
tests are collected once (grader/authoring/forked_pytest.py: torch imported once, the collection checked to import no
exercise module), and every run is a forked child whose ``sys.path`` starts with the solutions' group
folders, after the folder of the patched module for a mistake. Results: ``{run: {nodeid: (status,
message)}}``, or ``{"__error__": (what, why)}`` for a run that could not happen.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from grader.authoring import known_results, mutation
from grader.rubric import REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, load_rubric

EXERCISES_DIR = REPO_ROOT / "exercises"
MISTAKES = mutation.load_patches(TESTS_DIR / "mutants" / "student_mistakes.py", "MISTAKES")
DOCTESTS = known_results.DOCTESTS
public_test_file = known_results.public_test_file


def fill_in(tree: Path, modules: tuple[str, ...]) -> None:
    """Put the reference solutions of ``modules`` over their stubs in ``tree`` (an ``exercises/`` layout),
    as a student who has done those modules."""
    by_module = load_rubric().by_module
    for module in modules:
        ex = by_module[module]
        shutil.copy(SOLUTIONS_DIR / ex.group / f"{module}.py", tree / ex.group / f"{module}.py")


def library() -> list[dict]:
    """Every run's patch: the student mistakes, and the library's mistakes with a cause (mutants among them)."""
    names = {m["name"] for m in MISTAKES}
    return [*MISTAKES, *(p for p in known_results.library() if p["name"] not in names)]


@functools.cache
def _runs() -> tuple[dict, dict]:
    raw, records = known_results.run_public_tests(library(), doctests=True)
    results = {}
    for run, res in raw.items():
        if "__error__" in res:
            results[run] = res
        elif res["rc"] not in (0, 1) or not res["tests"]:
            results[run] = {"__error__": ("pytest", f"ended with {res['rc']}:\n{res['output']}")}
        else:
            results[run] = {nodeid: (status, message) for nodeid, (status, _, message) in res["tests"].items()}
    return results, records


def public_runs() -> dict[str, dict[str, tuple[str, str]]]:
    """Every run of the module's docstring (once per process): ``{run: {nodeid: (status, message)}}``."""
    return _runs()[0]


def recorded() -> dict[str, list[dict]]:
    """What every check was given in each run (exercises/kata_known.py), by run."""
    return _runs()[1]
