"""A resume that knows what graded a row: a CSV never mixes two gradings (another rubric, hidden tests,
grader, torch or grading options), and two runs cannot both write one CSV. The class is fake
(grader/tests/support.py's fake_class and fake job): no student code runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

import grader.classroom.provenance as provenance
from grader.classroom.grades_sheet import GRADED_BY_COLUMN, PROVENANCE_COLUMNS, csv_columns, read_grades
from grader.classroom.merge import MergeError, merge
from grader.classroom.nbgrader_course import Course, CourseError, grade_course
from grader.classroom.roster import shard_of
from grader.classroom.score_all import BatchError, score_all
from grader.classroom.sheet_lock import lock_path, take_lock
from grader.cli import main
from grader.grading.options import GradeOptions
from grader.rubric import GROUPS, REPO_ROOT, TESTS_DIR
from support import fake_class, fake_job, fake_options, graded_log, venv_env

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("no_class_summary")]

CLASS = {"ann": 1.0, "ben": 0.5, "cy": None}  # cy: an error row (no score.txt), graded again by every run


def changed_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> Path:
    """A copy of tests/ with one file changed (``edit``: its path in tests/), taken as this checkout's
    hidden tests by the provenance key (a grading here is the fake job's, which reads none of them)."""
    copy = tmp_path / "tests-copy"
    shutil.copytree(TESTS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    target = copy / edit
    if edit == "rubric.json":  # one point value changed, as an instructor would
        raw = json.loads(target.read_text())
        first = next(iter(raw["exercises"].values()))
        first["points"] += 1
        target.write_text(json.dumps(raw, indent=2))
    else:  # a line added (a comment, or a line end after JSON): the bytes a grading reads differ
        target.write_text(target.read_text() + ("\n" if target.suffix == ".json" else "\n# changed\n"))
    monkeypatch.setattr(provenance, "TESTS_DIR", copy)
    return copy


def keys(csv_path: Path) -> set[str]:
    return {row[GRADED_BY_COLUMN] for row in read_grades(csv_path).rows.values()}


@pytest.mark.slow  # several runs of a fake class (1-3 s): CI runs it
def test_a_rubric_change_is_refused_then_regraded_never_mixed(tmp_path: Path, monkeypatch, capsys) -> None:
    klass = fake_class(tmp_path / "class", CLASS)
    csv_path = tmp_path / "grades.csv"
    score_all(klass, csv_path, fake_options(tmp_path))
    assert graded_log(tmp_path) == sorted(CLASS)
    before, old_key = csv_path.read_bytes(), provenance.current(fake_options(tmp_path).grading).key
    assert keys(csv_path) == {old_key} and old_key in provenance.known_keys(csv_path)
    kept = sorted(name for name, fraction in CLASS.items() if fraction is not None)  # the rows a resume would keep

    changed_tests(tmp_path, monkeypatch, "rubric.json")
    says = f"the rubric (tests/rubric.json) changed since {len(kept)} rows were graded"
    for only in (None, frozenset({"cy"})):  # a resume, and an --only run beside the others' rows
        with pytest.raises(BatchError, match=re.escape(f": {says}; --regrade-stale grades them again, --force")):
            score_all(klass, csv_path, fake_options(tmp_path, only=only))
    monkeypatch.setattr("grader.classroom.commands.stop_on_sigterm", lambda: None)  # leave pytest's SIGTERM be
    code = main(["score-all", str(klass), "--csv", str(csv_path), "--gpu", "skip", "--sandbox", "none"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err and "Traceback" not in err, err
    assert f"python -m grader rescore JSON_DIR --csv {csv_path} scores them again" in err  # points alone: no code run
    assert csv_path.read_bytes() == before and graded_log(tmp_path) == []  # refused: nothing graded or written

    summary = score_all(klass, csv_path, fake_options(tmp_path, regrade_stale=True))
    new_key = provenance.current(fake_options(tmp_path).grading).key
    assert new_key != old_key and graded_log(tmp_path) == sorted(CLASS)  # the stale rows and the error row
    assert keys(csv_path) == {new_key} and list(read_grades(csv_path).rows) == sorted(CLASS)
    assert any(says in warning for warning in summary.warnings), summary.warnings  # the run says why it regraded
    assert provenance.known_keys(csv_path)[new_key]["rubric"] == provenance.rubric_hash()
    score_all(klass, csv_path, fake_options(tmp_path))  # under the new key, a plain resume keeps them
    assert graded_log(tmp_path) == ["cy"]


@pytest.mark.parametrize(("edit", "part"), [
    ("rubric.json", "the rubric (tests/rubric.json)"),
    ("conftest.py", "the hidden tests (tests/)"),
    ("03_causal/test_causal_mask.py", "the hidden tests (tests/)"),
    ("standins/causal_mask.py", "the hidden tests (tests/)"),
    ("known_results.json", "the hidden tests (tests/)"),
    ("README.md", None),  # read by people, not by a grading
    ("mutants/mutants.py", None),  # the project's own mutation tests
])
def test_the_key_follows_what_decides_a_grade(tmp_path: Path, monkeypatch, edit: str, part: str | None) -> None:
    grading = GradeOptions(gpu="skip")
    before = provenance.current(grading).describe()
    changed_tests(tmp_path, monkeypatch, edit)
    assert provenance.what_changed(before, provenance.current(grading).describe()) == ([part] if part else [])


@pytest.mark.slow  # several runs of a fake class (1-3 s): CI runs it
def test_grading_options_that_change_grades_are_in_the_key_and_the_sandbox_is_not(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", CLASS)
    csv_path = tmp_path / "grades.csv"
    options = fake_options(tmp_path)
    score_all(klass, csv_path, options)
    graded_log(tmp_path)
    longer = replace(options, grading=replace(options.grading, call_timeout=options.grading.call_timeout * 2))
    with pytest.raises(BatchError, match=r"--timeout \(\S+ -> \S+\) changed since 2 rows"):
        score_all(klass, csv_path, longer)
    with pytest.raises(BatchError, match=r"--gpu \(skip -> simulate\) changed"):
        score_all(klass, csv_path, replace(options, grading=replace(options.grading, gpu="simulate")))
    score_all(klass, csv_path, replace(options, grading=replace(options.grading, sandbox="none")))
    assert graded_log(tmp_path) == ["cy"]  # where the code runs is no part of its grade: the rows stay

    described = provenance.current(options.grading).describe()
    other = {**described, "torch": "9.9", "grader": "0.2.0+abc"}
    assert provenance.what_changed(described, other) == [f"the grader ({described['grader']} -> 0.2.0+abc)",
                                                         f"torch ({described['torch']} -> 9.9)"]
    (csv_path.with_name(csv_path.name + ".provenance.json")).unlink()  # what the key was is lost
    with pytest.raises(BatchError, match=r"2 rows were graded under [0-9a-f]{12}, this run grades under .* does not say"):
        score_all(klass, csv_path, longer)


def test_an_old_csv_without_provenance_columns_says_how_to_go_on(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", CLASS)
    csv_path = tmp_path / "grades.csv"
    old = [column for column in csv_columns() if column not in PROVENANCE_COLUMNS]
    csv_path.write_text(",".join(old) + "\r\n")
    with pytest.raises(BatchError, match="older grader, without the columns .* score-all --force"):
        score_all(klass, csv_path, fake_options(tmp_path))
    with pytest.raises(MergeError, match="older grader"):
        merge(tmp_path / "merged.csv", [csv_path])
    score_all(klass, csv_path, fake_options(tmp_path, force=True))
    assert graded_log(tmp_path) == sorted(CLASS) and len(keys(csv_path)) == 1


@pytest.mark.slow  # several runs of a fake class (1-3 s): CI runs it
def test_merge_refuses_shards_of_two_gradings(tmp_path: Path, monkeypatch) -> None:
    klass = fake_class(tmp_path / "class", {"ann": 1.0, "ben": 0.5, "dee": 0.0, "hal": 0.75, "=fox": 0.25})
    assert {shard_of(name, 2) for name in ["ann", "ben", "dee", "hal", "=fox"]} == {1, 2}  # neither shard empty
    options = fake_options(tmp_path)
    longer = replace(options, grading=replace(options.grading, call_timeout=options.grading.call_timeout * 2))
    shards = [tmp_path / "shard-1.csv", tmp_path / "shard-2.csv"]
    score_all(klass, shards[0], replace(options, shard=(1, 2)))
    score_all(klass, shards[1], replace(longer, shard=(2, 2)))
    out = tmp_path / "merged.csv"
    with pytest.raises(MergeError, match=r"graded under different keys \(--timeout .* differ\)"):
        merge(out, shards)
    assert not out.exists()

    score_all(klass, shards[1], replace(options, shard=(2, 2), regrade_stale=True))
    merge(out, shards)
    assert len(keys(out)) == 1 and set(provenance.known_keys(out)) == keys(out)
    changed_tests(tmp_path, monkeypatch, "rubric.json")  # this checkout's rubric is not the shards' any more
    with pytest.raises(MergeError, match=r"the rubric \(tests/rubric.json\) changed since its rows were graded"):
        merge(tmp_path / "again.csv", shards)


# --- the lock ----------------------------------------------------------------------------------------


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_two_runs_cannot_both_write_one_csv(tmp_path: Path) -> None:
    """A run holds the CSV's lock from before it reads the CSV until it has written everything: a second
    run, an --only run and a merge into or from that CSV are refused at once, saying who holds it."""
    klass = fake_class(tmp_path / "class", CLASS)
    csv_path, gates = tmp_path / "grades.csv", tmp_path / "gates"
    gates.mkdir()
    first: dict[str, object] = {}

    def run() -> None:
        try:
            first["summary"] = score_all(klass, csv_path, replace(fake_options(tmp_path), jobs=1,
                                                                  job_argv=fake_job(tmp_path, gates)))
        except BaseException as err:  # reported by the test, below
            first["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    try:
        holder = f"score-all, pid {os.getpid()} on "
        wait_for(lambda: lock_path(csv_path).is_file() and holder in lock_path(csv_path).read_text() and csv_path.is_file(),
                 "the first run's lock, and its CSV (the header, written before anyone is graded)")
        for only in (None, frozenset({"ann"})):
            with pytest.raises(BatchError, match=f"is in use by another run \\({holder}"):
                score_all(klass, csv_path, fake_options(tmp_path, only=only))
        for args in ((csv_path, [tmp_path / "other.csv"]), (tmp_path / "merged.csv", [csv_path])):
            (tmp_path / "other.csv").write_text(",".join(csv_columns()) + "\r\n")
            with pytest.raises(MergeError, match="in use by another run"):
                merge(*args)
    finally:
        for name in CLASS:
            (gates / name).touch()
        thread.join(120)
    assert "error" not in first, first
    assert graded_log(tmp_path) == sorted(CLASS)  # each graded once, by the first run
    assert list(read_grades(csv_path).rows) == sorted(CLASS)
    score_all(klass, csv_path, fake_options(tmp_path))  # the lock went with the run
    assert graded_log(tmp_path) == ["cy"]


def test_a_crashed_runs_lock_goes_with_it(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", CLASS)
    csv_path = tmp_path / "grades.csv"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from grader.classroom.sheet_lock import take_lock; "
         "lock = take_lock(Path(sys.argv[1]), 'score-all'); print('held', flush=True); sys.stdin.read()", str(csv_path)],
        cwd=REPO_ROOT, env=venv_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(BatchError, match=f"pid {holder.pid} on "):
            score_all(klass, csv_path, fake_options(tmp_path))
    finally:
        holder.kill()  # as kill -9 ends a run
        holder.wait(60)
    score_all(klass, csv_path, fake_options(tmp_path))
    assert graded_log(tmp_path) == sorted(CLASS)


def test_an_nbgrader_course_is_graded_by_one_run_at_a_time(tmp_path: Path) -> None:
    """The nbgrader path holds the course's lock from before it stages a notebook: a second run would
    stage over the notebooks the first is grading."""
    course = Course(tmp_path / "course", [GROUPS[0]], {GROUPS[0]: ["ann"]})
    course.work.mkdir(parents=True)
    with take_lock(course.work, "nbgrader"):
        with pytest.raises(CourseError, match=f"kata-grading is in use by another run \\(nbgrader, pid {os.getpid()} on "):
            grade_course(course, fake_options(tmp_path))
    assert list(course.work.iterdir()) == []  # nothing staged
