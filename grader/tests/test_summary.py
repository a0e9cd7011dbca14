"""grader.classroom.class_summary and class_numbers: the class summary beside the CSV (full, partial, wrong and
not started per exercise; the tests failed most among those who attempted them; the whole CSV after a
resume, with the reports of --json-dir; no absolute path; no matplotlib); and grader.classroom.class_outputs,
the extension point every class-level output is written through."""

from __future__ import annotations

import copy
import csv
import inspect
import json
import sys
from pathlib import Path

import pytest

from grader.authoring.stubs import CODE_STUB
from grader.classroom import class_outputs
from grader.classroom.grades_sheet import ClassSheet, csv_row, json_path, read_class, spreadsheet_text, write_grades
from grader.grading.gpu_check import DeviceRuns
from grader.classroom.class_numbers import (NOTHING_TO_RUN, not_started, summarize_class,
                                          without_absolute_paths)
from grader.classroom.class_summary import NO_MATPLOTLIB, write_summary
from grader.rubric import load_rubric
from support import fake_report

MASK, DROP = "03_causal/causal_mask", "03_causal/attention_dropout"
STUB_SAYS = "not written yet"  # what a stub says (grader/authoring/stubs.py: CODE_STUB)
STUB = f"NotImplementedError: causal_mask: {STUB_SAYS} -- see exercises/03_causal/README.md\n  (raised at x.py:3)"
NOT_COUNTED = "passed, but not counted: edge-case tests count in proportion to the core tests' points earned"
NO_GPU_RUN = f"no module can earn on the device here (each is not there or fails all its core tests): {NOTHING_TO_RUN}"


def report_of(scores: dict[str, float], tests: list[tuple[str, float, float, str, str]], gpu: float = 1.0,
              gpu_message: str = "") -> dict:
    """fake_report, with each test's ``(name, score, max_score, output, kind)``: its kind on its entry, and
    passed where grading says so of an edge test that passed but counts nothing (its output: NOT_COUNTED)."""
    report = fake_report(scores, [t[:4] for t in tests], gpu=gpu, gpu_message=gpu_message)
    for entry, (*_, output, kind) in zip(report["tests"], tests):
        entry["kind"] = kind
        if output.startswith("passed"):
            entry["status"] = "passed"
    return report


def write_csv(path: Path, rows: dict[str, dict]) -> Path:
    """A grades CSV of ``{student: job result}`` (a ``{"report": ...}`` or an ``{"error": ...}``)."""
    write_grades(path, [csv_row(student, copy.deepcopy(result), "0" * 64) for student, result in rows.items()])
    return path


OK = (f"{MASK}: test_ok", 1.0, 1.0, "", "core")


@pytest.fixture
def graded(tmp_path: Path) -> tuple[Path, dict, Path]:
    """A CSV of a resumed run: this run's reports, an earlier run's in the JSON folder, and three earlier
    students whose report is missing, not JSON, or of an older grading; an error row naming paths."""
    reports = {
        "alice": report_of({}, [OK]),
        "bob": report_of({MASK: 4.0}, [(f"{MASK}: test_values", 0.0, 1.5, "boom", "core"),
                                       (f"{MASK}: test_printed", 0.0, 0.25, "boom", "printed"),
                                       (f"{MASK}: test_edge", 0.0, 1.0, "boom", "edge"), OK]),
        # wrong: every core test fails, so its failing edge test cost nothing; its own NotImplementedError
        "=cmd|' /C calc'!A0": report_of({MASK: 0.0, DROP: 0.0}, [
            (f"{MASK}: test_values", 0.0, 1.5, "boom", "core"), (f"{MASK}: test_edge", 0.0, 1.0, "boom", "edge"),
            (f"{DROP}: test_p1", 0.0, 1.0, "NotImplementedError: p=1 is not supported", "core")], gpu=0.0,
            gpu_message="CausalAttention does not run on the device"),
        # not started: a stub (an edge test passed, counting nothing), a missing module, nothing for the GPU
        "stubby": report_of({MASK: 0.0, DROP: 0.0}, [
            (f"{MASK}: test_values", 0.0, 1.5, STUB, "core"), (f"{MASK}: test_buffer", 0.0, 0.4, NOT_COUNTED, "edge"),
            (f"{DROP}: test_p1", 0.0, 1.0, "ModuleNotFoundError: No module named 'attention_dropout'", "core")],
            gpu=0.0, gpu_message=NO_GPU_RUN),
    }
    earlier = {"carol": report_of({MASK: 4.0}, [(f"{MASK}: test_values", 0.0, 1.5, "boom", "core")]),
               "dave": report_of({MASK: 0.0}, []), "erin": report_of({}, []), "frank": report_of({MASK: 0.0}, [])}
    json_dir = tmp_path / "reports"
    json_dir.mkdir()
    json_path(json_dir, "carol").write_text(json.dumps(earlier["carol"]))
    json_path(json_dir, "erin").write_text("{not json")
    json_path(json_dir, "frank").write_text(json.dumps(report_of({}, [])))  # an older grading: full marks
    why = f"-nothing that looks like a submission in {tmp_path}/subs/eve, nor in /home/someone/eve.zip"
    path = write_csv(tmp_path / "grades.csv", {**{s: {"report": r} for s, r in {**reports, **earlier}.items()},
                                               "<script>eve</script>": {"error": why}})
    return path, reports, json_dir


def test_counts_cover_the_whole_csv_and_tell_wrong_from_not_started(graded):
    path, reports, json_dir = graded
    s = summarize_class(read_class(path, reports, json_dir))
    assert len(s.totals) == 8 and "=cmd|' /C calc'!A0" in s.totals  # the apostrophe undone
    assert s.errors == {"<script>eve</script>": "-nothing that looks like a submission in subs/eve, nor in eve.zip"}
    fields = ("full", "partial", "wrong", "not_started", "unreported")
    assert [getattr(s.exercises[MASK], f) for f in fields] == [2, 2, 1, 1, 2]  # alice erin, bob carol, cmd, stubby, dave frank
    assert [getattr(s.exercises[DROP], f) for f in fields] == [6, 0, 1, 1, 0]
    assert [getattr(s.exercises["gpu_check"], f) for f in fields] == [6, 0, 1, 1, 0]
    # among the 4 with a report who attempted it (stubby did not): carol's report comes from the JSON folder
    assert s.failed_tests == [(f"{MASK}: test_values", 3, 4), (f"{DROP}: test_p1", 1, 4), (f"{MASK}: test_edge", 1, 4),
                              (f"{MASK}: test_printed", 1, 4), ("gpu_check", 1, 4)]
    assert s.reports_read == 5 and len(s.notes) == 1 and "(3: missing" in s.notes[0]
    assert "dave, erin, frank." in s.notes[0]
    top = load_rubric().max_score
    assert sum(count for _, _, count in s.bins) == 8 and s.bins[-1][1] == top


def test_not_started_is_a_stub_or_a_missing_module_and_nothing_earned():
    def one(output: str, score: float = 0.0) -> dict:
        return fake_report({MASK: score}, [(f"{MASK}: test_a", 0.0, 1.0, STUB), (f"{MASK}: test_b", score, 1.0, output)])

    assert not_started(one(STUB), MASK)
    assert not_started(one("NotImplementedError: \n  (raised at causal_mask.py:9)"), MASK)  # nbgrader's stub
    assert not_started(one("ModuleNotFoundError: No module named 'causal_mask'"), MASK)
    assert not not_started(one("ModuleNotFoundError: No module named 'scipy'"), MASK)  # theirs: attempted
    assert not not_started(one("NotImplementedError: masks of type 'band' are not supported"), MASK)
    assert not not_started(one("AssertionError: wrong values"), MASK)
    assert not not_started(one("", score=1.0), MASK)  # a test that earned points
    assert not not_started(fake_report({MASK: 0.0}, [(f"{MASK}: test_a", 0.0, 1.0, STUB)]), DROP)  # no failed test
    assert not_started(fake_report(gpu=0.0, gpu_message=NO_GPU_RUN), "gpu_check")
    assert not not_started(fake_report(gpu=0.0, gpu_message="CausalAttention: mask on cpu"), "gpu_check")
    assert not not_started(fake_report(gpu=None, gpu_message=NO_GPU_RUN), "gpu_check")  # skipped: no points


def test_the_marks_read_are_what_the_stubs_and_the_gpu_check_say():
    """The stub's words and NOTHING_TO_RUN are other modules': a change there must show here."""
    assert STUB_SAYS in CODE_STUB
    assert f"): {NOTHING_TO_RUN}" in inspect.getsource(DeviceRuns.scored)


def test_messages_lose_absolute_paths_and_keep_the_rest(tmp_path: Path):
    folder = tmp_path / "course"
    text = (f"no zip in {folder}/subs/ann.zip: see https://x.org/a/b, 03_causal/causal_mask.py:3, "
            f"'/etc/passwd' and {folder}; score 0/100, -x /y")
    assert without_absolute_paths(text, folder) == ("no zip in subs/ann.zip: see https://x.org/a/b, "
                                                    "03_causal/causal_mask.py:3, 'passwd' and .; score 0/100, -x y")


def test_both_files_beside_the_csv_escape_names_and_name_no_path(graded):
    path, reports, json_dir = graded
    html_path, md_path = write_summary(read_class(path, reports, json_dir))
    assert html_path == path.with_name("grades-summary.html") and md_path == path.with_name("grades-summary.md")
    page, md = html_path.read_text(), md_path.read_text()
    assert "<script>eve" not in page and "&lt;script&gt;eve" in page
    assert "| exercise | full | partial | wrong | not started | no points, no report |" in md  # no skipped column
    assert "| `03_causal/causal_mask` | 2 | 2 | 1 | 1 | 2 |" in md
    assert f"| `{MASK}: test_values` | 3 | 4 |" in md
    assert md.count("dave, erin, frank") == 1 and page.count("dave, erin, frank") == 1
    assert str(path.parent) not in page + md and "/home/" not in page + md
    assert page.count('src="data:image/png;base64,') == 2 and NO_MATPLOTLIB not in page


def test_without_a_json_dir_earlier_students_are_counted_from_the_csv(graded):
    path, reports, _ = graded
    s = summarize_class(read_class(path, reports))
    assert s.reports_read == 4 and s.failed_tests[0] == (f"{MASK}: test_values", 2, 3)  # carol's is not read
    assert "without --json-dir" in s.notes[0] and "carol, dave, erin, frank." in s.notes[0]


def test_without_matplotlib_both_files_say_so(graded, monkeypatch):
    path, reports, json_dir = graded
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    html_path, md_path = write_summary(read_class(path, reports, json_dir))
    assert "data:image/png" not in html_path.read_text() and NO_MATPLOTLIB in html_path.read_text()
    assert NO_MATPLOTLIB in md_path.read_text() and "## Exercises" in md_path.read_text()


def test_a_skipped_gpu_check_is_counted_as_skipped(tmp_path: Path):
    report = fake_report(gpu=None)
    path = write_csv(tmp_path / "g.csv", {"dan": {"report": report}})
    summary = summarize_class(read_class(path, {"dan": report}))
    gpu = summary.exercises["gpu_check"]
    assert (gpu.skipped, gpu.wrong, gpu.not_started, gpu.full) == (1, 0, 0, 0) and not summary.notes
    rubric = load_rubric()
    assert summary.max_score == rubric.max_score - rubric.gpu_points and summary.bins[-1][1] == summary.max_score


def test_a_class_level_output_gets_plain_rows_and_writes_escaped_cells(tmp_path: Path, monkeypatch) -> None:
    """The extension point of docs/maintainers.md, "Add a class-level output", performed: a grade-upload
    output keyed by name gets each student's name and message as they are, and the spreadsheet it
    writes escapes each once (a name that is a formula stays text); one that fails is a warning, and
    the others are written all the same."""
    formula = '=HYPERLINK("http://evil","x")'
    path = write_csv(tmp_path / "grades.csv", {formula: {"error": "-1+2"}, "bob": {"report": fake_report()}})

    def upload(sheet: ClassSheet) -> list[Path]:
        out = sheet.csv_path.with_name("upload.csv")
        rows = [{"name": name, "points": row["score"], "note": row["message"]} for name, row in sheet.rows.items()]
        out.write_text(spreadsheet_text(["name", "points", "note"], rows))
        return [out]

    def broken(sheet: ClassSheet) -> list[Path]:
        raise RuntimeError("no network")

    monkeypatch.setattr(class_outputs, "CLASS_OUTPUTS", {"the broken output": broken, "the upload file": upload})
    warnings: list[str] = []
    written = class_outputs.write_class_outputs(path, {}, warnings)
    assert written == [tmp_path / "upload.csv"]
    assert warnings == ["the broken output failed: RuntimeError: no network"]
    with open(tmp_path / "upload.csv", newline="") as f:
        cells = {row["name"]: row for row in csv.DictReader(f)}
    assert cells["'" + formula] == {"name": "'" + formula, "points": "0", "note": "'-1+2"}  # escaped once
    assert cells["bob"]["note"] == "" and float(cells["bob"]["points"]) == fake_report()["score"]
    assert read_class(path).rows[formula]["message"] == "-1+2"  # the sheet's own cells read back plain
