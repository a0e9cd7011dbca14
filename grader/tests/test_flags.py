"""Who needs a look, and why (issue 39, "Flags"): the grades CSV's ``flags`` column, written with the final
grades at the end of a run, and the class summary's "Needs a look" section at the top, which adds the pairs
of the similarity report. A flag changes no grade."""

from __future__ import annotations

from pathlib import Path

from grader.classroom.final_grades import Shown, finish
from grader.classroom.flags import row_flags
from grader.classroom.grades_sheet import (FLAGS_COLUMN, LATE_BY_COLUMN, OVERRIDES_COLUMN, csv_row, read_class,
                                           read_grades, write_grades)
from grader.classroom.class_summary import write_summary
from grader.grading.scoring import SHORTCUT_CHARGED
from grader.rubric import load_rubric
from support import fake_report

MASK, DROPOUT = "03_causal/causal_mask", "03_causal/attention_dropout"


def _flagged_report() -> dict:
    """A report with one of each case the grading records: a shortcut charged, a timeout, a stray file, one
    script split, a line for review."""
    tests = [(f"{DROPOUT}: test_dropout_p", 0.0, 1.0, f"{SHORTCUT_CHARGED}dropout ran dropout, which does ..."),
             (f"{MASK}: test_mask", 0.0, 1.0, "timed out after 5 s in causal_mask (at 03_causal/causal_mask.py:3)")]
    warnings = ["03_causal/notes.py: left out (not a module name: ...)",
                "hw.py: one script, split by its top-level definitions into causal_mask (line numbers ...)"]
    return fake_report(tests=tests, fraction=0.5, warnings=warnings, review=["the trace was turned off"])


def test_each_case_the_grading_recorded_is_a_flag() -> None:
    row = {**csv_row("ann", {"report": _flagged_report()}), OVERRIDES_COLUMN: "total 40 -> 42", LATE_BY_COLUMN: "16.5"}
    assert row_flags(row, _flagged_report()) == [
        f"library shortcut in {DROPOUT}", f"timed out in {MASK}", "1 file left out",
        "layout guessed: one script split into modules", "for review", "override applied", "late by 16.5 h"]
    clean = fake_report()
    assert row_flags(csv_row("bob", {"report": clean}), clean) == []
    error = csv_row("cy", {"error": "cy: nothing that looks like a submission"})
    assert row_flags(error, None) == ["not graded: cy: nothing that looks like a submission"]


def test_the_run_writes_the_flags_and_the_summary_lists_who_needs_a_look_first(tmp_path: Path) -> None:
    reports = {"ann": _flagged_report(), "bob": fake_report()}
    csv_path = tmp_path / "grades.csv"
    write_grades(csv_path, [csv_row(name, {"report": report}, "ab" * 32) for name, report in reports.items()])
    finish(csv_path, {}, None, "", Shown(reports=reports))
    rows = read_grades(csv_path).rows
    assert rows["ann"][FLAGS_COLUMN].startswith(f"library shortcut in {DROPOUT}; timed out in {MASK}")
    assert rows["bob"][FLAGS_COLUMN] == ""
    assert float(rows["ann"]["score"]) == reports["ann"]["score"]  # a flag changes no grade
    html, md = write_summary(read_class(csv_path, reports))
    text = md.read_text()
    look = text.index("## Needs a look")
    assert look < text.index("## Exercises") and "| ann | library shortcut in" in text and "| bob |" not in text
    assert "<h2>Needs a look</h2>" in html.read_text()
    finish(csv_path, {}, None, "", Shown(reports=reports))  # again: the same flags, not doubled
    assert read_grades(csv_path).rows == rows
    assert {MASK, DROPOUT} <= set(load_rubric().exercises)
