"""grader.authoring.gradescope_bundle: the zip's layout, and its run_autograder run as Gradescope would.

The run happens in ``<tmp>/autograder`` (``AUTOGRADER_ROOT``) with this venv first on PATH, so
``setup.sh`` (apt and pip, network) is skipped: the venv already holds everything it installs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

from grader.authoring.gradescope_bundle import build_bundle
from grader.classroom.gradescope_overrides import results_with_overrides
from grader.classroom.overrides import read_overrides
from grader.rubric import SOLUTIONS_DIR, load_rubric
from support import fake_report

# Gradescope's results.json specification: the keys it accepts at the top and per test.
TOP_KEYS = {"score", "execution_time", "output", "output_format", "visibility", "stdout_visibility", "tests"}
TEST_KEYS = {"name", "score", "max_score", "status", "output", "visibility"}

pytestmark = pytest.mark.slow  # python -m pytest -m 'not slow' leaves it out; CI runs it


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    build_bundle(out)
    return out


def test_zip_layout(bundle: Path):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml", "README.md", "tests/rubric.json",
            "exercises/documents/README.md"} <= names  # the documents' names, for the feedback's citations
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
    assert "python3 -m grader score" in run and '--format "$FORMAT"' in run and 'AUTOGRADER_ROOT:-/autograder' in run
    assert "\nFORMAT=gradescope\n" in run  # without bundled overrides: results.json from the grading itself
    for script in (setup, run):
        syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr


def start_autograder(bundle: Path, root: Path, submission: Path | None, flat: bool = False,
                     env_extra: dict[str, str] | None = None, path_first: Path | None = None) -> subprocess.CompletedProcess:
    """Unzip into ``root/source``, place the submission (``flat``: its module files without their
    group folders, as Gradescope gets files uploaded one by one), run ``run_autograder``."""
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    if submission is None:
        (root / "submission").mkdir()
    elif flat:
        (root / "submission").mkdir()
        for module in sorted(submission.glob("*/*.py")):
            shutil.copy(module, root / "submission" / module.name)
    else:
        shutil.copytree(submission, root / "submission")
    env = dict(os.environ)
    env["AUTOGRADER_ROOT"] = str(root)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if path_first is not None:
        env["PATH"] = str(path_first) + os.pathsep + env["PATH"]
    env.update(env_extra or {})
    return subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, cwd=root,
                          capture_output=True, text=True, timeout=280)


def test_the_image_installs_only_what_grading_needs(bundle: Path):
    with zipfile.ZipFile(bundle) as zf:
        setup = zf.read("setup.sh").decode()
        pyproject = tomllib.loads(zf.read("pyproject.toml").decode())
    installs = [line for line in setup.splitlines() if line.strip().startswith("pip3 install")]
    assert installs and installs[-1].split()[-1] in ("/autograder/source", "/autograder/source[grade]")
    assert not re.search(r"nbgrader|jupyter|notebook|matplotlib", "\n".join(installs), re.I)
    core = pyproject["project"]["dependencies"]
    assert not [dep for dep in core if re.match(r"(nbgrader|jupyter|notebook|matplotlib|hypothesis)", dep, re.I)]
    extras = pyproject["project"]["optional-dependencies"]
    assert any("nbgrader" in dep for dep in extras["instructor"])
    assert not [dep for dep in extras.get("grade", []) if "nbgrader" in dep or "jupyter" in dep]
    assert any("matplotlib" in dep for dep in extras["summary"])


def test_the_visibility_is_baked_into_run_autograder(tmp_path: Path):
    build_bundle(tmp_path / "m.zip", visibility="full")
    with zipfile.ZipFile(tmp_path / "m.zip") as zf:
        run = zf.read("run_autograder").decode()
    assert "\nDEFAULT_VISIBILITY=full\n" in run and '--visibility "$VISIBILITY"' in run
    with pytest.raises(ValueError):
        build_bundle(tmp_path / "x.zip", visibility="everything")


def run_autograder(bundle: Path, root: Path, submission: Path | None, flat: bool = False) -> dict:
    """As Gradescope would, expecting a completed run; the results, checked against the spec."""
    result = start_autograder(bundle, root, submission, flat)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return check_results(root)


def check_results(root: Path) -> dict:
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
def test_solutions_uploaded_file_by_file_get_full_marks(bundle: Path, tmp_path: Path):
    """Flat, as Gradescope gets files uploaded one by one. Group folders go through the same run in
    test_the_local_recipe_runs_as_written (the stubs), and the two layouts are located into the same
    tree before any grading (test_intake_and_reports.py): one autograder run of the solutions is enough."""
    results = run_autograder(bundle, tmp_path / "autograder", SOLUTIONS_DIR, flat=True)
    failed = [t["name"] for t in results["tests"] if t["status"] != "passed"]
    assert failed == [], failed
    by_number = [t["name"] for t in results["tests"] if re.search(r"\[\d{3}[ -]", t["name"])]
    assert not by_number, f"documents cited by the hidden tests' numbers, not by name: {by_number[:5]}"
    assert any(".txt" in t["name"] for t in results["tests"])  # some tests cite one, by its name
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


@pytest.mark.timeout(120)
def test_an_autograder_without_torch_fails_visibly(bundle: Path, tmp_path: Path):
    """Not a 0 for the student: a non-zero exit and no results.json, which Gradescope shows as an
    autograder failure (here a torch that is there but fails to import: `grader score` stops with exit 1;
    run_autograder's own check only looks for torch, since importing it costs every student 2 s)."""
    shadow = tmp_path / "no-torch"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text("raise ImportError('torch is not installed here')\n")
    root = tmp_path / "autograder"
    result = start_autograder(bundle, root, SOLUTIONS_DIR, env_extra={"PYTHONPATH": str(shadow)})
    assert result.returncode != 0
    assert not (root / "results" / "results.json").exists()
    assert "autograder error" in result.stderr and "torch" in result.stderr


@pytest.mark.timeout(120)
def test_a_grader_error_is_an_autograder_error_not_a_zero(bundle: Path, tmp_path: Path):
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        if [ "$3" = score ]; then echo "attention-kata: internal error: boom" >&2; exit 1; fi
        exec {sys.executable} "$@"
        """))
    (shims / "python3").chmod(0o755)
    root = tmp_path / "autograder"
    result = start_autograder(bundle, root, SOLUTIONS_DIR, path_first=shims)
    assert result.returncode != 0 and not (root / "results" / "results.json").exists()
    assert "internal error: boom" in result.stderr and "autograder error" in result.stderr


# The README's local try of the autograder, corrected (the submission folder must exist before cp);
# the same text is in docs/instructor-reports.md. Run from the repository root.
LOCAL_RECIPE = """\
python -m grader gradescope-bundle autograder.zip
rm -rf /tmp/ag && mkdir -p /tmp/ag/submission
python -m zipfile -e autograder.zip /tmp/ag/source
cp -r exercises/* /tmp/ag/submission/
AUTOGRADER_ROOT=/tmp/ag bash /tmp/ag/source/run_autograder
cat /tmp/ag/results/results.json
"""


def test_the_documented_recipe_is_the_tested_one():
    from grader.rubric import REPO_ROOT

    assert LOCAL_RECIPE in (REPO_ROOT / "docs" / "instructor-reports.md").read_text()


@pytest.mark.timeout(300)
def test_the_local_recipe_runs_as_written(tmp_path: Path):
    from grader.rubric import REPO_ROOT

    ag, zip_path = tmp_path / "ag", tmp_path / "autograder.zip"
    script = LOCAL_RECIPE.replace("/tmp/ag", str(ag)).replace("autograder.zip", str(zip_path))
    assert "/tmp/ag" not in script
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = check_results(ag)
    assert json.loads(proc.stdout[proc.stdout.index("{"):]) == results
    assert results["tests"] and results["score"] == 0  # the stubs: graded, nothing passes


def test_students_see_messages_unless_the_instructor_says_otherwise(tmp_path: Path):
    """Gradescope lets students resubmit: with the hidden tests' inputs and expected values in view (full)
    they could resubmit until they match. The bundle and its command default to messages."""
    build_bundle(tmp_path / "d.zip")
    with zipfile.ZipFile(tmp_path / "d.zip") as zf:
        assert "\nDEFAULT_VISIBILITY=messages\n" in zf.read("run_autograder").decode()
    from grader.cli import build_parser

    assert build_parser().parse_args(["gradescope-bundle", str(tmp_path / "e.zip")]).visibility == "messages"


# --- Gradescope: the overrides bundled with the autograder, applied to each run's results.json -------------


def overrides_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "overrides.csv"
    path.write_text("student,exercise,points,reason,who\n" + "".join(line + "\n" for line in lines))
    return path


def test_gradescope_results_show_the_submitters_overrides(tmp_path: Path) -> None:
    ex_id = next(iter(load_rubric().exercises))
    report = fake_report(fraction=0.5)
    overrides = read_overrides(overrides_file(
        tmp_path, f"Alice@Uni.edu,{ex_id},+2,accepted regrade request,TA Kim",
        "bob@uni.edu,total,+9,someone else,TA Kim", "1234,total,-1,copied a cell,Prof. Lee"))
    metadata = {"users": [{"email": "alice@uni.edu", "id": 1234, "name": "Alice"}]}
    results, warnings = results_with_overrides(report, overrides, metadata, "messages")
    assert results["score"] == pytest.approx(report["score"] + 2 - 1) and not warnings  # hers, by address and id
    graded = report["exercises"][ex_id]["score"]
    lines = results["output"].splitlines()
    assert lines[0] == (f"override: {ex_id} {graded} -> {graded + 2}, total {report['score']} -> {report['score'] + 2} "
                        "(+2 by TA Kim: accepted regrade request)")
    assert lines[1].startswith("override: total ") and lines[1].endswith("(-1 by Prof. Lee: copied a cell)")
    assert f"{ex_id}: {graded + 2:g}/" in results["output"] and "someone else" not in results["output"]
    added = results["tests"][-2:]
    assert [t["score"] for t in added] == [2, -1] and all(t["max_score"] == 0 for t in added)
    assert results["tests"][:-2] == results_with_overrides(report, overrides, {}, "messages")[0]["tests"]
    assert set(results) <= TOP_KEYS and all(set(t) <= TEST_KEYS for t in results["tests"])
    nobody, _ = results_with_overrides(report, overrides, {"users": [{"email": "carol@uni.edu", "id": 7}]}, "messages")
    assert nobody["score"] == report["score"] and "override" not in nobody["output"]


@pytest.mark.timeout(120)
def test_run_autograder_applies_the_bundled_overrides(tmp_path: Path, capsys):
    """As Gradescope runs it: the overrides bundled by the command, the submitter read from
    submission_metadata.json; the grading itself is a stored report (a shim answers `grader score`), the rest
    is the bundle's own scripts and commands. The file is kept from the student's uid (0600)."""
    from grader.cli import main

    ex_id = next(iter(load_rubric().exercises))
    bad = overrides_file(tmp_path, "alice@uni.edu,99_none/x,+2,regrade,TA Kim")
    assert main(["gradescope-bundle", str(tmp_path / "bad.zip"), "--overrides", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "is no exercise of tests/rubric.json" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad.zip").exists()
    good = overrides_file(tmp_path, f"alice@uni.edu,{ex_id},+2,accepted regrade request,TA Kim")
    assert main(["gradescope-bundle", str(tmp_path / "ag.zip"), "--overrides", str(good)]) == 0
    report = fake_report(fraction=0.5)
    (tmp_path / "report.json").write_text(json.dumps(report))
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        if [ "$3" = score ]; then
            case " $* " in *" --format json "*) cat {tmp_path / 'report.json'}; exit 0;; esac
            echo "the overrides need the JSON report" >&2; exit 1
        fi
        exec {sys.executable} "$@"
        """))
    (shims / "python3").chmod(0o755)
    root = tmp_path / "autograder"
    root.mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "Alice@uni.edu", "id": 5}]}))
    result = start_autograder(tmp_path / "ag.zip", root, None, path_first=shims)
    assert result.returncode == 0, result.stderr[-2000:]
    results = check_results(root)
    assert results["score"] == pytest.approx(report["score"] + 2)
    assert results["output"].startswith(f"override: {ex_id} ") and "(+2 by TA Kim: accepted regrade request)" in results["output"]
    assert (root / "source" / "overrides.csv").stat().st_mode & 0o077 == 0
