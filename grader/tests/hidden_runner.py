"""Helpers for proving the hidden tests: run them on an implementation dir, read back per-test outcomes.

* ``run_hidden_tests(impl_dir)`` runs ``python -m pytest tests --impl impl_dir`` in a subprocess
  from the repository root and parses its JUnit XML into ``{nodeid: Outcome}``.
* ``overlay_dir(mutant)`` builds a throwaway implementation: ``solutions/`` copied to a temporary
  directory with the mutant's module files laid over it.
* ``load_mutants()`` reads ``tests/mutants/<name>/mutant.json`` for every mutant.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
EXERCISES_DIR = REPO_ROOT / "exercises"
MUTANTS_DIR = TESTS_DIR / "mutants"
RUBRIC_PATH = TESTS_DIR / "rubric.json"
GROUPS = ("01_simple_attention", "02_trainable_weights", "03_causal", "04_multihead")


def load_rubric() -> dict:
    return json.loads(RUBRIC_PATH.read_text())


def exercise_ids() -> list[str]:
    return list(load_rubric()["exercises"])


class Outcome(NamedTuple):
    """One hidden test's result. ``status`` is ``passed``, ``failed``, ``error`` or ``skipped``."""

    exercise: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class HiddenRunError(RuntimeError):
    """pytest did not produce a usable report (usage error, crash, nothing collected, ...)."""


def _exercise_of(classname: str) -> tuple[str, str]:
    """``tests.03_causal.test_causal_mask.TestX`` -> (``03_causal/causal_mask``, ``tests/03_causal/test_causal_mask.py::TestX``)."""
    parts = classname.split(".")
    for i in range(len(parts) - 1):
        if parts[i] in GROUPS and parts[i + 1].startswith("test_"):
            path = "/".join(parts[: i + 2]) + ".py"
            nodeid = "::".join([path, *parts[i + 2 :]])
            return f"{parts[i]}/{parts[i + 1].removeprefix('test_')}", nodeid
    return "", classname.replace(".", "/")


def parse_junit(xml_path: Path) -> dict[str, Outcome]:
    """``{nodeid: Outcome}`` from a pytest JUnit XML report.

    The exercise comes from the ``exercise`` property the hidden tests' conftest records, else from
    the test file's path in ``classname``. A test reported more than once (e.g. passed, then an error
    in teardown) keeps its worst outcome.
    """
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    results: dict[str, Outcome] = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        exercise, nodeid = _exercise_of(case.get("classname", ""))
        nodeid = f"{nodeid}::{case.get('name', '')}"
        for prop in case.iter("property"):
            if prop.get("name") == "exercise":
                exercise = prop.get("value", exercise)
        status, message = "passed", ""
        for tag in ("error", "failure", "skipped"):
            node = case.find(tag)
            if node is not None:
                status = {"failure": "failed"}.get(tag, tag)
                message = (node.get("message") or node.text or "").strip()
                break
        new = Outcome(exercise, status, message)
        old = results.get(nodeid)
        if old is None or rank[new.status] > rank[old.status]:
            results[nodeid] = new
    return results


def run_hidden_tests(
    impl_dir: Path, *extra_args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> dict[str, Outcome]:
    """Run every hidden test against ``impl_dir`` in a fresh interpreter; ``{nodeid: Outcome}``.

    ``env`` adds to (overrides) this process's environment. Raises HiddenRunError when pytest ends
    with anything but "all passed" / "some failed" (exit codes 0 and 1) or writes no report.
    """
    with tempfile.TemporaryDirectory(prefix="hidden-run-") as tmp:
        xml_path = Path(tmp) / "r.xml"
        cmd = [
            sys.executable, "-m", "pytest", "tests", "--impl", str(impl_dir),
            "-p", "no:cacheprovider", f"--junitxml={xml_path}", "-q", *extra_args,
        ]
        full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        proc = subprocess.run(cmd, cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode not in (0, 1) or not xml_path.exists():
            raise HiddenRunError(
                f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return parse_junit(xml_path)


@dataclass(frozen=True)
class Mutant:
    """A broken implementation: ``tests/mutants/<name>/<group>/<module>.py`` + ``mutant.json``."""

    name: str
    path: Path
    exercise: str
    mistake: str
    collateral: tuple[str, ...] = field(default=())

    @property
    def files(self) -> list[Path]:
        """The module files it overlays, relative to the mutant folder (``03_causal/causal_attention.py``)."""
        return sorted(p.relative_to(self.path) for p in self.path.rglob("*.py") if "__pycache__" not in p.parts)


def load_mutants() -> list[Mutant]:
    mutants = []
    for meta_path in sorted(MUTANTS_DIR.glob("*/mutant.json")):
        meta = json.loads(meta_path.read_text())
        mutants.append(
            Mutant(
                name=meta_path.parent.name,
                path=meta_path.parent,
                exercise=meta["exercise"],
                mistake=meta["mistake"],
                collateral=tuple(meta.get("collateral", ())),
            )
        )
    return mutants


@contextlib.contextmanager
def overlay_dir(mutant: Mutant) -> Iterator[Path]:
    """A temporary copy of ``solutions/`` with the mutant's module files written over it."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as tmp:
        impl = Path(tmp) / "impl"
        shutil.copytree(SOLUTIONS_DIR, impl, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for rel in mutant.files:
            shutil.copyfile(mutant.path / rel, impl / rel)
        yield impl


# Mutants run two at a time on two cores: one torch thread each avoids oversubscription.
MUTANT_RUN_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def check_mutant(mutant: Mutant) -> tuple[list[str], dict[str, Outcome]]:
    """Run the hidden tests on solutions + the mutant; the problems found (empty: the mutant is caught)."""
    with overlay_dir(mutant) as impl:
        try:
            results = run_hidden_tests(impl, env=MUTANT_RUN_ENV)
        except (HiddenRunError, subprocess.TimeoutExpired) as exc:
            return [f"the hidden-test run did not complete: {exc}"], {}
    own_failed = [n for n, o in results.items() if o.exercise == mutant.exercise and not o.passed]
    problems = []
    if not own_failed:
        problems.append(f"survived: no test of {mutant.exercise} fails ({mutant.mistake})")
    allowed = {mutant.exercise, *mutant.collateral}
    for nodeid, o in sorted(results.items()):
        if o.exercise not in allowed and not o.passed:
            problems.append(f"breaks {o.exercise}: {nodeid} {o.status}: {o.message.splitlines()[0] if o.message else ''}")
    return problems, results
