"""Who needs a look, and why: the ``flags`` of a row of the grades CSV, and the class summary's section
that lists them first.

A flag asks a person to look; it changes no grade. Each is read from what the grading recorded (the
student's JSON report, the row's cells), never from the student's code:

* ``library shortcut in <exercise>``: a hidden test counted nothing because an operation the exercise
  asks students to write ran inside it (grader/grading/scoring.py, ``charge_shortcuts``);
* ``timed out in <exercise>``: a call or a test ran out of time;
* ``N files left out``: a file of the submission was not graded (a stray file, a link, one too large);
* ``layout guessed: one script split into modules`` (grader/grading/script_split.py);
* ``for review``: code that could hide operations from the trace, or that told the simulated GPU apart;
* ``override applied``, ``late by N h`` and ``not graded: <why>``;

* ``public tests pass, hidden fail: <module>``: every public test of the module passed (run in the
  student's domain after the hidden tests, grader/grading/public_tests.py: the student's code could forge
  that, which is why it is a flag and never a grade) and a hidden test of its exercise failed;

and, in the summary only (it compares the class, after the CSV is written), ``similar to <student> in
<module>`` (grader/classroom/similarity_report.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from grader.classroom.grades_sheet import FLAGS_COLUMN, LATE_BY_COLUMN, OVERRIDES_COLUMN
from grader.grading.scoring import SHORTCUT_CHARGED

LEFT_OUT = (": left out (", ": skipped (")
SCRIPT_SPLIT = "one script, split by its top-level definitions"


def row_flags(row: Mapping[str, str], report: Mapping[str, Any] | None) -> list[str]:
    """The flags of one CSV row (plain text) and its student's JSON report (None: no report)."""
    flags: list[str] = []
    if row.get("status") == "error":
        flags.append(f"not graded: {row.get('message', '')[:120]}")
    if report is not None:
        tests = [t for t in report.get("tests", []) if isinstance(t, dict)]
        flags += _by_exercise("library shortcut in", tests, lambda out: out.startswith(SHORTCUT_CHARGED))
        flags += _by_exercise("timed out in", tests, lambda out: "timed out" in out)
        flags += _public_pass_hidden_fail(report.get("public_tests"), tests)
        warnings = [w for w in report.get("warnings", []) if isinstance(w, str)]
        left_out = sum(any(mark in w for mark in LEFT_OUT) for w in warnings)
        if left_out:
            flags.append(f"{left_out} file{'s' if left_out > 1 else ''} left out")
        if any(SCRIPT_SPLIT in w for w in warnings):
            flags.append("layout guessed: one script split into modules")
        if report.get("review"):
            flags.append("for review")
    if row.get(OVERRIDES_COLUMN):
        flags.append("override applied")
    if _number(row.get(LATE_BY_COLUMN, "")) > 0:
        flags.append(f"late by {row[LATE_BY_COLUMN]} h")
    return flags


def with_flags(rows: Mapping[str, Mapping[str, str]], report_of) -> dict[str, dict[str, str]]:
    """``rows`` with their ``flags`` cell filled (``report_of(student)``: their JSON report, or None)."""
    return {name: {**row, FLAGS_COLUMN: "; ".join(row_flags(row, report_of(name)))} for name, row in rows.items()}


def _number(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return 0.0


def _by_exercise(words: str, tests: list[dict[str, Any]], hit) -> list[str]:
    exercises = sorted({str(t.get("name", "")).split(": ", 1)[0] for t in tests
                        if t.get("status") != "passed" and hit(str(t.get("output", "")))})
    return [f"{words} {', '.join(exercises)}"] if exercises else []


def _public_pass_hidden_fail(public: Any, tests: list[dict[str, Any]]) -> list[str]:
    passed = {module for module, said in public.items() if said == "passed"} if isinstance(public, dict) else set()
    modules = sorted(passed & {str(t.get("name", "")).split(": ", 1)[0].rsplit("/", 1)[-1]
                               for t in tests if t.get("status") != "passed"})
    return [f"public tests pass, hidden fail: {', '.join(modules)}"] if modules else []
