"""grader.gradescope_bundle: the zip's layout, and its run_autograder run as Gradescope would.

The run happens in ``<tmp>/autograder`` (``AUTOGRADER_ROOT``) with this venv first on PATH, so
``setup.sh`` (apt and pip, network) is skipped: the venv already holds everything it installs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.gradescope_bundle import build_bundle
from grader.rubric import SOLUTIONS_DIR, load_rubric

# Gradescope's results.json specification: the keys it accepts at the top and per test.
TOP_KEYS = {"score", "execution_time", "output", "visibility", "stdout_visibility", "tests"}
TEST_KEYS = {"name", "score", "max_score", "status", "output", "visibility"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    build_bundle(out)
    return out


def test_zip_layout(bundle: Path):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml", "README.md", "tests/rubric.json"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111, "the scripts must be executable"
    assert "grader/cli.py" in names and "grader/__main__.py" in names
    for ex in load_rubric().exercises.values():
        assert f"solutions/{ex.group}/{ex.module}.py" in names
        assert f"tests/{ex.group}/test_{ex.module}.py" in names or not ex.test_file.exists()
    assert not [n for n in names if n.startswith(("grader/tests/", "tests/mutants/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_setup_sh_installs_torch_then_the_bundled_project(bundle: Path):
    with zipfile.ZipFile(bundle) as zf:
        setup = zf.read("setup.sh").decode()
        run = zf.read("run_autograder").decode()
    assert setup.index("pip3 install torch==2.13.0") < setup.index("pip3 install /autograder/source")
    assert "python3 -m grader score" in run and "--format gradescope" in run and 'AUTOGRADER_ROOT:-/autograder' in run
    for script in (setup, run):
        syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr


def run_autograder(bundle: Path, root: Path, submission: Path | None) -> dict:
    """Unzip into ``root/source``, place the submission, run ``run_autograder``; the results."""
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    if submission is None:
        (root / "submission").mkdir()
    else:
        shutil.copytree(submission, root / "submission")
    env = dict(os.environ)
    env["AUTOGRADER_ROOT"] = str(root)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    result = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, cwd=root,
                            capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    results = json.loads((root / "results" / "results.json").read_text())
    assert set(results) <= TOP_KEYS, set(results) - TOP_KEYS
    assert isinstance(results["score"], (int, float)) and isinstance(results["tests"], list)
    for test in results["tests"]:
        assert set(test) <= TEST_KEYS, set(test) - TEST_KEYS
        assert test.get("status", "passed") in ("passed", "failed")
        assert test.get("visibility", "visible") in ("hidden", "after_due_date", "after_published", "visible")
    assert results.get("visibility", "visible") in ("hidden", "after_due_date", "after_published", "visible")
    return results


@pytest.mark.timeout(300)
def test_solutions_get_full_marks(bundle: Path, tmp_path: Path):
    results = run_autograder(bundle, tmp_path / "autograder", SOLUTIONS_DIR)
    failed = [t["name"] for t in results["tests"] if t["status"] != "passed"]
    assert failed == [], failed
    full = sum(t["max_score"] for t in results["tests"])
    assert full >= sum(ex.points for ex in load_rubric().exercises.values())
    assert results["score"] == pytest.approx(full, abs=0.01)  # per-test points are rounded to 4 decimals


@pytest.mark.timeout(120)
def test_an_empty_submission_gets_zero_and_says_why(bundle: Path, tmp_path: Path):
    results = run_autograder(bundle, tmp_path / "autograder", None)
    assert results["score"] == 0
    assert results["tests"] == []
    assert results["output"].startswith("Your submission could not be graded: ")
    assert "nothing that looks like a submission" in results["output"], results["output"]
    assert "\n" not in results["output"] and "Traceback" not in results["output"]
