"""The text table ``score`` prints by default, rendered from the JSON report (grader/reports/json_report.py).

A table per group, the first failure of each exercise that lost points (or was re-graded) with its
diagnosis, the GPU-run check, the total. It is the instructor's: every message in full, whatever the
visibility; coloured only on a terminal (the command line decides).
"""

from __future__ import annotations

from typing import Any

from grader.reports.json_report import says_only_passed
from grader.rubric import GROUPS
from grader.safe_text import escape_controls as _safe

MESSAGE_LINES = 12  # lines of an exercise's message the table shows

_MARK = {"passed": "✓", "partial": "~", "failed": "✗"}
_COLOUR = {"passed": "\033[32m", "partial": "\033[33m", "failed": "\033[31m"}
_RESET, _BOLD = "\033[0m", "\033[1m"


def to_text(report: dict[str, Any], *, colour: bool) -> str:
    """The table of the JSON report ``report``; ANSI colours when ``colour``."""
    bold = (lambda text: f"{_BOLD}{text}{_RESET}") if colour else (lambda text: text)
    lines = [f"Grading {_safe(str(report['submission']))}"]
    lines.extend(f"warning: {_safe(w)}" for w in report["warnings"])
    lines.extend(f"FOR REVIEW: {_safe(line)}" for line in report.get("review", []))
    for group in GROUPS:
        lines += ["", bold(group)]
        lines += _exercise_lines(report, group, colour)
    lines += ["", *_gpu_lines(report["gpu_check"], colour), ""]
    lines.append(bold(f"Total: {report['score']:g} / {report['max_score']:g}   "
                      f"({report['execution_time']:.1f} s, isolation: {report['isolation']})"))
    return "\n".join(lines) + "\n"


def _paint(text: str, status: str, colour: bool) -> str:
    return f"{_COLOUR[status]}{text}{_RESET}" if colour else text


def _exercise_lines(report: dict[str, Any], group: str, colour: bool) -> list[str]:
    """The rows of ``group``'s exercises, each followed by its message unless it only says "passed"."""
    lines = []
    for ex_id, result in report["exercises"].items():
        if not ex_id.startswith(group + "/"):
            continue
        module = ex_id.split("/", 1)[1]
        mark = _paint(_MARK[result["status"]], result["status"], colour)
        lines.append(f"  {mark} {module:<22} {result['score']:6.2f} / {result['max_score']:g}")
        if not says_only_passed(result):
            lines += [f"      {line}" for line in _safe(str(result["message"])).splitlines()[:MESSAGE_LINES]]
    return lines


def _gpu_lines(gpu: dict[str, Any], colour: bool) -> list[str]:
    """The GPU-run check's row (``~`` when the run had none to score) and its message."""
    state = "passed" if gpu["max_score"] and gpu["score"] >= gpu["max_score"] else (
        "failed" if gpu["max_score"] else "partial")
    lines = [f"{_paint(_MARK[state], state, colour)} GPU-run check ({gpu['status']}, {_safe(str(gpu['device']))}) "
             f"{gpu['score']:6.2f} / {gpu['max_score']:g}"]
    lines += [f"      {line}" for line in _safe(str(gpu["message"])).splitlines()]  # one line per module
    return lines


def render(report: dict[str, Any], visibility: str, colour: bool) -> str:
    """``--format text`` (the default): the table, every message in full whatever the visibility."""
    return to_text(report, colour=colour)
