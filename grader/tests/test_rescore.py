"""``rescore``: the grades again from the stored JSON reports under a changed rubric equal a full regrade's
under it, without running any code (grader/classroom/rescore.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from grader.authoring import mutation
from grader.classroom.grades_sheet import GRADED_BY_COLUMN, csv_row, json_path, read_grades, write_grades
from grader.classroom.provenance import current, known_keys, record_key, rubric_hash, stamp
from grader.classroom.regrade_log import log_path
from grader.classroom.rescore import RescoreError, rescore_class, rescored_report
from grader.grading import engine, grade as grading
from grader.grading.gpu_check import DeviceRuns, PartResult
from grader.grading.options import GradeOptions
from grader.grading.results import GradeReport, TestOutcome
from grader.grading.scoring import core_fraction, score_with_regrade
from grader.reports.feedback import feedback_filename
from grader.reports.json_report import to_json
from grader.rubric import TESTS_DIR, Rubric, load_rubric
from support import REPO, SOLUTIONS, build_submission, venv_env

pytestmark = pytest.mark.usefixtures("no_class_summary")  # the summary is test_summary.py's (its plots: 0.5 s a run)

TESTS_PER_KIND = {"core": 3, "printed": 2, "edge": 2}
SHA = {name: f"{i:064x}" for i, name in enumerate(["alice", "bob", "carol"], start=1)}


def changed_rubric(tmp_path: Path, gpu_extra: float = 0.0) -> Rubric:
    """tests/rubric.json with another split and other totals: two more core points for every exercise, one
    more edge point where it has edge tests (a copy: load_rubric reads any tests folder)."""
    tests = tmp_path / "changed_tests"
    shutil.copytree(TESTS_DIR / "standins", tests / "standins")
    raw = json.loads((TESTS_DIR / "rubric.json").read_text())
    for ex in raw["exercises"].values():
        kinds = ex.setdefault("kinds", {"core": ex["points"]})
        kinds["core"] += 2
        if "edge" in kinds:
            kinds["edge"] += 1
        ex["points"] = sum(kinds.values())
    raw["gpu_check"]["points"] += gpu_extra
    (tests / "rubric.json").write_text(json.dumps(raw))
    return load_rubric(tests)


def _passes(rubric: Rubric, student: str, ex_id: str, kind: str, i: int) -> bool:
    """Who passes what: alice everything; bob fails one core test of every other exercise (his edge tests
    weighed) and a printed one; carol fails every core test of the exercises others build on (so those built
    on them are graded again over stand-ins) and one core test of the last exercise."""
    n = list(rubric.exercises).index(ex_id)
    if student == "bob":
        return not ((kind == "core" and i == 0 and n % 2 == 0) or (kind == "printed" and n == 1 and i == 1))
    if student == "carol":
        built_on = {dep for ex in rubric.exercises.values() for dep in ex.depends_on}
        return not (kind == "core" and (ex_id in built_on or (n == len(rubric.exercises) - 1 and i == 0)))
    return True


def full_regrade(rubric: Rubric, student: str) -> dict:
    """What a grading under ``rubric`` gives (past the engine): each test's points its kind's split evenly over
    its tests of that kind (as tests/conftest.py gives them), the exercises scored with their re-grades over
    stand-ins (a re-grade passes every test), the GPU-run check scored from the core points earned."""
    outcomes = []
    for ex_id, ex in rubric.exercises.items():
        for kind, points in ex.kind_points.items():
            for i in range(TESTS_PER_KIND[kind]):
                passed = _passes(rubric, student, ex_id, kind, i)
                outcomes.append(TestOutcome(f"tests/{ex_id}.py::test_{kind}_{i}", ex_id, points / TESTS_PER_KIND[kind],
                                            passed, "" if passed else f"{kind} {i} failed", 0.0, kind=kind))

    def regrade(exercise_ids, substitutes):
        return [replace(o, passed=True, message="") for o in outcomes if o.exercise in exercise_ids]

    results = score_with_regrade(rubric, outcomes, regrade)
    fractions = {name: core_fraction(results[ex].outcomes) or 0.0 for name, ex in rubric.owner_of.items()}
    parts = tuple(PartResult(m.name, "passed" if i % 2 == 0 else "failed", "ran", True)
                  for i, m in enumerate(rubric.gpu_modules))
    gpu = DeviceRuns(rubric.gpu_points, "cuda", "cuda:0", parts).scored(fractions)
    return to_json(GradeReport(student, results, gpu, "none", 1.0))


def graded_class(rubric: Rubric, csv_path: Path, json_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """The CSV (and JSON reports) score-all writes for the class graded under ``rubric``; its rows."""
    rows = {}
    for student in SHA:
        report = full_regrade(rubric, student)
        rows[student] = csv_row(student, {"report": report}, SHA[student])
        if json_dir is not None:
            json_dir.mkdir(exist_ok=True)
            json_path(json_dir, student).write_text(json.dumps(report))
    write_grades(csv_path, rows.values())
    return read_grades(csv_path).rows


def test_rescore_equals_a_full_regrade_under_a_changed_rubric(tmp_path: Path) -> None:
    rubric = load_rubric()
    before = graded_class(rubric, tmp_path / "grades.csv", tmp_path / "reports")
    changed = changed_rubric(tmp_path)
    regraded = graded_class(changed, tmp_path / "regraded.csv")
    assert all(before[s]["score"] != regraded[s]["score"] for s in SHA)  # the change moves every total
    reports = [json.loads(json_path(tmp_path / "reports", s).read_text()) for s in SHA]
    assert any("graded over a stand-in" in ex["message"] for r in reports for ex in r["exercises"].values())
    assert any("counts" in t["output"] for r in reports for t in r["tests"])  # weighed edge tests

    (tmp_path / "feedback").mkdir()
    result = rescore_class(tmp_path / "reports", tmp_path / "grades.csv", tests_dir=tmp_path / "changed_tests",
                           feedback_dir=tmp_path / "feedback")

    assert read_grades(tmp_path / "grades.csv").rows == regraded
    assert set(result.rows) == set(SHA) and set(result.reports) == set(SHA)
    feedback = (tmp_path / "feedback" / feedback_filename("bob")).read_text()
    assert f"**Total: {float(regraded['bob']['score']):g} / {float(regraded['bob']['max_score']):g}**" in feedback
    log = log_path(tmp_path / "grades.csv").read_text().splitlines()
    assert log[0] == "student,old,new,when,grader_version,why" and len(log) == 1 + len(SHA)
    assert all(line.endswith(",rescore under changed rubric") for line in log[1:])
    # the same rubric: nothing changes, nothing logged
    rescore_class(tmp_path / "reports", tmp_path / "again.csv", source=tmp_path / "regraded.csv",
                  tests_dir=tmp_path / "changed_tests")
    assert read_grades(tmp_path / "again.csv").rows == regraded


def test_rescored_rows_are_keyed_under_the_rubric_now(tmp_path: Path) -> None:
    """What graded a rescored row (grader/classroom/provenance.py): the key it was graded under with the
    rubric part the changed rubric's, described beside the CSV, so a resume under it keeps the rows."""
    csv_path = tmp_path / "grades.csv"
    rows = graded_class(load_rubric(), csv_path, tmp_path / "reports")
    now = current(GradeOptions(gpu="skip"))
    write_grades(csv_path, [{**row, **stamp(now.key)} for row in rows.values()])
    record_key(csv_path, now.key, now.describe())
    changed_rubric(tmp_path)
    rescore_class(tmp_path / "reports", csv_path, tests_dir=tmp_path / "changed_tests")
    (key,) = {row[GRADED_BY_COLUMN] for row in read_grades(csv_path).rows.values()}
    assert key != now.key
    assert known_keys(csv_path)[key] == {**now.describe(), "rubric": rubric_hash(tmp_path / "changed_tests")}


def test_the_gpu_check_keeps_its_share_under_other_points(tmp_path: Path) -> None:
    rubric = load_rubric()
    report = full_regrade(rubric, "alice")
    changed = changed_rubric(tmp_path, gpu_extra=rubric.gpu_points)  # twice the points
    rescored = rescored_report(report, changed)
    assert rescored["gpu_check"]["max_score"] == 2 * rubric.gpu_points
    assert rescored["gpu_check"]["score"] == pytest.approx(2 * report["gpu_check"]["score"], abs=0.01)
    assert 0 < report["gpu_check"]["score"] < rubric.gpu_points


def test_a_report_the_rubric_cannot_score_is_refused_in_one_line(tmp_path: Path) -> None:
    rubric = load_rubric()
    graded_class(rubric, tmp_path / "grades.csv", tmp_path / "reports")
    report = json.loads(json_path(tmp_path / "reports", "bob").read_text())
    report["exercises"]["99_gone/old_exercise"] = dict(next(iter(report["exercises"].values())))
    json_path(tmp_path / "reports", "bob").write_text(json.dumps(report))
    with pytest.raises(RescoreError, match="bob: exercise 99_gone/old_exercise is not in tests/rubric.json"):
        rescore_class(tmp_path / "reports", tmp_path / "out.csv", source=tmp_path / "grades.csv")
    json_path(tmp_path / "reports", "bob").unlink()
    with pytest.raises(RescoreError, match="^bob: unreadable"):
        rescore_class(tmp_path / "reports", tmp_path / "out.csv", source=tmp_path / "grades.csv")
    assert not (tmp_path / "out.csv").exists()


def test_rescore_on_the_command_line_runs_no_code_and_imports_no_torch(tmp_path: Path) -> None:
    graded_class(load_rubric(), tmp_path / "grades.csv", tmp_path / "reports")
    code = ("import sys; from grader.cli import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'rescore imported torch'; sys.exit(rc)")
    ok = subprocess.run([sys.executable, "-c", code, "rescore", str(tmp_path / "reports"), "--csv",
                         str(tmp_path / "grades.csv")], capture_output=True, text=True, cwd=REPO, env=venv_env())
    assert ok.returncode == 0, ok.stderr
    assert f"rescored {len(SHA)} rows" in ok.stderr


def real_class(root: Path) -> list[Path]:
    """A partial wrapper (a mutant's mistake: its edge tests weighed) and one whose CausalAttention exits at
    import (its wrapper re-graded over a stand-in, which it passes)."""
    root.mkdir()
    shutil.copytree(SOLUTIONS, root / "mallory")
    patch = next(m for m in mutation.load_mutants() if m["name"] == "38_wrapper_ignores_qkv_bias")
    target = root / "mallory" / f"{patch['exercise']}.py"
    target.write_text(mutation.apply(target.read_text(), patch))
    return [root / "mallory", build_submission("exit_at_import", root)]


@pytest.mark.slow  # real gradings, and a pytest session of the hidden tests collected under the changed rubric
@pytest.mark.timeout(600)
def test_rescore_equals_a_real_regrade_under_a_changed_rubric(tmp_path: Path, shared_domains, monkeypatch) -> None:
    """The hidden tests run again under the changed rubric (their conftest splits its points) and the grader
    scores them under it: what rescore gives from the reports graded before, to the exercise."""
    options = GradeOptions(sandbox="isolated", gpu="skip", exercises=("04_multihead/multihead_wrapper",))
    subs = real_class(tmp_path / "class")
    before = [to_json(grading.grade(sub, options, shared_domains)) for sub in subs]
    changed = changed_rubric(tmp_path)
    import kata_seam  # the hidden tests' own rubric reader (tests/kata_seam.py), loaded by their session here

    monkeypatch.setattr(kata_seam, "_RUBRIC", json.loads((tmp_path / "changed_tests" / "rubric.json").read_text()))
    for module in (grading, engine):
        monkeypatch.setattr(module, "load_rubric", lambda *args: changed)
    monkeypatch.setattr(engine, "_shared", None)  # a new session: collected, points given, under the changed rubric
    try:
        after = [to_json(grading.grade(sub, options, shared_domains)) for sub in subs]
    finally:
        if engine._shared is not None:
            engine._shared.close()
    partial, regraded = (r["exercises"]["04_multihead/multihead_wrapper"] for r in before)
    assert 0 < partial["score"] < partial["max_score"] and any("counts" in t["output"] for t in before[0]["tests"])
    assert regraded["message"].startswith("graded over a stand-in causal_attention")
    assert [r["score"] for r in after] != [r["score"] for r in before]
    for old, new in zip(before, after):
        rescored = rescored_report(old, changed)
        assert rescored["exercises"] == new["exercises"]
        assert (rescored["score"], rescored["max_score"]) == (new["score"], new["max_score"])

