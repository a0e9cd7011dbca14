"""The late policy (grader/classroom/late_policy.py) and the submission times (grader/classroom/submission_time.py):
a bad policy file is one line and exit 2; each rule's arithmetic at the edges; each source of a submission's
time, a hostile repository's configuration never run; a late submission penalized in the score-all path
(CSV, feedback, summary, regrade log, resume, extension, overrides after it) and in the nbgrader path
(the staged rows' times from timestamp.txt, the gradebook's late_submission_penalty, the feedback page)."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader.classroom.class_numbers import summarize_class
from grader.classroom.class_summary import to_markdown
from grader.classroom.grades_sheet import (LATE_BY_COLUMN, LATE_COLUMNS, LATE_PENALTY_COLUMN, SUBMITTED_AT_COLUMN,
                                           SheetError, csv_columns, csv_row, json_path, read_class, read_grades)
from grader.classroom.late_policy import LatePolicy, apply_late, lateness, read_late_policy
from grader.classroom.overrides import read_overrides
from grader.classroom.regrade_log import log_path
from grader.classroom.rescore import RescoreError, rescore_class
from grader.classroom.score_all import BatchError, BatchOptions, score_all
from grader.classroom.submission_time import submission_time, submission_times
from grader.cli import main
from grader.reports.feedback import feedback_filename
from grader.rubric import GROUPS, load_rubric
from support import fake_class, fake_options, fake_report, graded_log, without_times

pytestmark = pytest.mark.usefixtures("no_class_summary")  # the summary's page is test_summary.py's

DUE = datetime(2026, 3, 1, 23, 59, tzinfo=timezone.utc)
LATE = DUE + timedelta(hours=16.5)
POLICY = {"due": DUE.isoformat(), "grace_minutes": 15, "penalty": {"percent": 5, "per": "day", "cap": 50},
          "cutoff_hours": 168, "extensions": {"carol": 48}}


def policy_file(tmp_path: Path, data: object, name: str = "late.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def stamp(folder: Path, when: datetime) -> None:
    """nbgrader's timestamp.txt, as ``nbgrader submit`` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC")


# --- the file ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("data, says", [
    (None, "cannot read it"),
    ("{not json", "not JSON"),
    ({"grace_minutes": 5}, 'at least a due date ("due")'),
    ({"due": "2026-03-01T23:59:00"}, "has no time zone"),
    ({"due": "tomorrow"}, "is not an ISO 8601 date and time"),
    ({**POLICY, "penalty": "half"}, 'penalty must be "none", "zero" or'),
    ({**POLICY, "penalty": {"percent": 5, "per": "week"}}, "penalty per week: day or hour"),
    ({**POLICY, "penalty": {"percent": 150}}, "percent must be a number from 0 to 100"),
    ({**POLICY, "grace_minutes": -1}, "grace_minutes must be a number"),
    ({**POLICY, "extensions": {"carol": "soon"}}, "extension of carol"),
    ({**POLICY, "deadline": "x"}, "unknown key deadline"),
])
def test_a_bad_policy_is_one_line_and_exit_2(tmp_path: Path, capsys, data, says: str) -> None:
    root = fake_class(tmp_path / "class", {"alice": 1.0})
    path = tmp_path / "missing.json" if data is None else policy_file(tmp_path, data)
    csv_path = tmp_path / "grades.csv"
    assert main(["score-all", str(root), "--csv", str(csv_path), "--late-policy", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err, err
    assert not csv_path.exists() and not graded_log(tmp_path)


def test_nbgrader_refuses_one_due_date_for_two_assignments(tmp_path: Path, capsys) -> None:
    for group in GROUPS[:2]:
        (tmp_path / "course" / "submitted" / "alice" / group).mkdir(parents=True)
    (tmp_path / "course" / "gradebook.db").touch()
    assert main(["nbgrader", str(tmp_path / "course"), "--late-policy", str(policy_file(tmp_path, POLICY))]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "give --assignment too" in err


# --- the arithmetic ----------------------------------------------------------------------------------


def policy(tmp_path: Path, **changes) -> LatePolicy:
    return read_late_policy(policy_file(tmp_path, {**POLICY, **changes}))


@pytest.mark.parametrize("student, after, rule, late_by, percent", [
    ("alice", timedelta(hours=-1), None, 0, 0),  # on time
    ("alice", timedelta(minutes=15), None, 0, 0),  # in the grace, to the second
    ("alice", timedelta(minutes=16), None, 0.27, 5),  # past it: late from the due date
    ("alice", timedelta(hours=16.5), None, 16.5, 5),  # one started day
    ("alice", timedelta(hours=24.5), None, 24.5, 10),  # two
    ("alice", timedelta(hours=16.5), {"percent": 2, "per": "hour", "cap": 30}, 16.5, 30),  # 17 started hours, capped
    ("alice", timedelta(hours=16.5), {"percent": 2, "per": "hour", "cap": 50}, 16.5, 34),
    ("alice", timedelta(days=6.5), None, 156, 35),  # seven started days, within the cutoff
    ("alice", timedelta(days=6.5), {"percent": 10, "per": "day"}, 156, 70),
    ("alice", timedelta(hours=168.5), None, 168.5, 100),  # past the cutoff: nothing left
    ("alice", timedelta(hours=16.5), "zero", 16.5, 100),
    ("alice", timedelta(hours=16.5), "none", 16.5, 0),
    ("carol", timedelta(hours=16.5), None, 0, 0),  # 48 hours more
    ("carol", timedelta(hours=48 + 16.5), None, 16.5, 5),  # late from her own due date
])
def test_each_rule_at_its_edges(tmp_path: Path, student: str, after: timedelta, rule, late_by: float,
                                percent: float) -> None:
    rules = policy(tmp_path, **({"penalty": rule} if rule is not None else {}))
    earned = load_rubric().max_score * 0.9
    late = lateness(rules, student, DUE + after, earned)
    assert late.late_by == pytest.approx(late_by) and late.percent == pytest.approx(percent)
    assert late.points == pytest.approx(earned * percent / 100)


def test_the_row_says_it_and_applying_again_changes_nothing(tmp_path: Path) -> None:
    rules = policy(tmp_path)
    row = csv_row("alice", {"report": fake_report(fraction=0.5)}, "1" * 64)
    first, notes = apply_late({"alice": row}, rules, {"alice": LATE})
    penalized = first["alice"]
    assert penalized[SUBMITTED_AT_COLUMN] == LATE.isoformat(timespec="seconds") and penalized[LATE_BY_COLUMN] == "16.5"
    taken = float(penalized[LATE_PENALTY_COLUMN])
    assert taken == pytest.approx(float(row["score"]) * 0.05) and taken > 0
    assert float(penalized["score"]) == pytest.approx(float(row["score"]) - taken)
    assert notes["alice"].startswith("late by 16.5 h: -5% (") and "policy: 5%/day, cap 50%, grace 15 min" in notes["alice"]
    again, _ = apply_late(first, rules, {})  # the row's own submitted_at, the penalty taken off first
    assert again == first
    unknown, none = apply_late({"alice": row}, rules, {})
    assert unknown["alice"] == row and not none  # no time: no penalty


def test_a_csv_without_the_late_columns_is_refused_in_one_line(tmp_path: Path) -> None:
    csv_path = tmp_path / "grades.csv"
    csv_path.write_text(",".join(c for c in csv_columns() if c not in LATE_COLUMNS) + "\r\n")
    with pytest.raises(SheetError, match="older grader, without the columns submitted_at, late_by, late_penalty: "):
        read_grades(csv_path)


# --- where a submission's time comes from ---------------------------------------------------------------


def git(folder: Path, *args: str, when: datetime | None = None) -> None:
    stamp_env = {"GIT_COMMITTER_DATE": when.isoformat(), "GIT_AUTHOR_DATE": when.isoformat()} if when else {}
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=s", "-c", "user.email=s@x", *args], check=True,
                   capture_output=True, env={**os.environ, **stamp_env, "GIT_CONFIG_GLOBAL": os.devnull})


def test_timestamp_txt_comes_first(tmp_path: Path) -> None:
    stamp(tmp_path / "sub", LATE)
    (tmp_path / "sub" / "attention.py").write_text("x = 1\n")
    found = submission_time(tmp_path / "sub")
    assert found is not None and found.source == "timestamp.txt" and found.when == LATE
    stamp(tmp_path / "elsewhere", DUE)  # a timestamp.txt that is a link out of the submission is not read
    (tmp_path / "sub" / "timestamp.txt").unlink()
    (tmp_path / "sub" / "timestamp.txt").symlink_to(tmp_path / "elsewhere" / "timestamp.txt")
    assert submission_time(tmp_path / "sub").source == "file time"


def test_a_repository_gives_its_commit_time_and_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "attention.py").write_text("x = 1\n")
    git(sub, "init", "-q")
    git(sub, "add", "attention.py")
    git(sub, "commit", "-q", "-m", "mine", when=LATE)
    pwned = tmp_path / "pwned"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {pwned}\n")
    evil.chmod(0o755)
    for key in ("core.fsmonitor", "core.pager", "gpg.program", "core.sshCommand"):
        git(sub, "config", key, str(evil))
    git(sub, "config", "log.showSignature", "true")
    (sub / ".git" / "hooks" / "post-checkout").write_text(evil.read_text())
    found = submission_time(sub)
    assert found is not None and found.source == "git commit" and found.when == LATE
    assert not pwned.exists()
    # a relative path, as `score-all class/` gives it: the repository is found all the same
    monkeypatch.chdir(tmp_path)
    assert submission_time(Path("sub")) == found
    # a .git that is a link (to a repository outside the submission) is not read: the files' time is
    other = tmp_path / "other"
    other.mkdir()
    os.rename(sub / ".git", other / ".git")
    (sub / ".git").symlink_to(other / ".git")
    assert submission_time(sub).source == "file time"


def test_the_newest_file_time_is_the_last_resort_and_follows_no_link(tmp_path: Path) -> None:
    sub, outside = tmp_path / "sub", tmp_path / "outside.py"
    (sub / "03_causal").mkdir(parents=True)
    old, new = LATE - timedelta(days=2), LATE
    for path, when in ((sub / "a.py", old), (sub / "03_causal" / "b.py", new), (outside, new + timedelta(days=9))):
        path.write_text("x = 1\n")
        os.utime(path, (when.timestamp(), when.timestamp()))
    (sub / "link.py").symlink_to(outside)
    found = submission_time(sub)
    assert found is not None and found.source == "file time" and found.when == new
    archive = tmp_path / "bob.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.py", "x = 1\n")
    os.utime(archive, (old.timestamp(), old.timestamp()))
    assert submission_time(archive).when == old
    (tmp_path / "empty").mkdir()
    assert submission_time(tmp_path / "empty") is None


def test_a_shard_reads_and_names_the_times_of_its_own_students_only(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 1.0, "bob": 1.0})
    warnings: list[str] = []
    times = submission_times(root, policy(tmp_path, extensions={}), warnings, {"bob"})
    assert list(times) == ["bob"] and len(warnings) == 1 and "bob" in warnings[0] and "alice" not in warnings[0]
    # an extension for a name with no submission (POLICY's carol is not in this class) is said
    submission_times(root, policy(tmp_path, extensions={"carol": 48, "bob": 48}), warnings, {"bob"})
    assert warnings[1].startswith("late policy: no submission in ") and "for the extension of carol (" in warnings[1]
    # a class whose files were all written after the due date (a download's times, not the students'): said
    root = fake_class(tmp_path / "class", {name: 1.0 for name in ("alice", "bob", "carol")})
    submission_times(root, policy(tmp_path), warnings)
    assert warnings[-1].startswith("late policy: all 3 students timed by their files are past the due date")


# --- the score-all path -----------------------------------------------------------------------------


def test_a_late_submission_is_penalized_in_score_all(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 0.5, "bob": 1.0, "carol": 1.0})
    stamp(root / "alice", LATE)
    stamp(root / "bob", DUE)
    stamp(root / "carol", LATE)  # her extension covers it
    late_file = policy_file(tmp_path, POLICY)
    options = replace(fake_options(tmp_path, json_dir=tmp_path / "reports", feedback_dir=tmp_path / "feedback",
                                   late_policy=read_late_policy(late_file)), jobs=1)
    csv_path = tmp_path / "grades.csv"
    score_all(root, csv_path, options)
    rows = read_grades(csv_path).rows
    graded = json.loads(json_path(tmp_path / "reports", "alice").read_text())["score"]
    taken = float(rows["alice"][LATE_PENALTY_COLUMN])
    assert rows["alice"][LATE_BY_COLUMN] == "16.5" and taken == pytest.approx(graded * 0.05) and taken > 0
    assert float(rows["alice"]["score"]) == pytest.approx(graded - taken)
    assert [rows[n][LATE_PENALTY_COLUMN] for n in ("bob", "carol")] == ["0", "0"]
    assert rows["carol"][SUBMITTED_AT_COLUMN] == LATE.isoformat(timespec="seconds")
    feedback = (tmp_path / "feedback" / feedback_filename("alice")).read_text()
    assert "late by 16.5 h: -5% (" in feedback and f"**Total: {float(rows['alice']['score']):g} / " in feedback
    assert "late by" not in (tmp_path / "feedback" / feedback_filename("bob")).read_text()
    numbers = summarize_class(read_class(csv_path, json_dir=tmp_path / "reports"))
    assert numbers.reports_read == 3 and not numbers.notes  # a penalized row's report is still its grading's
    summary = to_markdown(numbers)
    assert "## Late submissions" in summary and "| alice | late by 16.5 h" in summary and "| bob |" not in summary
    first = without_times(csv_path)
    graded_log(tmp_path)

    score_all(root, csv_path, options)  # a resume: the penalty taken off and applied again, once
    assert graded_log(tmp_path) == [] and without_times(csv_path) == first
    assert not log_path(csv_path).exists()
    with pytest.raises(BatchError, match="late penalties applied \\(alice\\): give --late-policy FILE again"):
        score_all(root, csv_path, replace(options, late_policy=None))  # forgetting the file drops nothing

    extended = read_late_policy(policy_file(tmp_path, {**POLICY, "extensions": {"alice": 24}}, "extended.json"))
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,exercise,points,reason,who\nbob,total,-1,rounding,TA Kim\n")
    score_all(root, csv_path, replace(options, late_policy=extended, overrides=read_overrides(overrides)))
    rows = read_grades(csv_path).rows
    assert float(rows["alice"]["score"]) == pytest.approx(graded) and rows["alice"][LATE_PENALTY_COLUMN] == "0"
    log = log_path(csv_path).read_text()
    assert "late penalty removed" in log and "override rounding" in log


def test_late_penalty_then_override(tmp_path: Path) -> None:
    """The penalty is taken from the graded score; an override applies after it and can give it back."""
    root = fake_class(tmp_path / "class", {"alice": 0.5})
    stamp(root / "alice", LATE)
    overrides = tmp_path / "overrides.csv"
    csv_path = tmp_path / "grades.csv"
    options = replace(fake_options(tmp_path, late_policy=policy(tmp_path), json_dir=tmp_path / "reports"), jobs=1)
    score_all(root, csv_path, options)
    taken = read_grades(csv_path).rows["alice"][LATE_PENALTY_COLUMN]
    overrides.write_text(f"student,exercise,points,reason,who\nalice,total,+{taken},excused delay,Prof. Lee\n")
    score_all(root, csv_path, replace(options, overrides=read_overrides(overrides)))
    row = read_grades(csv_path).rows["alice"]
    graded = json.loads(json_path(tmp_path / "reports", "alice").read_text())["score"]
    assert float(taken) > 0 and row[LATE_PENALTY_COLUMN] == taken and float(row["score"]) == pytest.approx(graded)
    # a rescore from the JSON reports applies it again, from the rows' own submitted_at, or is refused without it
    with pytest.raises(RescoreError, match="give --late-policy FILE again"):
        rescore_class(tmp_path / "reports", csv_path, overrides=read_overrides(overrides))
    rescore_class(tmp_path / "reports", csv_path, overrides=read_overrides(overrides), late_policy=policy(tmp_path))
    again = read_grades(csv_path).rows["alice"]
    assert [again[c] for c in (SUBMITTED_AT_COLUMN, LATE_BY_COLUMN)] == [row[SUBMITTED_AT_COLUMN], "16.5"]


def test_merge_applies_the_shards_late_policy_and_refuses_another(tmp_path: Path, capsys) -> None:
    """Two shards graded under the policy merge into what one run writes (alice penalized as there); merge
    under another policy, or none, is refused in one line before anything is written."""
    root = fake_class(tmp_path / "class", {name: 0.5 for name in ("alice", "bob", "carol", "dan")})
    for name in ("alice", "bob", "carol", "dan"):
        stamp(root / name, LATE)
    late_file = policy_file(tmp_path, POLICY)
    options = replace(fake_options(tmp_path, late_policy=read_late_policy(late_file)), jobs=1)
    score_all(root, tmp_path / "one.csv", options)
    shards = [tmp_path / f"shard-{k}.csv" for k in (1, 2)]
    for k, shard in enumerate(shards, start=1):
        score_all(root, shard, replace(options, shard=(k, 2)))
    assert all(read_grades(shard).rows for shard in shards)  # each shard graded someone
    merged = tmp_path / "merged.csv"
    assert main(["merge", str(merged), *map(str, shards), "--late-policy", str(late_file)]) == 0
    assert without_times(merged) == without_times(tmp_path / "one.csv")
    assert float(read_grades(merged).rows["alice"][LATE_PENALTY_COLUMN]) > 0
    assert "late by 16.5 h" in read_grades(merged).rows["alice"]["flags"]
    capsys.readouterr()
    other = policy_file(tmp_path, {**POLICY, "penalty": "zero"}, "other.json")
    for extra, says in ((["--late-policy", str(other)], "was graded under another late policy (late by 16.5 h, -"),
                        ([], "late penalties applied (")):
        target = tmp_path / f"refused-{len(extra)}.csv"
        assert main(["merge", str(target), *map(str, shards), *extra]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, err
        assert not target.exists()
    plain = tmp_path / "plain.csv"  # graded without a policy: merge under one refuses it too
    score_all(root, plain, replace(options, late_policy=None, shard=(1, 2)))
    assert main(["merge", str(tmp_path / "mixed.csv"), str(plain), "--late-policy", str(late_file)]) == 2
    err = capsys.readouterr().err
    assert "plain.csv: graded without a late policy (no submission times)" in err and len(err.strip().splitlines()) == 1


# --- the nbgrader path -------------------------------------------------------------------------------


def test_a_late_notebook_is_penalized_in_the_gradebook_and_its_feedback(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    from grader.classroom.gradebook import ClassGradebook
    from grader.classroom.nbgrader_course import Course, Graded, late_options, staged_name, write_feedback

    group = GROUPS[-1]
    course = Course(tmp_path / "course", [group], {group: ["alice", "carol"]})
    stamp(course.submitted / "alice" / group, LATE)
    stamp(course.submitted / "carol" / group, LATE)
    late = late_options(course, BatchOptions(jobs=1, late_policy=policy(tmp_path)))
    names = {student: staged_name(group, student) for student in ("alice", "carol")}
    assert late["submission_times"] == {names["alice"]: LATE, names["carol"]: LATE}
    report = fake_report(fraction=0.5)
    staged = {name: csv_row(name, {"report": report}, "1" * 64) for name in names.values()}
    rows, _ = apply_late(staged, late["late_policy"], late["submission_times"])
    alice, carol = (dict(rows[names[s]], student=s) for s in ("alice", "carol"))
    taken = float(alice[LATE_PENALTY_COLUMN])
    assert taken > 0 and carol[LATE_PENALTY_COLUMN] == "0"  # carol's extension, by her nbgrader id

    db = tmp_path / "gradebook.db"
    with ClassGradebook(db, "hw3") as book:
        book.record(alice)
        book.record(carol)
    with Gradebook(f"sqlite:///{db}") as gb:
        submission = gb.find_submission("hw3", "alice")
        assert submission.late_submission_penalty == pytest.approx(taken)
        # what nbgrader export writes: the cells' sum less the penalty
        assert max(0.0, submission.score - submission.late_submission_penalty) == pytest.approx(float(alice["score"]))
        assert gb.find_submission("hw3", "carol").late_submission_penalty == 0
    with ClassGradebook(db, "hw3") as book:  # recorded again on time: the penalty goes
        book.record(carol | {"student": "alice"})
    with Gradebook(f"sqlite:///{db}") as gb:
        assert gb.find_submission("hw3", "alice").late_submission_penalty == 0

    page = write_feedback(course, Graded(group, "alice", alice, report), "full", late["late_policy"]).read_text()
    assert "late by 16.5 h: -5% (" in page
    assert "late by" not in write_feedback(course, Graded(group, "carol", carol, report), "full", late["late_policy"]).read_text()
