"""``python -m grader export``: the roster's matching of the LMSs' folder names, and the Canvas, Moodle and
nbgrader files against their documented formats (grader/classroom/lms_export.py cites them), a formula in a
name kept escaped, and unusable input refused in one line (exit 2). In-process and over made-up grades CSVs:
no grading runs here."""

from __future__ import annotations

import ast
import csv
import importlib.util
import io
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support import fake_class, fake_options, fake_report

from grader.blind_ids import BlindIds
from grader.classroom.blind_grading import blind_sheet
from grader.classroom.flags import with_flags
from grader.classroom.grades_sheet import FLAGS_COLUMN, ClassSheet, csv_row, read_grades, write_grades
from grader.classroom.merge import merge
from grader.classroom.score_all import score_all
from grader.classroom.lms_export import ExportOptions, export
from grader.classroom.student_roster import RosterEntry, lms_ids, match_students, read_roster
from grader.cli import main
from grader.rubric import GROUPS

# folder name -> (roster id, fraction of the points)
CLASS = {
    "Jane Doe_12345_assignsubmission_file_": ("12345", 1.0),  # Moodle, in folders
    "Participant_23456_assignsubmission_onlinetext_": ("23456", 0.5),  # Moodle, blind marking
    "doejohn_late_777_888_attention": ("777", 0.25),  # Canvas, late
    "attention-kata-OctoCat": ("999", 0.75),  # GitHub Classroom: <assignment>-<login>
    "stray": (None, 0.1),  # in no roster row
}
ROSTER = ('id,name,email,login\n'
          '12345,Jane Doe,jane@example.org,\n'
          '23456,"Roe, Richard",richard@example.org,\n'
          '777,"Doe, John",john@example.org,\n'
          '999,"=HYPERLINK(""http://evil.example"",""x"")",octo@example.org,octocat\n'
          '5,Nobody Here,nobody@example.org,\n')
REPORTS = {folder: fake_report(fraction=fraction) for folder, (_, fraction) in CLASS.items()}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    write_grades(root / "grades.csv", [csv_row(folder, {"report": report}, "a" * 64) for folder, report in REPORTS.items()])
    (root / "roster.csv").write_text(ROSTER, encoding="utf-8")
    return root


def _export(course: Path, to: str, **options) -> tuple[list[list[str]], list[str]]:
    out = course / f"{to}.csv"
    lines = export(course / "grades.csv", course / "roster.csv", out, ExportOptions(to=to, **options))
    return list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline=""))), lines


def _expected_scores() -> dict[str, str]:
    return {roster_id: f"{round(REPORTS[folder]['score'], 2):g}" for folder, (roster_id, _) in CLASS.items() if roster_id}


def test_canvas_file_is_the_gradebook_import_shape(course: Path) -> None:
    table, _ = _export(course, "canvas", assignment="Kata", assignment_id="42")
    total = f"{REPORTS['stray']['max_score']:g}"
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Kata (42)"]
    assert table[1] == ["Points Possible", "", "", "", "", total]
    assert {row[1]: row[5] for row in table[2:]} == _expected_scores()
    assert ["Doe, John", "777"] == table[2 + [row[1] for row in table[2:]].index("777")][:2]


def test_moodle_file_is_the_offline_grading_worksheet(course: Path) -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    table, _ = _export(course, "moodle", now=now)
    # Moodle's importer finds these three by name; "Participant " + the participant id is its identifier
    assert table[0] == ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed",
                        "Last modified (grade)"]
    rows = {row[0]: row for row in table[1:]}
    assert {key.removeprefix("Participant "): row[3] for key, row in rows.items()} == _expected_scores()
    assert rows["Participant 12345"][1:3] == ["Jane Doe", "jane@example.org"]
    assert {datetime.fromisoformat(row[6]) for row in table[1:]} == {now}


def test_nbgrader_list_has_the_columns_of_nbgraders_student_table(course: Path) -> None:
    table, _ = _export(course, "nbgrader")
    assert table[0] == ["id", "first_name", "last_name", "email"]
    assert set(table[0]) <= _nbgrader_student_columns()  # what `nbgrader db student import` accepts
    rows = {row[0]: row[1:] for row in table[1:]}
    assert rows["777"] == ["John", "Doe", "john@example.org"]  # "Last, First" split
    assert rows["5"] == ["Nobody", "Here", "nobody@example.org"]  # every roster row, graded or not


def _nbgrader_student_columns() -> set[str]:
    """The columns of nbgrader's Student table, read from its source (importing nbgrader takes seconds)."""
    package = Path(importlib.util.find_spec("nbgrader").submodule_search_locations[0])  # found, not imported
    tree = ast.parse((package / "api.py").read_text(encoding="utf-8"))
    student = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Student")
    return {target.id for node in student.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "Column"
            for target in node.targets if isinstance(target, ast.Name)}


@pytest.mark.parametrize("folder, lms, ids", [
    ("Jane Doe_12345_assignsubmission_file_", "Moodle", ["12345"]),
    ("Jane Doe_12345_assignsubmission_onlinetext_", "Moodle", ["12345"]),
    ("Participant_23456_assignsubmission_file_attention", "Moodle", ["23456"]),
    ("doejane_12345_67890_attention", "Canvas", ["12345"]),
    ("doejane_LATE_12345_67890_attention-1", "Canvas", ["12345"]),
    # text of the student's own (a name, a file name) that looks like an id: every candidate, the roster decides
    ("Mallory_555_assignsubmission_file_x_12345_assignsubmission_file_.zip", "Moodle", ["555", "12345"]),
    ("mallory_12345_1_555_67890_attention", "Canvas", ["12345", "1", "555"]),
    ("attention-kata-jdoe", None, None),
    ("jdoe", None, None),
    ("_12345_67890_x", None, None),
])
def test_lms_folder_names_give_the_students_id(folder: str, lms: str | None, ids: list[str] | None) -> None:
    assert lms_ids(folder) == ((lms, ids) if lms else None)


def test_a_name_made_to_hold_another_students_id_matches_no_one(course: Path) -> None:
    roster = read_roster(course / "roster.csv")
    forged = ["Mallory_777_assignsubmission_file_x_12345_assignsubmission_file_",
              "doejohn_12345_1_777_888_attention"]
    matching = match_students(forged, roster)
    assert not matching.matched
    assert matching.lines[:2] == [f"no roster row for submission {name} (a {lms} download that could be "
                                  f"{first} or {second})" for name, lms, first, second in [
                                      (forged[0], "Moodle", "777 (Doe, John)", "12345 (Jane Doe)"),
                                      (forged[1], "Canvas", "12345 (Jane Doe)", "777 (Doe, John)")]]


def test_roster_matches_each_pattern_and_says_what_matched_nothing(course: Path) -> None:
    roster = read_roster(course / "roster.csv") + [RosterEntry("31", "Pat Tern", folder="*-pat")]
    matching = match_students([*CLASS, "kata-3-pat", "23456"], roster)
    expected = {folder: roster_id for folder, (roster_id, _) in CLASS.items() if roster_id}
    del expected["Participant_23456_assignsubmission_onlinetext_"]  # and "23456": which one is theirs?
    assert {folder: entry.id for folder, entry in matching.matched.items()} == {**expected, "kata-3-pat": "31"}
    assert matching.unmatched_folders == ["stray"] and [e.id for e in matching.unmatched_entries] == ["5"]
    assert matching.lines == [
        "submissions 23456 and Participant_23456_assignsubmission_onlinetext_ both belong to 23456 (Roe, Richard): "
        "neither is used (name the right one in the roster's folder column)",
        "no roster row for submission stray",
        "no submission for roster row 5 (Nobody Here)"]
    # grader nbgrader's rows: <assignment>__<nbgrader student id>; another prefix is no assignment
    nbgrader = match_students([f"{GROUPS[-1]}__12345", "homework__777"], roster)
    assert {folder: e.id for folder, e in nbgrader.matched.items()} == {f"{GROUPS[-1]}__12345": "12345"}


def test_canvas_gradebook_export_serves_as_a_roster(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Kata (42)\n"
                                    "    Points Possible,,,,,100\n\"Doe, Jane\",12345,s1,jdoe,A,\n")
    assert read_roster(tmp_path / "r.csv") == [RosterEntry("12345", "Doe, Jane", sis_user_id="s1", sis_login_id="jdoe",
                                                           section="A")]


@pytest.mark.parametrize("to", ["canvas", "moodle", "nbgrader"])
def test_a_formula_in_a_name_stays_escaped_once(course: Path, to: str) -> None:
    text = (course / f"{to}.csv")
    _export(course, to)
    cells = [cell for row in csv.reader(io.StringIO(text.read_text(encoding="utf-8"), newline="")) for cell in row]
    assert [cell for cell in cells if cell.startswith("'=HYPERLINK(")]  # nbgrader's: split at the comma
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@") or cell.startswith("''")]


def test_blind_export_names_no_one(course: Path) -> None:
    for to in ("canvas", "moodle", "nbgrader"):
        _export(course, to, blind=True)
        text = (course / f"{to}.csv").read_text(encoding="utf-8")
        assert not [word for word in ("Jane", "Doe", "Richard", "example.org", "HYPERLINK") if word in text], to
        assert "12345" in text


def test_points_scale_the_scores(course: Path) -> None:
    table, _ = _export(course, "canvas", points=10)
    assert table[1][5] == "10"
    assert {row[1]: row[5] for row in table[2:]}["777"] == f"{round(REPORTS['doejohn_late_777_888_attention']['score'] * 10 / REPORTS['stray']['max_score'], 2):g}"


def test_unusable_input_is_one_line_and_exit_2(course: Path, tmp_path: Path, capsys) -> None:
    mixed = tmp_path / "mixed.csv"
    write_grades(mixed, [csv_row("a", {"report": fake_report()}, "a" * 64),
                         csv_row("b", {"report": fake_report(gpu=None)}, "b" * 64)])
    (tmp_path / "no-id.csv").write_text("name,email\nJane,j@x\n")
    (tmp_path / "twice.csv").write_text("id,login\n1,jdoe\n2,JDoe\n")
    (tmp_path / "other.csv").write_text("id,name\n1,Someone Else\n")  # another class's roster: no one matches
    grades, roster = str(course / "grades.csv"), str(course / "roster.csv")
    cases = {
        "no such file": [str(tmp_path / "none.csv"), "--roster", roster, "--to", "canvas"],
        "not a grades CSV": [roster, "--roster", roster, "--to", "canvas"],
        "not one of canvas, moodle, nbgrader": [grades, "--roster", roster, "--to", "blackboard"],
        "no id column": [grades, "--roster", str(tmp_path / "no-id.csv"), "--to", "moodle"],
        "cannot read it": [grades, "--roster", str(tmp_path / "none.csv"), "--to", "moodle"],
        "login jdoe is given twice": [grades, "--roster", str(tmp_path / "twice.csv"), "--to", "moodle"],
        "different totals": [str(mixed), "--roster", roster, "--to", "canvas"],
        "--strict": [grades, "--roster", roster, "--to", "canvas", "--strict"],
        "nothing to export": [grades, "--roster", str(tmp_path / "twice.csv").replace("twice", "other"), "--to", "moodle"],
    }
    for said, argv in cases.items():
        assert main(["export", *argv, "--out", str(tmp_path / "out.csv")]) == 2, said
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "Traceback" not in err, (said, err)
    assert not (tmp_path / "out.csv").exists()
    assert main(["export", grades, "--roster", roster, "--to", "moodle", "--out", str(tmp_path / "no" / "x.csv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_export_command_writes_the_file_and_one_line_per_mismatch(course: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "grades-canvas.csv"
    assert main(["export", str(course / "grades.csv"), "--roster", str(course / "roster.csv"), "--to", "canvas",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["warning: no roster row for submission stray", "warning: no submission for roster row 5 (Nobody Here)"]
    assert out.read_text(encoding="utf-8").splitlines()[0] == "Student,ID,SIS User ID,SIS Login ID,Section,Attention kata"
    assert out.stat().st_mode & 0o077 == 0


def test_blind_grading_names_no_one_in_feedback_or_summary(tmp_path: Path, capsys, monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the summary's text without its plots: quicker
    names = {"Jane Doe_12345_assignsubmission_file_": 1.0, "doejohn_late_777_888_attention": None}
    key = tmp_path / "blind.key"
    blind = BlindIds.from_key_file(key)
    assert key.stat().st_mode & 0o077 == 0 and BlindIds.from_key_file(key) == blind  # made once, then kept
    summary = score_all(fake_class(tmp_path / "subs", names), tmp_path / "grades.csv",
                        fake_options(tmp_path, feedback_dir=tmp_path / "feedback", json_dir=tmp_path / "json",
                                     blind=blind))
    assert sorted(summary.graded + summary.errors) == sorted(names)  # one graded, one an error row
    assert sorted(read_grades(tmp_path / "grades.csv").rows) == sorted(names)  # the instructor's CSV keeps the folders
    merged = merge(tmp_path / "merged.csv", [tmp_path / "grades.csv"], blind=blind)  # a shard's summary too
    assert main(["feedback", str(tmp_path / "json"), "--feedback-dir", str(tmp_path / "again"), "--blind", str(key)]) == 0
    again = sorted((tmp_path / "again").iterdir())
    assert [path.name for path in again] == [f"{blind('Jane Doe_12345_assignsubmission_file_')}.md"]
    assert main(["rescore", str(tmp_path / "json"), "--csv", str(tmp_path / "grades.csv"),  # its summary replaces
                 "--feedback-dir", str(tmp_path / "rescored"), "--blind", str(key)]) == 0  # score-all's
    again += sorted((tmp_path / "rescored").iterdir())
    seen = {f"{path.parent.name}/{path.name}": path.read_text(encoding="utf-8")
            for path in summary.feedback + summary.outputs + merged.outputs + again}
    instructors = {name for name in seen if name.endswith(("-blind-ids.csv", "-similarity.md", "-similarity.csv"))}
    assert len(seen) - len(instructors) == 8  # 2 feedback files, the summary (md, html) of score-all and merge, 2 again
    assert not [name for name, text in seen.items() if "Similar submissions" in text and name not in instructors]
    assert sorted(p.name for p in summary.feedback) == sorted(f"{blind(n)}.md" for n in names)
    for name, text in seen.items():
        if name not in instructors:
            assert not [word for word in ("Jane", "Doe", "doejohn", "12345") if word in text], (name, text)
    assert {blind(n) for n in names} <= {word for text in seen.values() for word in text.replace("|", " ").split()}
    other = BlindIds.from_key_file(tmp_path / "other.key")
    assert {other(n) for n in names}.isdisjoint({blind(n) for n in names})  # another key, other ids
    capsys.readouterr()
    assert main(["score-all", str(tmp_path / "subs"), "--csv", str(tmp_path / "g.csv"), "--sandbox", "none",
                 "--blind", str(tmp_path / "nope" / "k")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_blind_summary_names_no_folder_in_the_flags(tmp_path: Path) -> None:
    """An error row's flag quotes its message, which names the submission's path: blinded as the message is."""
    name = "Jane Doe_12345_assignsubmission_file_"
    error = csv_row(name, {"error": f"/home/prof/term/{'x' * 90}/{name}: nothing that looks like a submission"},
                    "e" * 64)
    rows = with_flags({name: error}, lambda student: None)
    assert name[:10] in rows[name][FLAGS_COLUMN]
    blind = BlindIds.from_key_file(tmp_path / "blind.key")
    shown = blind_sheet(blind, ClassSheet(tmp_path / "grades.csv", rows))
    assert not [cell for row in shown.rows.values() for cell in row.values() if "Jane" in cell or "12345" in cell]
    assert shown.rows[blind(name)][FLAGS_COLUMN].startswith("not graded: ")


def test_github_classroom_roster_and_a_failed_grading_are_said(tmp_path: Path) -> None:
    (tmp_path / "roster.csv").write_text("identifier,github_username,github_id,name\n"
                                         "s-17,OctoCat,583231,Mona Lisa\ns-18,hubot,1,Hu Bot\n")
    write_grades(tmp_path / "grades.csv", [csv_row("kata-octocat", {"error": "grading took longer than 600 s"}, "c" * 64),
                                           csv_row("kata-hubot", {"report": fake_report()}, "d" * 64)])
    lines = export(tmp_path / "grades.csv", tmp_path / "roster.csv", tmp_path / "out.csv", ExportOptions(to="moodle"))
    assert lines == ["the grading of kata-octocat failed: exported with its score, 0"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text(encoding="utf-8"), newline="")))
    assert {row["Identifier"]: row["Grade"] for row in rows} == {"Participant s-17": "0",
                                                                 "Participant s-18": f"{fake_report()['score']:g}"}
