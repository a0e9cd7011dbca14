"""Transitional: the names grader/reports/report.py had before it was split by job, for the modules
not yet moved to the new ones (grader/cli.py, grader/tests/test_isolation.py and
test_untrusted_names_text_and_answers.py). Delete this file once none imports it.

The new homes: grader/reports/json_report.py (to_json, dumps), grader/reports/visibility.py
(VISIBILITIES, redact, wrap, gpu_line), grader/reports/text.py (to_text) and
grader/reports/gradescope.py (to_gradescope), which render the JSON report, not a GradeReport;
grader/reports/formats.py chooses one by its --format name.
"""

from __future__ import annotations

from typing import Any

from grader.grading.results import GradeReport
from grader.reports import gradescope, text
from grader.reports.json_report import dumps, to_json
from grader.reports.visibility import VISIBILITIES, gpu_line, redact, wrap

__all__ = ["VISIBILITIES", "dumps", "gpu_line", "redact", "to_gradescope", "to_json", "to_text", "wrap"]


def to_gradescope(report: GradeReport, visibility: str = "full") -> dict[str, Any]:
    """grader.reports.gradescope.to_gradescope of ``to_json(report)``."""
    return gradescope.to_gradescope(to_json(report), visibility)


def to_text(report: GradeReport, *, colour: bool) -> str:
    """grader.reports.text.to_text of ``to_json(report)``."""
    return text.to_text(to_json(report), colour=colour)
