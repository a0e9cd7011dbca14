"""merge: score-all --shard runs joined into exactly what one run writes; damaged or foreign input refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from grader.classroom.grades_sheet import csv_columns, csv_row, json_path
from grader.classroom.roster import shard_of
from grader.classroom.score_all import score_all
from grader.cli import main
from support import cpu_points, fake_class, fake_options, fake_report, graded_log, run_grader, without_times

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.usefixtures("no_class_summary")]

CLASS = {"ann": 1.0, "ben": 0.5, "cy": None, "dee": 0.0, "hal": 0.75, "=fox": 0.25}


@pytest.fixture
def shards(tmp_path: Path) -> tuple[Path, list[Path], list[Path]]:
    """The class graded by one run (tmp/one.csv, tmp/one-json) and by 3 shards (tmp/shard-K.csv, json-K)."""
    klass = fake_class(tmp_path / "class", CLASS)
    score_all(klass, tmp_path / "one.csv", fake_options(tmp_path, json_dir=tmp_path / "one-json"))
    assert graded_log(tmp_path) == sorted(CLASS)
    csvs, dirs = [], []
    for k in (1, 2, 3):
        csvs.append(tmp_path / f"shard-{k}.csv")
        dirs.append(tmp_path / f"json-{k}")
        score_all(klass, csvs[-1], fake_options(tmp_path, json_dir=dirs[-1], shard=(k, 3)))
        assert graded_log(tmp_path) == sorted(name for name in CLASS if shard_of(name, 3) == k)
    return tmp_path, csvs, dirs


def test_merged_shards_equal_one_run(shards) -> None:
    from nbgrader.api import Gradebook

    tmp, csvs, dirs = shards
    assert all(len(read(path)) >= 1 for path in csvs)  # every shard graded someone
    proc = run_grader("merge", str(tmp / "merged.csv"), *map(str, reversed(csvs)), "--json-dir", str(tmp / "merged-json"),
               "--from-json-dirs", *map(str, dirs), "--gradebook", str(tmp / "gradebook.db"), "--assignment", "hw3")
    assert proc.returncode == 0, proc.stderr
    assert without_times(tmp / "merged.csv") == without_times(tmp / "one.csv")
    ours = {p.name: p.read_bytes() for p in (tmp / "merged-json").iterdir()}
    theirs = {p.name: p.read_bytes() for p in (tmp / "one-json").iterdir()}
    assert ours == theirs and "cy.json" not in ours and "=fox.json" in ours
    with Gradebook(f"sqlite:///{tmp / 'gradebook.db'}") as gb:
        submissions = {s.student.id: s.score for s in gb.find_assignment("hw3").submissions}
    assert set(submissions) == set(CLASS)
    assert submissions["ann"] == pytest.approx(cpu_points()) and submissions["cy"] == 0.0
    created = [tmp / "merged.csv", tmp / "gradebook.db", *(tmp / "merged-json").iterdir()]
    assert not [p.name for p in created if p.stat().st_mode & 0o077]  # for the instructor alone, whatever the umask


def test_merging_refuses_damaged_or_overlapping_shards(shards, capsys) -> None:
    tmp, csvs, dirs = shards
    out = tmp / "merged.csv"
    whole = csvs[0].read_bytes()
    csvs[0].write_bytes(whole[:-5])  # a shard killed mid-row
    assert_refused(capsys, ["merge", str(out), *map(str, csvs)], "cut short")
    csvs[0].write_bytes(whole)
    other = tmp / "other.csv"  # the same student graded differently in two shards
    with open(other, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=csv_columns())
        writer.writeheader()
        name = next(iter(read(csvs[1])))
        writer.writerow(csv_row(name, {"error": "again"}, "0" * 64))
    assert_refused(capsys, ["merge", str(out), *map(str, csvs), str(other)], "different rows")
    next(dirs[2].iterdir()).unlink()  # a graded student's report lost
    assert_refused(capsys, ["merge", str(out), *map(str, csvs), "--json-dir", str(tmp / "j"), "--from-json-dirs", *map(str, dirs)],
                   "no JSON report")
    (tmp / "foreign.csv").write_text("name,grade\nann,3\n")
    assert_refused(capsys, ["merge", str(out), str(tmp / "foreign.csv")], "not a score-all CSV")
    assert_refused(capsys, ["merge", str(out), str(tmp / "missing.csv")], "no such file")
    assert_refused(capsys, ["merge", str(out), str(csvs[0]), "--json-dir", str(tmp / "j")], "go together")
    (tmp / "notes.db").write_text("not a database")
    assert_refused(capsys, ["merge", str(out), *map(str, csvs), "--gradebook", str(tmp / "notes.db"), "--assignment", "hw3"],
                   "not an nbgrader gradebook")
    assert not out.exists()


def test_untrusted_names_never_write_outside_the_json_dir(tmp_path: Path) -> None:
    shard = tmp_path / "shard.csv"
    report = json.loads(json.dumps(fake_report()))
    names = ["../escaped", "a/b", "..", ".hidden", "ok"]
    with open(shard, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=csv_columns())
        writer.writeheader()
        for name in names:
            writer.writerow(csv_row(name, {"report": report}, "0" * 64))
    source = tmp_path / "src" / "deep"
    source.mkdir(parents=True)
    (tmp_path / "src" / "escaped.json").write_text(json.dumps(report))  # what "../escaped" would read
    (source / "ok.json").write_text(json.dumps(report))
    out_json = tmp_path / "out" / "json"
    proc = run_grader("merge", str(tmp_path / "merged.csv"), str(shard), "--json-dir", str(out_json),
               "--from-json-dirs", str(source))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out_json.iterdir()) == ["ok.json"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["json"]
    assert proc.stderr.count("cannot be a file name") == 4
    assert [row["student"] for row in read(tmp_path / "merged.csv").values()] == sorted(names)


def test_score_all_never_writes_a_report_outside_the_json_dir(tmp_path: Path) -> None:
    for name in ("../x", "a/b", "..", ".", "", ".x", "a\0b", "x" * 300):
        with pytest.raises(ValueError):
            json_path(tmp_path, name)
    assert json_path(tmp_path, "=fox") == tmp_path / "=fox.json"


def read(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def assert_refused(capsys: pytest.CaptureFixture, args: list[str], says: str) -> None:
    """The command line refuses ``args`` with exit 2 and one line saying ``says`` (run in this process:
    merge reads no student code)."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err, (args, err)
    assert "Traceback" not in err
