"""Helpers for proving the public tests (``exercises/<group>/test_<module>.py``): student trees and their runs.

* ``public_tree(dest, solved)``: ``dest/exercises``, a copy of the repository's ``exercises/`` (the
  stubs, or with every module replaced by its reference solution), beside its own tiny
  ``dest/pytest.ini``, so that the repository's pyproject settings (testpaths, timeout) do not apply;
* ``tree_run(dest, target)``: the (cwd, pytest arguments) of a run of ``target`` (a test file or
  folder of such a tree) with ``dest`` as rootdir;
* ``run_public({job id: (cwd, arguments)})``: those runs, every one a child forked from one warm
  process (forked_pytest.py: torch is imported once), two at a time; ``{job id: {nodeid: (status, message)}}``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.rubric import REPO_ROOT, TESTS_DIR, load_rubric

try:
    from . import forked_pytest
except ImportError:
    import forked_pytest

EXERCISES_DIR = REPO_ROOT / "exercises"
INI = "[pytest]\ntimeout = 60\nfilterwarnings =\n    ignore:Failed to initialize NumPy\n"


def public_test_file(ex_id: str, tree: Path = EXERCISES_DIR) -> Path:
    """``tree/<group>/test_<module>.py``: the public tests of an exercise (same layout as the hidden ones)."""
    return tree / load_rubric().exercises[ex_id].test_file.relative_to(TESTS_DIR)


def public_tree(dest: Path, solved: bool) -> Path:
    """``dest/exercises`` (see the module's docstring); its path."""
    tree = dest / "exercises"
    shutil.copytree(EXERCISES_DIR, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if solved:
        for ex in load_rubric().exercises.values():
            shutil.copy(ex.reference_file, tree / ex.group / ex.reference_file.name)
    (dest / "pytest.ini").write_text(INI)
    return tree


def tree_run(dest: Path, target: Path) -> tuple[Path, list[str]]:
    """Where and how to run ``target`` in the tree ``public_tree(dest, ...)`` made."""
    return dest, [str(target), "-c", str(dest / "pytest.ini"), "--rootdir", str(dest)]


def run_public(runs: dict[str, tuple[Path, list[str]]]) -> dict[str, dict[str, tuple[str, str]]]:
    """``{job id: {nodeid: (status, message)}}``; a run that reports no test or ends with neither 0 nor 1
    gives ``{"__error__": ("error", why)}``."""
    jobs = [{"id": job_id, "cwd": str(cwd), "args": args} for job_id, (cwd, args) in runs.items()]
    raw = forked_pytest.run_jobs(jobs, timeout=180)
    results = {}
    for job_id, res in raw.items():
        if res["rc"] not in (0, 1) or not res["tests"]:
            results[job_id] = {"__error__": ("error", f"pytest ended with {res['rc']}:\n{res['output']}")}
        else:
            results[job_id] = {nodeid: (status, message) for nodeid, (status, _, message) in res["tests"].items()}
    return results
