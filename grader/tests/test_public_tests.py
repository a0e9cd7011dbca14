"""The public tests (``exercises/<group>/test_<module>.py``) catch the mistakes students make, and say which.

* every mistake in ``student_mistakes/mistakes.py`` (a small patch to one reference solution) fails
  the public test it names, with a message that names the mistake (all of them run by
  ``student_mistakes/driver.py`` in one subprocess: torch is imported once);
* one public test file per exercise module, every test named after its module, so that
  ``pytest exercises -k <module>`` selects exactly that module's tests;
* the shared checks (``exercises/kata_checks.py``) and the public tests quote no solution line;
* the ``>>>`` examples in the solutions' docstrings run (``pytest --doctest-modules solutions``, with the
  documents' tensors from ``solutions/conftest.py``).

That every public test fails on the stubs and passes on the solutions is proved in test_exercises.py.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "student_mistakes"))
from mistakes import MISTAKES, apply  # noqa: E402

EXERCISE_IDS = list(json.loads((REPO_ROOT / "tests" / "rubric.json").read_text())["exercises"])
MODULES = [ex_id.split("/")[1] for ex_id in EXERCISE_IDS]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="module")
def mistake_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    out = tmp_path_factory.mktemp("mistakes") / "results.json"
    proc = subprocess.run([sys.executable, str(HERE / "student_mistakes" / "driver.py"), str(out)], cwd=REPO_ROOT,
                          env=_env(), capture_output=True, text=True, timeout=170)
    assert out.is_file(), f"the driver wrote no results (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(out.read_text())


def test_every_mistake_patch_applies_to_exactly_one_place():
    names = [m["name"] for m in MISTAKES]
    assert len(names) == len(set(names)) and len(MISTAKES) >= 15, names
    for m in MISTAKES:
        source = (REPO_ROOT / "solutions" / m["file"]).read_text()
        assert apply(source, m) != source, m["name"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mistake", MISTAKES, ids=[m["name"] for m in MISTAKES])
def test_public_tests_catch_the_mistake_and_name_it(mistake_results, mistake):
    results = mistake_results[mistake["name"]]
    assert "__error__" not in results, results.get("__error__")
    status, message = results.get(mistake["expect_test"], ["not run", ""])
    assert status == "failure", (
        f"{mistake['expect_test']} did not fail ({status}) with the mistake {mistake['name']!r}; "
        f"ran: {sorted(results)}"
    )
    assert mistake["expect_message"] in message, (
        f"{mistake['expect_test']} failed, but its message does not name the mistake "
        f"({mistake['expect_message']!r}):\n{message[:2000]}"
    )
    for prefix in mistake.get("expect_passed", []):
        chosen = {name: status for name, (status, _) in results.items() if name.startswith(prefix)}
        assert chosen and all(s == "passed" for s in chosen.values()), (prefix, chosen)


def test_one_public_test_file_per_module_and_every_test_named_after_its_module():
    found = {p.relative_to(REPO_ROOT / "exercises").as_posix() for p in (REPO_ROOT / "exercises").glob("*/test_*.py")}
    expected = {f"{ex_id.split('/')[0]}/test_{ex_id.split('/')[1]}.py" for ex_id in EXERCISE_IDS}
    assert found == expected, f"extra {sorted(found - expected)}, missing {sorted(expected - found)}"
    for ex_id in EXERCISE_IDS:
        group, module = ex_id.split("/")
        path = REPO_ROOT / "exercises" / group / f"test_{module}.py"
        tree = ast.parse(path.read_text())
        tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        assert len(tests) >= 2, (path, tests)
        for name in tests:
            assert name.startswith(f"test_{module}_") or name == f"test_{module}", (path.name, name)
            # `pytest exercises -k <other>` must not pick this test up
            others = [o for o in MODULES if o != module and o in name]
            assert not others, (path.name, name, others)
        # The module under test is loaded inside the tests (kata_checks.load), never at import time:
        # a syntax error in one module fails only that module's tests.
        imported = {a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
        assert not imported & set(MODULES), (path.name, imported & set(MODULES))


def _solution_lines() -> dict[str, str]:
    """The non-trivial lines (stripped, over 25 characters) of every solution region: {line: file}."""
    lines: dict[str, str] = {}
    for ex_id in EXERCISE_IDS:
        inside = False
        for line in (REPO_ROOT / "solutions" / f"{ex_id}.py").read_text().splitlines():
            stripped = line.strip()
            if stripped in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = stripped == "### BEGIN SOLUTION"
            elif inside and len(stripped) > 25:
                lines[stripped] = ex_id
    return lines


def test_shared_checks_and_public_tests_quote_no_solution_line():
    forbidden = _solution_lines()
    assert len(forbidden) > 40
    files = [REPO_ROOT / "exercises" / "kata_checks.py", REPO_ROOT / "exercises" / "conftest.py",
             *sorted((REPO_ROOT / "exercises").glob("*/test_*.py"))]
    leaks = [f"{p.relative_to(REPO_ROOT)}: {line!r} ({ex_id})" for p in files for line, ex_id in forbidden.items()
             if line in p.read_text()]
    assert not leaks, "\n".join(leaks)


@pytest.mark.timeout(120)
def test_solution_docstring_examples_run_as_doctests(tmp_path: Path):
    report = tmp_path / "doctest.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--doctest-modules", "solutions", "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}"],
        cwd=REPO_ROOT, env=_env(), capture_output=True, text=True, timeout=110,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    cases = [c.get("name") for c in ET.parse(report).getroot().iter("testcase")]
    assert len(cases) >= 20, cases  # every exercise's functions and classes carry an example
