"""Overrides (grader/classroom/overrides.py) and the regrade log (grader/classroom/regrade_log.py): an
override shows in the CSV, the class summary, the feedback and the gradebook, survives ``--force`` and a
resume without being applied twice, and every change of a total is logged with its reason."""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from grader.blind_ids import BlindIds
from grader.classroom.class_numbers import summarize_class
from grader.classroom.class_summary import to_markdown
from grader.classroom.grades_sheet import OVERRIDES_COLUMN, csv_row, json_path, read_class, read_grades, write_grades
from grader.classroom.merge import MergeError, merge
from grader.classroom.overrides import read_overrides
from grader.classroom.regrade_log import LOG_COLUMNS, log_path
from grader.classroom.score_all import BatchError, BatchOptions, score_all
from grader.cli import main
from grader.reports.feedback import feedback_filename
from grader.rubric import load_rubric
from support import fake_class, fake_options, fake_report, graded_log, without_times

pytestmark = pytest.mark.usefixtures("no_class_summary")  # the summary's page is test_summary.py's (plots: 0.5 s a run)

HEADER = "student,exercise,points,reason,who\n"


def one_job(tmp_path: Path, **kwargs) -> BatchOptions:
    """score-all's options with the fake job (support.fake_job), one of them: a handful of students each run."""
    return replace(fake_options(tmp_path, **kwargs), jobs=1)


def first_exercise() -> tuple[str, float]:
    ex = next(iter(load_rubric().exercises.values()))
    return ex.id, ex.points


def write_overrides(path: Path, *lines: str) -> Path:
    path.write_text(HEADER + "".join(line + "\n" for line in lines))
    return path


def log_lines(csv_path: Path) -> list[dict[str, str]]:
    path = log_path(csv_path)
    if not path.exists():
        return []
    with open(path, newline="") as f:
        records = [[cell.removeprefix("'") for cell in record] for record in csv.reader(f)]  # the spreadsheet escape
    assert records[0] == list(LOG_COLUMNS)
    return [dict(zip(LOG_COLUMNS, r)) for r in records[1:]]


def small_class(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A graded class's CSV and JSON reports, without a grading: alice half her points, bob all of his."""
    reports, csv_path = tmp_path / "reports", tmp_path / "grades.csv"
    reports.mkdir()
    rows = []
    for i, (name, fraction) in enumerate([("alice", 0.5), ("bob", 1.0)], start=1):
        report = fake_report(fraction=fraction)
        json_path(reports, name).write_text(json.dumps(report))
        rows.append(csv_row(name, {"report": report}, f"{i:064x}"))
    write_grades(csv_path, rows)
    return csv_path, reports, tmp_path / "overrides.csv"


@pytest.mark.parametrize("lines, says", [
    (None, "No such file"),
    (["alice,total,+2,regrade"], "missing: who"),
    (["alice,total,two,regrade,TA Kim"], "neither a change (+2, -1.5) nor a value (7)"),
    (["alice,99_none/nothing,+2,regrade,TA Kim"], "99_none/nothing is no exercise of tests/rubric.json"),
    (["alice,{ex},{over},regrade,TA Kim"], "out of"),
    (["alice,total,+2,,TA Kim"], ":2: no reason"),
    (["alice,total,+1,ok,TA Kim", "zed,total,+2,regrade,TA Kim"], "no student zed in"),
    (["alice,total,+2,regrade,TA Kim,extra"], ":2: 6 cells, the header has 5"),
])
def test_a_bad_overrides_file_is_one_line_and_exit_2(tmp_path: Path, capsys, lines, says: str) -> None:
    csv_path, reports, overrides = small_class(tmp_path)
    ex_id, points = first_exercise()
    if lines is not None:
        header_less = lines == ["alice,total,+2,regrade"]
        text = ("student,exercise,points,reason\n" if header_less else HEADER) + "".join(
            line.format(ex=ex_id, over=points + 1) + "\n" for line in lines)
        overrides.write_text(text)
    before = csv_path.read_bytes()
    assert main(["rescore", str(reports), "--csv", str(csv_path), "--overrides", str(overrides)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err, err
    assert csv_path.read_bytes() == before and not log_path(csv_path).exists()


def test_an_override_shows_in_the_csv_summary_feedback_and_survives_force(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 0.5, "bob": 1.0, "carol": None})
    ex_id, _ = first_exercise()
    by_hand = 7  # the override's own value (carol's grading failed)
    overrides = write_overrides(tmp_path / "overrides.csv", f"alice,{ex_id},+2,accepted regrade request,TA Kim",
                                "bob,total,'-5,late; a day,Prof. Lee", f"carol,total,{by_hand},graded by hand,Prof. Lee")
    options = one_job(tmp_path, json_dir=tmp_path / "reports", feedback_dir=tmp_path / "feedback",
                      overrides=read_overrides(overrides))
    csv_path = tmp_path / "grades.csv"
    score_all(root, csv_path, options)
    rows = read_grades(csv_path).rows
    alice = json.loads(json_path(tmp_path / "reports", "alice").read_text())
    bob = json.loads(json_path(tmp_path / "reports", "bob").read_text())
    graded = alice["exercises"][ex_id]["score"]
    assert float(rows["alice"][ex_id]) == pytest.approx(graded + 2)
    assert float(rows["alice"]["score"]) == pytest.approx(alice["score"] + 2)
    assert float(rows["bob"]["score"]) == pytest.approx(bob["score"] - 5)
    assert rows["carol"]["status"] == "error" and float(rows["carol"]["score"]) == by_hand
    assert rows["alice"][OVERRIDES_COLUMN].startswith(f"{ex_id} {graded} -> {graded + 2}, total ")
    assert "(-5 by Prof. Lee: late, a day)" in rows["bob"][OVERRIDES_COLUMN]
    # never baked into the stored report: it holds the grading
    assert json.loads(json_path(tmp_path / "reports", "alice").read_text()) == alice
    feedback = (tmp_path / "feedback" / feedback_filename("alice")).read_text()
    assert f"overridden: {ex_id} +2 by TA Kim: accepted regrade request" in feedback
    assert f"**Total: {float(rows['alice']['score']):g} / " in feedback and f"| {graded + 2:g} / " in feedback
    assert "overridden: -5 by Prof. Lee: late, a day" in (tmp_path / "feedback" / feedback_filename("bob")).read_text()
    numbers = summarize_class(read_class(csv_path, json_dir=tmp_path / "reports"))
    assert numbers.reports_read == 2 and not numbers.notes  # an overridden row's report is still its grading's
    summary = to_markdown(numbers)
    assert "## Overrides" in summary and "| alice | " in summary and "| bob | " in summary
    assert not log_lines(csv_path)  # nothing held before: nothing changed
    graded_log(tmp_path)
    first = without_times(csv_path)

    score_all(root, csv_path, replace(options, force=True))
    assert graded_log(tmp_path) == ["alice", "bob", "carol"]  # everyone graded again ...
    assert without_times(csv_path) == first  # ... and every override applied once, again
    assert not log_lines(csv_path)
    score_all(root, csv_path, options)  # a resume keeps the rows and applies the overrides once
    assert graded_log(tmp_path) == ["carol"] and without_times(csv_path) == first


def test_each_change_of_a_total_is_logged_with_why(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 0.5, "bob": 1.0})
    ex_id, _ = first_exercise()
    csv_path = tmp_path / "grades.csv"
    options = one_job(tmp_path, json_dir=tmp_path / "reports", feedback_dir=tmp_path / "feedback")
    score_all(root, csv_path, options)
    first = read_grades(csv_path).rows
    overrides = write_overrides(tmp_path / "overrides.csv", f"alice,{ex_id},+2,accepted regrade request,TA Kim")
    score_all(root, csv_path, replace(options, overrides=read_overrides(overrides)))
    second = read_grades(csv_path).rows
    (logged,) = log_lines(csv_path)
    assert (logged["student"], logged["old"], logged["new"]) == ("alice", first["alice"]["score"], second["alice"]["score"])
    assert logged["why"] == "override accepted regrade request" and logged["grader_version"] and logged["when"]
    assert "+2 by TA Kim" in (tmp_path / "feedback" / feedback_filename("alice")).read_text()  # a kept row's too

    (root / "alice" / "score.txt").write_text("1.0")
    score_all(root, csv_path, replace(options, only=frozenset({"alice"}), overrides=read_overrides(overrides)))
    assert [line["why"] for line in log_lines(csv_path)] == ["override accepted regrade request", "regrade (--only)"]
    write_overrides(overrides)  # the header alone: the override is dropped, and logged
    score_all(root, csv_path, replace(options, overrides=read_overrides(overrides)))
    assert log_lines(csv_path)[-1]["why"] == "override removed" and not read_grades(csv_path).rows["alice"][OVERRIDES_COLUMN]
    assert "overridden" not in (tmp_path / "feedback" / feedback_filename("alice")).read_text()


def test_a_csv_holding_overrides_needs_the_file_again(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 0.5})
    overrides = write_overrides(tmp_path / "overrides.csv", "alice,total,+1,regrade,TA Kim")
    options = one_job(tmp_path, overrides=read_overrides(overrides))
    score_all(root, tmp_path / "grades.csv", options)
    before = (tmp_path / "grades.csv").read_bytes()
    for forgot in (replace(options, overrides=None), replace(options, overrides=None, force=True)):
        with pytest.raises(BatchError, match="grades.csv: overrides applied \\(alice\\): give --overrides FILE again"):
            score_all(root, tmp_path / "grades.csv", forgot)
    assert (tmp_path / "grades.csv").read_bytes() == before


def test_under_blind_grading_the_overridden_feedback_names_no_one(tmp_path: Path) -> None:
    root = fake_class(tmp_path / "class", {"alice": 0.5})
    overrides = write_overrides(tmp_path / "overrides.csv", "alice,total,+1,regrade request,TA Kim")
    blind = BlindIds.from_key_file(tmp_path / "blind.key")
    score_all(root, tmp_path / "grades.csv", one_job(tmp_path, feedback_dir=tmp_path / "feedback", blind=blind,
                                                     overrides=read_overrides(overrides)))
    (written,) = (tmp_path / "feedback").iterdir()
    assert written.name == feedback_filename(blind("alice")) and "overridden: +1 by TA Kim" in written.read_text()


def test_merge_applies_overrides_and_the_gradebook_shows_them(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    from grader.classroom.gradebook import NOTEBOOK, cell_name

    ex_id, _ = first_exercise()
    shards = []
    for i, (name, fraction) in enumerate([("alice", 0.5), ("bob", 1.0)], start=1):
        shards.append(tmp_path / f"shard-{i}.csv")
        write_grades(shards[-1], [csv_row(name, {"report": fake_report(fraction=fraction)}, f"{i:064x}")])
    overrides = read_overrides(write_overrides(tmp_path / "overrides.csv", f"alice,{ex_id},+2,regrade request,TA Kim"))
    db = tmp_path / "gradebook.db"
    merge(tmp_path / "grades.csv", shards, gradebook=db, assignment="hw3", overrides=overrides)
    alice = read_grades(tmp_path / "grades.csv").rows["alice"]
    assert "regrade request" in alice[OVERRIDES_COLUMN] and "override applied" in alice["flags"]
    assert "override" not in read_grades(tmp_path / "grades.csv").rows["bob"]["flags"]
    with Gradebook(f"sqlite:///{db}") as gb:
        assert gb.find_grade(cell_name(ex_id), NOTEBOOK, "hw3", "alice").auto_score == pytest.approx(float(alice[ex_id]))
    merge(tmp_path / "grades.csv", shards, overrides=overrides)  # merged again: applied once
    assert read_grades(tmp_path / "grades.csv").rows["alice"] == alice
    shutil.copy(tmp_path / "grades.csv", shards[0])  # a shard that holds overrides: they are not dropped silently
    with pytest.raises(MergeError, match="a shard: overrides applied \\(alice\\)"):
        merge(tmp_path / "again.csv", shards[:1])
