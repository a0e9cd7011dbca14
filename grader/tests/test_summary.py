"""grader.reports.class_summary: the class summary beside the CSV (counts, histogram, most-failed tests, no matplotlib)."""

from __future__ import annotations

import copy
import csv
import sys
from pathlib import Path

import pytest

from grader.classroom.grades_sheet import csv_columns, csv_row
from grader.reports.class_summary import NO_MATPLOTLIB, summarize_class, write_summary
from grader.rubric import load_rubric
from grader.tests.support import fake_report

MASK, DROP = "03_causal/causal_mask", "03_causal/attention_dropout"


def class_report(scores: dict[str, float], failing: list[str], gpu: float = 1.0) -> dict:
    """A student's JSON report: ``scores`` of some exercises (the others full), the tests ``failing``
    (one point each) and causal_mask's test_ok passed, ``gpu`` of the GPU-run check's points."""
    tests = [(name, 0.0, 1.0, "boom") for name in failing] + [(f"{MASK}: test_ok", 1.0, 1.0, "")]
    return fake_report(scores, tests, gpu=gpu)


@pytest.fixture
def graded(tmp_path: Path) -> tuple[Path, dict]:
    reports = {
        "alice": class_report({}, []),
        "bob": class_report({MASK: 4.0}, [f"{MASK}: test_values", f"{MASK}: test_printed"]),
        "=cmd|' /C calc'!A0": class_report({MASK: 0.0, DROP: 0.0}, [f"{MASK}: test_values"], gpu=0.0),
    }
    path = tmp_path / "grades.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=csv_columns())
        writer.writeheader()
        for student, report in reports.items():
            writer.writerow(csv_row(student, {"report": report}))
        writer.writerow(csv_row("<script>eve</script>", {"error": "-grading took longer than 600 s"}))
        writer.writerow(csv_row("carol", {"report": class_report({}, [])}))  # an earlier run: no report below
    return path, reports


def test_counts_from_the_csv_and_failures_from_the_reports(graded):
    path, reports = graded
    s = summarize_class(path, reports)
    assert sorted(s.totals) == ["=cmd|' /C calc'!A0", "alice", "bob", "carol"]  # the apostrophe undone
    assert s.errors == {"<script>eve</script>": "-grading took longer than 600 s"}
    mask = s.exercises[MASK]
    assert (mask.full, mask.partial, mask.none) == (2, 1, 1)
    assert (s.exercises[DROP].full, s.exercises[DROP].none) == (3, 1)
    assert (s.exercises["gpu_check"].full, s.exercises["gpu_check"].none) == (3, 1)
    # the GPU-run check's entry in a report's tests counts as one (a real report has it, last)
    assert s.failed_tests == [(f"{MASK}: test_values", 2), (f"{MASK}: test_printed", 1), ("gpu_check", 1)]
    top = load_rubric().max_score
    assert sum(count for _, _, count in s.bins) == 4 and s.bins[-1][1] == top
    assert s.bins[-1][2] == 3  # alice and carol (full marks: the last bin holds its top), bob (4 points less)


def test_both_files_beside_the_csv_escape_student_names(graded):
    path, reports = graded
    html_path, md_path = write_summary(path, reports)
    assert html_path == path.with_name("grades-summary.html") and md_path == path.with_name("grades-summary.md")
    page, md = html_path.read_text(), md_path.read_text()
    assert "<script>eve" not in page and "&lt;script&gt;eve" in page
    assert "| `03_causal/causal_mask` | 2 | 1 | 1 | 0 |" in md
    assert f"`{MASK}: test_values` | 2 |" in md
    assert page.count('src="data:image/png;base64,') == 2 and NO_MATPLOTLIB not in page


def test_without_matplotlib_both_files_say_so(graded, monkeypatch):
    path, reports = graded
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    html_path, md_path = write_summary(path, reports)
    assert "data:image/png" not in html_path.read_text() and NO_MATPLOTLIB in html_path.read_text()
    assert NO_MATPLOTLIB in md_path.read_text() and "## Exercises" in md_path.read_text()


def test_a_skipped_gpu_check_is_counted_as_skipped(tmp_path: Path):
    report = fake_report(gpu=None)
    path = tmp_path / "g.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=csv_columns())
        writer.writeheader()
        writer.writerow(csv_row("dan", {"report": copy.deepcopy(report)}))
    summary = summarize_class(path, {"dan": report})
    gpu = summary.exercises["gpu_check"]
    assert (gpu.skipped, gpu.none, gpu.full) == (1, 0, 0)
    rubric = load_rubric()
    assert summary.max_score == rubric.max_score - rubric.gpu_points and summary.bins[-1][1] == summary.max_score
