"""score-all: a class graded in parallel, rows equal to single runs, resumable, robust to hostile students."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader import cli
from grader.classroom.grades_sheet import HASH_COLUMN, PROVENANCE_COLUMNS, csv_columns, csv_row, read_grades
from grader.classroom.roster import in_shard, parse_shard, shard_of, submission_hash
from grader.classroom.score_all import BatchError, score_all
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.reports.json_report import to_json
from grader.rubric import REPO_ROOT, load_rubric
from support import (FAKE_JOB_CLI, cpu_points, build_submission, fake_class, fake_job, fake_options, graded_log,
                     run_grader, venv_env, without_times)

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow, pytest.mark.usefixtures("no_class_summary")]


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
    """One real score-all of the class, with every output: the tests below read what it wrote. Started with
    umask 022, as an instructor's shell is, so that its outputs' modes are score-all's own doing."""
    out = tmp_path_factory.mktemp("out")
    args = ["score-all", str(classroom), "--csv", str(out / "grades.csv"), "--json-dir", str(out),
            "--feedback-dir", str(out / "feedback"), "--jobs", "2", "--gradebook", str(out / "gradebook.db"),
            "--assignment", "hw3"]
    proc = subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); from grader.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *args], cwd=REPO_ROOT, env=venv_env(), capture_output=True,
                          text=True)
    return proc, out / "grades.csv", out


def rows(csv_path: Path) -> dict[str, dict[str, str]]:
    return read_grades(csv_path).rows


def test_every_student_has_a_row_and_other_files_are_ignored(graded) -> None:
    proc, csv_path, _ = graded
    assert proc.returncode == 0, proc.stderr
    assert "warning: ignoring notes.txt: not a folder or a .zip" in proc.stderr
    table = rows(csv_path)
    assert set(table) == {"alice", "bob", "carol", "dave", "kill_parent", "exit_at_import"}
    full_marks = str(float(load_rubric().max_score))
    assert (table["alice"]["score"], table["dave"]["score"], table["bob"]["score"]) == (full_marks, full_marks, "0.0")
    assert table["carol"]["status"] == "error" and "nothing that looks like a submission" in table["carol"]["message"]
    # Its worker killed its parent (the template) at import: the batch went on, the attacking exercise
    # scored 0 (that worker stops every time) and the others were graded in full.
    assert table["kill_parent"]["status"] == "graded"
    assert float(table["kill_parent"]["04_multihead/multihead_attention"]) == 0.0
    exercises = load_rubric().exercises
    assert all(float(table["kill_parent"][ex]) == exercises[ex].points
               for ex in ("03_causal/causal_attention", "04_multihead/multihead_wrapper", "01_simple_attention/normalization"))


def test_rows_equal_single_runs(graded, classroom: Path, shared_domains) -> None:
    """Each row and JSON report is what grading that student alone gives (grade(), what `score` and
    each job run), in the batch's own row format."""
    _, csv_path, out = graded
    table = rows(csv_path)
    grading = GradeOptions(sandbox="isolated")
    for student in ("alice", "bob", "exit_at_import"):  # kill_parent's row: the test above
        single = to_json(grade(classroom / student, grading, shared_domains))
        when = {column: table[student][column] for column in PROVENANCE_COLUMNS}  # what graded it: test_provenance.py
        assert table[student] == {**csv_row(student, {"report": single}, submission_hash(classroom / student), grading),
                                  **when}
        assert json.loads((out / f"{student}.json").read_text())["exercises"] == single["exercises"]


def test_gradebook_holds_the_batch(graded) -> None:
    from nbgrader.api import Gradebook  # here: nbgrader takes a second to import, at every collection

    _, csv_path, out = graded
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gb:
        assert gb.find_submission("hw3", "alice").score == pytest.approx(load_rubric().max_score)
        assert gb.find_submission("hw3", "bob").score == pytest.approx(0.0)


def test_unusable_command_line_input_exits_2(tmp_path: Path) -> None:
    for args in (["score-all", str(tmp_path / "nope"), "--csv", str(tmp_path / "g.csv")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "missing" / "g.csv")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--gradebook", str(tmp_path / "g.db")],
                 ["score-all", str(tmp_path), "--csv", str(tmp_path / "g.csv"), "--jobs", "0"]):
        proc = run_grader(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


# Sharding and merging are bookkeeping: test_merge.py proves that merged shards equal one run.


# --- the bookkeeping, with a stand-in job that grades no one ------------------------------------------

def _start(args: list[str], job: tuple[str, ...]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", FAKE_JOB_CLI, json.dumps(job), *args], cwd=REPO_ROOT, env=venv_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _stop_after(args: list[str], job: tuple[str, ...], gate: Path, csv_path: Path, count: int,
                kill: bool) -> subprocess.CompletedProcess:
    """A run with ``gate`` open, stopped (SIGTERM, or SIGKILL with ``kill``) once the CSV holds ``count``
    rows; the run must still be going then (stopped mid-way)."""
    gate.touch()
    proc = _start(args, job)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if csv_path.is_file() and csv_path.read_text().count("\n") >= count + 1:  # the header and the rows
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be stopped"
    if kill:
        proc.kill()
    else:
        proc.terminate()
    stderr = proc.communicate(timeout=60)[1]
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)


def test_a_run_stopped_then_killed_resumes_to_what_one_run_writes(tmp_path: Path) -> None:
    """SIGTERM after the first row (a batch system's stop, Slurm's time limit or a cancelled CI job: exit
    130, the CSV sorted and whole); the next run is killed -9 after one more row; the resume grades the
    rest (and the error row again), and the CSV, the JSON reports and the gradebook are those of one
    uninterrupted run. Each run is the command line's, its job FAKE_JOB: a student is answered once
    the test opens their gate, so each run stops at a known row."""
    klass = fake_class(tmp_path / "class", {"alice": 1.0, "bob": 0.5, "carol": None, "dave": 0.0})
    gates = tmp_path / "gates"
    gates.mkdir()
    job = fake_job(tmp_path, gates)
    csv_path, db, json_dir = tmp_path / "grades.csv", tmp_path / "gradebook.db", tmp_path / "json"
    args = ["score-all", str(klass), "--csv", str(csv_path), "--json-dir", str(json_dir), "--gpu", "skip",
            "--jobs", "1", "--gradebook", str(db), "--assignment", "hw3"]

    stopped = _stop_after(args, job, gates / "alice", csv_path, 1, kill=False)
    assert stopped.returncode == 130 and stopped.stderr.endswith("interrupted\n"), (stopped.returncode, stopped.stderr)
    content = read_grades(csv_path)
    assert content.warnings == [] and list(content.rows) == ["alice"]
    assert graded_log(tmp_path) == ["alice"]
    _stop_after(args, job, gates / "bob", csv_path, 2, kill=True)
    assert list(read_grades(csv_path).rows) == ["alice", "bob"] and graded_log(tmp_path) == ["bob"]

    (gates / "carol").touch()
    (gates / "dave").touch()
    resumed = subprocess.run([sys.executable, "-c", FAKE_JOB_CLI, json.dumps(job), *args], cwd=REPO_ROOT,
                             env=venv_env(), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert graded_log(tmp_path) == ["carol", "dave"]
    assert f"graded 1, errors 1, already in {csv_path}: 2" in resumed.stderr, resumed.stderr
    progress = [line for line in resumed.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 2, resumed.stderr
    for line in progress:  # elapsed, an estimate of what is left, the errors so far
        assert re.search(r"\(elapsed \d+:\d\d, about \d+:\d\d left, \d+ errors? so far\)$", line), line

    one = tmp_path / "one"  # what one uninterrupted run writes: each student once, in name order
    one.mkdir()
    score_all(klass, one / "grades.csv", fake_options(tmp_path, json_dir=one / "json", gradebook=one / "gradebook.db",
                                                      assignment="hw3"))
    assert without_times(csv_path) == without_times(one / "grades.csv")
    assert list(rows(csv_path)) == ["alice", "bob", "carol", "dave"]
    carol = rows(csv_path)["carol"]  # the whole rubric but the GPU check (skipped), and the hash
    assert (carol["status"], carol["max_score"], carol["submission_sha256"]) == ("error", str(float(cpu_points())),
                                                                                 submission_hash(klass / "carol"))
    assert sorted(p.name for p in json_dir.iterdir()) == ["alice.json", "bob.json", "dave.json"]
    for report in json_dir.iterdir():
        assert report.read_text() == (one / "json" / report.name).read_text(), report.name

    resumed_scores = _exported(db, tmp_path / "resumed.csv")
    assert resumed_scores == _exported(one / "gradebook.db", tmp_path / "one.csv")
    assert [student for student, _ in resumed_scores] == ["alice", "bob", "carol", "dave"]
    assert float(dict(resumed_scores)["alice"]) == cpu_points() and float(dict(resumed_scores)["carol"]) == 0


def _exported(db: Path, out: Path) -> list[tuple[str, str]]:
    """(student, score) of each row of ``nbgrader export``'s CSV of the gradebook ``db`` (its plugin, here)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(f"sqlite:///{db}") as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    with open(out, newline="") as f:
        return sorted((row["student_id"], row["score"]) for row in csv.DictReader(f))


def test_changed_submissions_and_error_rows_are_graded_again(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", {"ann": 1.0, "ben": 0.5, "cy": None})
    csv_path, json_dir = tmp_path / "grades.csv", tmp_path / "out" / "json"
    summary = score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir))
    assert graded_log(tmp_path) == ["ann", "ben", "cy"] and summary.errors == ["cy"]
    with open(csv_path, newline="") as f:
        assert {row["student"]: row for row in csv.DictReader(f)}["cy"]["message"] == "'=no score.txt"  # escaped
    assert rows(csv_path)["cy"]["message"] == "=no score.txt"  # and read back as it was
    score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir))
    assert graded_log(tmp_path) == ["cy"]  # the error row is tried again, the others stay

    (klass / "ben" / "score.txt").write_text("0.25")  # ben changed his submission
    (klass / "cy" / "score.txt").write_text("1.0")  # cy handed one in
    (klass / "ann" / "__pycache__").mkdir()
    (klass / "ann" / "__pycache__" / "x.pyc").write_bytes(b"cache")  # not the work: ann stays
    summary = score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir))
    assert graded_log(tmp_path) == ["ben", "cy"] and summary.skipped == ["ann"]
    table = rows(csv_path)
    assert list(table) == ["ann", "ben", "cy"] and float(table["ben"]["score"]) == pytest.approx(cpu_points() * 0.25)
    assert json.loads((json_dir / "cy.json").read_text())["score"] == pytest.approx(cpu_points())

    (klass / "cy" / "score.txt").unlink()  # an error now: the earlier report must not stay beside it
    score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir))
    assert graded_log(tmp_path) == ["cy"] and not (json_dir / "cy.json").exists()
    (json_dir / "ann.json").unlink()  # a report lost: ann is graded again to write it
    score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir))
    assert graded_log(tmp_path) == ["ann", "cy"] and (json_dir / "ann.json").is_file()
    score_all(klass, csv_path, fake_options(tmp_path, json_dir=json_dir, force=True))
    assert graded_log(tmp_path) == ["ann", "ben", "cy"] and list(rows(csv_path)) == ["ann", "ben", "cy"]


def test_only_grades_the_named_students_and_keeps_the_rest(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", {"ann": 1.0, "ben": 0.5, "cy": None, "dee": 0.0})
    csv_path = tmp_path / "grades.csv"
    score_all(klass, csv_path, fake_options(tmp_path, only=frozenset({"ben", "cy"})))
    assert graded_log(tmp_path) == ["ben", "cy"] and list(rows(csv_path)) == ["ben", "cy"]
    (klass / "dee" / "score.txt").write_text("1.0")  # changed, but --only does not name dee
    score_all(klass, csv_path, fake_options(tmp_path, only=frozenset({"ann", "ben"})))
    assert graded_log(tmp_path) == ["ann", "ben"] and list(rows(csv_path)) == ["ann", "ben", "cy"]
    with pytest.raises(BatchError, match="no submission .* for 'zed'"):
        score_all(klass, csv_path, fake_options(tmp_path, only=frozenset({"zed"})))
    assert graded_log(tmp_path) == [] and list(rows(csv_path)) == ["ann", "ben", "cy"]


def test_a_last_row_cut_short_is_graded_again_never_joined(tmp_path: Path) -> None:
    klass = fake_class(tmp_path / "class", {"ann": 1.0, "ben": 0.5, "cy": 0.25})
    csv_path = tmp_path / "grades.csv"
    score_all(klass, csv_path, fake_options(tmp_path))
    graded_log(tmp_path)
    whole, expected = csv_path.read_bytes(), without_times(csv_path)
    for cut in (10, 70, len(whole.splitlines()[-1]) + 1):  # mid-time, mid-hash, just the line end
        csv_path.write_bytes(whole[:-cut])  # as a kill -9 in the middle of writing cy's row leaves it
        summary = score_all(klass, csv_path, fake_options(tmp_path))
        assert graded_log(tmp_path) == ["cy"], cut
        assert any("cut short" in w for w in summary.warnings)
        with open(csv_path, newline="") as f:
            records = list(csv.reader(f))
        assert records[0] == csv_columns() and all(len(r) == len(csv_columns()) for r in records)
        assert [r[0] for r in records[1:]] == ["ann", "ben", "cy"] and without_times(csv_path) == expected
    # a row cut inside a quoted message with a line break in it
    text = whole.decode()
    ann = text.splitlines()[1]
    broken = text + ann.replace("ann,", "zoe,", 1).rsplit(",", 2)[0] + ',"a message\non two lines'
    csv_path.write_text(broken)
    score_all(klass, csv_path, fake_options(tmp_path))
    assert graded_log(tmp_path) == [] and list(rows(csv_path)) == ["ann", "ben", "cy"]
    assert all(len(row[HASH_COLUMN]) == 64 for row in rows(csv_path).values())


def test_an_interrupt_while_a_row_is_written_keeps_the_row(tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM (KeyboardInterrupt) that lands after a row reached the file, before its fsync returned:
    the sorted rewrite at the end must keep that row (it once dropped it, a row an instructor had seen)."""
    klass = fake_class(tmp_path / "class", {"ann": 1.0, "ben": 0.5})
    csv_path = tmp_path / "grades.csv"
    real_fsync, calls, seen = os.fsync, [], []

    def interrupted_fsync(fd: int) -> None:
        real_fsync(fd)
        calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        # the rewrites (the header's, the provenance sidecar's) go to temporary files: this is the first graded row's
        if calls[-1] == str(csv_path) and calls.count(calls[-1]) == 1:
            seen.extend(read_grades(csv_path).rows)
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        score_all(klass, csv_path, fake_options(tmp_path))
    monkeypatch.undo()
    assert len(seen) == 1 and list(read_grades(csv_path).rows) == seen
    graded_log(tmp_path)
    score_all(klass, csv_path, fake_options(tmp_path))
    assert graded_log(tmp_path) == sorted({"ann", "ben"} - set(seen))  # the resume grades the other one only
    assert list(rows(csv_path)) == ["ann", "ben"]


def test_an_unknown_csv_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "class").mkdir()
    (tmp_path / "grades.csv").write_text("name,grade\nann,3\n")
    proc = run_grader("score-all", str(tmp_path / "class"), "--csv", str(tmp_path / "grades.csv"), "--gpu", "skip")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--force" in proc.stderr, proc.stderr
    assert (tmp_path / "grades.csv").read_text() == "name,grade\nann,3\n"


def test_shards_are_disjoint_stable_and_independent_of_the_class() -> None:
    names = [f"student{i}" for i in range(200)] + ["alice", "Zoë", "o'brien"]
    for n in (1, 2, 3, 7):
        slices = [{name for name in names if in_shard(name, (k, n))} for k in range(1, n + 1)]
        assert set().union(*slices) == set(names) and sum(map(len, slices)) == len(names)
        assert all(len(s) > len(names) / n / 2 for s in slices)  # roughly even
    # the slice depends on the name alone: these values are part of the contract between machines
    assert [shard_of("alice", 4), shard_of("bob", 4), shard_of("carol", 4)] == [
        int.from_bytes(__import__("hashlib").sha256(n.encode()).digest()[:8], "big") % 4 + 1 for n in ("alice", "bob", "carol")]
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "1/0", "a/b", "2", "-1/3"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_the_hash_follows_the_content(tmp_path: Path) -> None:
    (tmp_path / "a" / "03_causal").mkdir(parents=True)
    (tmp_path / "a" / "03_causal" / "causal_mask.py").write_text("x = 1\n")
    first = submission_hash(tmp_path / "a")
    (tmp_path / "a" / ".git").mkdir()
    (tmp_path / "a" / ".git" / "HEAD").write_text("ref")
    assert submission_hash(tmp_path / "a") == first
    (tmp_path / "a" / "03_causal" / "causal_mask.py").write_text("x = 2\n")
    assert submission_hash(tmp_path / "a") != first
    (tmp_path / "a" / "03_causal" / "causal_mask.py").write_text("x = 1\n")
    (tmp_path / "a" / "03_causal" / "causal_mask2.py").symlink_to("/etc/passwd")
    assert submission_hash(tmp_path / "a") != first
    (tmp_path / "z.zip").write_bytes(b"PK one")
    zipped = submission_hash(tmp_path / "z.zip")
    (tmp_path / "z.zip").write_bytes(b"PK two")
    assert submission_hash(tmp_path / "z.zip") != zipped


def test_score_all_input_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The command line's main, in this process (test_intake_and_reports.py runs the real command: its
    exit status and single line of stderr)."""
    fake_class(tmp_path / "class", {"ann": 1.0})
    (tmp_path / "file").write_text("")
    for args in (["--shard", "3/2"], ["--shard", "one/two"], ["--only", "zed"], ["--json-dir", str(tmp_path / "file")],
                 ["--feedback-dir", str(tmp_path / "file" / "x")], ["--visibility", "all"]):
        try:
            rc = cli.main(["score-all", str(tmp_path / "class"), "--csv", str(tmp_path / "g.csv"), "--gpu", "skip", *args])
        except SystemExit as stop:  # argparse's own refusals
            rc = stop.code
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert not (tmp_path / "g.csv").exists()


# --- outputs for the instructor alone ------------------------------------------------------------------


def test_outputs_are_readable_by_no_other_user(graded) -> None:
    """Under uid isolation the students' code runs on this machine under other uids (and anyone can read
    score-all's command line): the CSV, JSON reports, feedback, gradebook and class summary are created
    0600, their folders 0700, whatever the umask (grader.files.private_files)."""
    proc, _, out = graded
    assert proc.returncode == 0, proc.stderr
    files = sorted(p for p in out.rglob("*") if p.is_file())
    names = {p.relative_to(out).as_posix() for p in files}
    assert {"grades.csv", "gradebook.db", "alice.json", "feedback/alice.md", "grades-summary.html"} <= names, names
    readable = [f"{p.relative_to(out)}: {p.stat().st_mode & 0o777:o}" for p in [*files, out / "feedback"]
                if p.stat().st_mode & 0o077]
    assert not readable, readable
