"""score-all: a class graded in parallel, rows equal to single runs, resumable, robust to hostile students."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.rubric import REPO_ROOT
from test_engine import build_submission

pytestmark = pytest.mark.timeout(600)


def run(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("class")
    shutil.copytree(REPO_ROOT / "solutions", root / "alice")
    shutil.copytree(REPO_ROOT / "exercises", root / "bob")
    (root / "carol").mkdir()
    with zipfile.ZipFile(root / "dave.zip", "w") as zf:
        for path in (REPO_ROOT / "solutions").rglob("*.py"):
            zf.write(path, f"dave/exercises/{path.relative_to(REPO_ROOT / 'solutions')}")
    build_submission("kill_parent", root)  # kills its parent (the template) at import
    build_submission("exit_at_import", root)  # deterministic partial credit, with a dependency re-grade
    (root / "notes.txt").write_text("not a submission")
    return root


@pytest.fixture(scope="module")
def graded(classroom: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path, Path]:
    out = tmp_path_factory.mktemp("out")
    proc = run("score-all", str(classroom), "--csv", str(out / "grades.csv"), "--json-dir", str(out),
               "--jobs", "2", "--gradebook", str(out / "gradebook.db"), "--assignment", "hw3")
    return proc, out / "grades.csv", out


def rows(csv_path: Path) -> dict[str, dict[str, str]]:
    with open(csv_path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_every_student_has_a_row_and_other_files_are_ignored(graded) -> None:
    proc, csv_path, _ = graded
    assert proc.returncode == 0, proc.stderr
    assert "warning: ignoring notes.txt: not a folder or a .zip" in proc.stderr
    table = rows(csv_path)
    assert set(table) == {"alice", "bob", "carol", "dave", "kill_parent", "exit_at_import"}
    assert (table["alice"]["score"], table["dave"]["score"], table["bob"]["score"]) == ("100.0", "100.0", "0.0")
    assert table["carol"]["status"] == "error" and "nothing that looks like a submission" in table["carol"]["message"]
    # Its worker killed its parent (the template) at import: the batch went on, the attacking exercise
    # scored 0 (that worker stops every time) and the others were graded in full.
    assert table["kill_parent"]["status"] == "graded"
    assert float(table["kill_parent"]["04_multihead/multihead_attention"]) == 0.0
    full = {"03_causal/causal_attention": 10.0, "04_multihead/multihead_wrapper": 6.0, "01_simple_attention/normalization": 8.0}
    assert all(float(table["kill_parent"][ex]) == points for ex, points in full.items())


def test_rows_equal_single_runs(graded, classroom: Path) -> None:
    _, csv_path, out = graded
    table = rows(csv_path)
    for student in ("alice", "bob", "exit_at_import", "kill_parent"):
        single = json.loads(run("score", str(classroom / student), "--format", "json").stdout)
        assert float(table[student]["score"]) == single["score"]
        for ex_id, result in single["exercises"].items():
            assert float(table[student][ex_id]) == result["score"], (student, ex_id)
        assert json.loads((out / f"{student}.json").read_text())["exercises"] == single["exercises"]


def test_gradebook_holds_the_batch(graded) -> None:
    from nbgrader.api import Gradebook

    _, csv_path, out = graded
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gb:
        assert gb.find_submission("hw3", "alice").score == pytest.approx(100.0)
        assert gb.find_submission("hw3", "bob").score == pytest.approx(0.0)


def test_resume_skips_graded_students_and_force_grades_again(graded, classroom: Path) -> None:
    _, csv_path, _ = graded
    again = run("score-all", str(classroom), "--csv", str(csv_path))
    assert again.returncode == 0 and "graded 0, errors 0, already in" in again.stderr
    assert len(rows(csv_path)) == 6
    forced = run("score-all", str(classroom), "--csv", str(csv_path), "--force", "--jobs", "1")
    assert "graded 5, errors 1" in forced.stderr and len(rows(csv_path)) == 6


def test_unusable_command_line_input_exits_2(tmp_path: Path) -> None:
    for args in (["score-all", str(tmp_path / "nope"), "--csv", str(tmp_path / "g.csv")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "missing" / "g.csv")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--gradebook", str(tmp_path / "g.db")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--jobs", "0"]):
        proc = run(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
