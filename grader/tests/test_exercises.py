"""The student-facing tree ``exercises/`` is what the generator makes, and its public tests work.

* ``exercises/<group>/<module>.py`` equals ``python -m grader.stubs`` run on ``solutions/``;
* every public test fails on the stubs, and fails with the stub's NotImplementedError (so a student
  starting out sees "not written yet", never a broken test);
* every public test passes once the 12 modules are replaced by the reference solutions.

The public tests run in a subprocess on a temporary copy, with its own tiny ini as config and the
copy as rootdir, so that the repository's pyproject settings (testpaths, timeout) do not interfere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader import stubs

REPO_ROOT = Path(__file__).resolve().parents[2]
EXERCISE_IDS = list(json.loads((REPO_ROOT / "tests" / "rubric.json").read_text())["exercises"])
GROUPS = sorted({ex_id.split("/")[0] for ex_id in EXERCISE_IDS})
# One public test file per exercise module: exercises/<group>/test_<module>.py.
PUBLIC_TESTS = {ex_id: f"test_{ex_id.split('/')[1]}.py" for ex_id in EXERCISE_IDS}


def test_exercises_are_in_sync_with_the_generator():
    stale = stubs.check(REPO_ROOT)
    assert not stale, f"out of date (run `python -m grader.stubs`): {[str(p.relative_to(REPO_ROOT)) for p in stale]}"


def test_the_twelve_modules_exist_with_the_same_names_in_both_trees():
    expected = {f"{ex_id}.py" for ex_id in EXERCISE_IDS}
    assert len(expected) == 12
    for tree in ("solutions", "exercises"):
        root = REPO_ROOT / tree
        found = {
            str(p.relative_to(root))
            for p in root.glob("*/*.py")
            if not p.name.startswith("test_") and p.name != "conftest.py"
        }
        assert found == expected, f"{tree}/: extra {sorted(found - expected)}, missing {sorted(expected - found)}"


def test_every_group_has_its_readme_hints_and_one_public_test_file_per_module():
    for group in GROUPS:
        for name in ("README.md", "hints.md"):
            assert (REPO_ROOT / "exercises" / group / name).is_file(), f"missing exercises/{group}/{name}"
    for ex_id, test_file in PUBLIC_TESTS.items():
        group = ex_id.split("/")[0]
        assert (REPO_ROOT / "exercises" / group / test_file).is_file(), f"missing exercises/{group}/{test_file}"
    for name in ("conftest.py", "kata_checks.py"):
        assert (REPO_ROOT / "exercises" / name).is_file(), f"missing exercises/{name}"


def test_stub_messages_name_the_function_and_the_readme_section():
    for ex_id in EXERCISE_IDS:
        group, module = ex_id.split("/")
        text = (REPO_ROOT / "exercises" / f"{ex_id}.py").read_text()
        assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text, ex_id
        assert stubs.PLACEHOLDER not in text and stubs.SECTION_PLACEHOLDER not in text, ex_id
        assert f"see exercises/{group}/README.md, section '{module}'" in text, ex_id
        assert "# TODO" in text, ex_id
        readme = (REPO_ROOT / "exercises" / group / "README.md").read_text()
        assert f"\n## {module}\n" in readme, f"exercises/{group}/README.md has no '## {module}' section"


def test_make_stub_names_the_enclosing_method():
    source = (
        "class A:\n"
        "    def f(self):\n"
        '        """Doc."""\n'
        "        ### BEGIN SOLUTION\n"
        "        return 1\n"
        "        ### END SOLUTION\n"
    )
    stub = stubs.make_stub(source, "03_causal/causal_attention")
    assert "return 1" not in stub
    assert (
        "        raise NotImplementedError(\"A.f: not written yet -- see exercises/03_causal/README.md, "
        "section 'causal_attention'\")"
    ) in stub
    assert "        # TODO: write the body of A.f here" in stub


def run_public_tests(tmp_path: Path, with_solutions: bool) -> dict[str, ET.Element]:
    """Run the public tests on a copy of exercises/ (optionally with the solutions dropped in).

    Returns ``{test id: junit <testcase> element}``.
    """
    tree = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises", tree, ignore=shutil.ignore_patterns("__pycache__"))
    if with_solutions:
        for ex_id in EXERCISE_IDS:
            shutil.copy(REPO_ROOT / "solutions" / f"{ex_id}.py", tree / f"{ex_id}.py")
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\ntimeout = 60\nfilterwarnings =\n    ignore:Failed to initialize NumPy\n")
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(tree), "-c", str(ini), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-q", f"--junitxml={report}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280,
    )
    assert report.is_file(), f"pytest wrote no report (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    cases = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        cases[f"{case.get('classname')}::{case.get('name')}"] = case
    assert cases, f"no public tests were collected:\n{proc.stdout}\n{proc.stderr}"
    return cases


def outcome(case: ET.Element) -> tuple[str, str]:
    """``("passed" | "failure" | "error" | "skipped", message and text)`` of one junit testcase."""
    for kind in ("failure", "error", "skipped"):
        child = case.find(kind)
        if child is not None:
            return kind, f"{child.get('message', '')}\n{child.text or ''}"
    return "passed", ""


@pytest.mark.timeout(300)
def test_every_public_test_fails_on_the_stubs_with_not_implemented_error(tmp_path: Path):
    cases = run_public_tests(tmp_path, with_solutions=False)
    files = {name.split("::")[0].rsplit(".", 1)[-1] for name in cases}
    assert files == {name.removesuffix(".py") for name in PUBLIC_TESTS.values()}, files
    wrong = {}
    for name, case in cases.items():
        kind, message = outcome(case)
        if kind != "failure" or "NotImplementedError" not in message:
            wrong[name] = (kind, message[:300])
    assert not wrong, f"public tests that do not fail with NotImplementedError on the stubs: {wrong}"


@pytest.mark.timeout(300)
def test_every_public_test_passes_on_the_solutions(tmp_path: Path):
    cases = run_public_tests(tmp_path, with_solutions=True)
    not_passed = {name: outcome(case) for name, case in cases.items() if outcome(case)[0] != "passed"}
    assert not not_passed, f"public tests that do not pass on solutions/: {not_passed}"
    # Between 2 and 6 tests per exercise module: about 2 * 12 to 6 * 12 in all.
    assert 24 <= len(cases) <= 72, len(cases)
