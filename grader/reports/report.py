"""Reports of one grading: the JSON contract, Gradescope's results.json, and the text table.

The JSON report is a contract other tools read (score-all's CSV, the gradebook, Gradescope):
top-level ``score``, ``max_score``, ``execution_time``, ``isolation``, ``tests`` (Gradescope's
per-test fields), ``exercises`` (keyed by the 12 exercise ids) and ``gpu_check``.

Every text a student's code or files can put in a report (messages, outputs, warnings, the
submission's name) is passed through grader.safe_text here, in every format: no raw terminal escape,
control or bidi-override character reaches the instructor's terminal, a feedback file or Gradescope.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from grader.rubric import GROUPS
from grader.grading.results import GradeReport
from grader.safe_text import escape_controls as _safe

_MAX_OUTPUT = 2000


def _test_entries(report: GradeReport) -> list[dict[str, Any]]:
    entries = []
    for ex_id, result in report.exercises.items():
        if not result.outcomes:  # the exercise's tests never ran: one line says why
            entries.append(
                {"name": ex_id, "score": 0.0, "max_score": result.max_score, "status": "failed",
                 "output": _safe(result.message)[:_MAX_OUTPUT]}
            )
        for outcome in result.outcomes:
            test_name = outcome.nodeid.split("::", 1)[-1]
            entries.append(
                {
                    "name": _safe(f"{ex_id}: {test_name}"),
                    "score": round(outcome.points, 4),
                    "max_score": round(outcome.max_points, 4),
                    "status": "passed" if outcome.passed else "failed",
                    "output": _safe(outcome.message)[:_MAX_OUTPUT],
                }
            )
    gpu = report.gpu_check
    entries.append(
        {"name": "gpu_check", "score": gpu.score, "max_score": gpu.max_score,
         "status": "passed" if gpu.score >= gpu.max_score else "failed",
         "output": _safe(f"[{gpu.status}, {gpu.device}] {gpu.message}")}
    )
    return entries


def to_json(report: GradeReport) -> dict[str, Any]:
    """The grader's JSON report (a superset of Gradescope's fields)."""
    return {
        "submission": _safe(report.submission),
        "score": report.score,
        "max_score": report.max_score,
        "execution_time": round(report.execution_time, 3),
        "isolation": report.isolation,
        "warnings": [_safe(w) for w in report.warnings],
        "tests": _test_entries(report),
        "exercises": {
            ex_id: {
                "score": r.score,
                "max_score": r.max_score,
                "status": r.status,
                "message": _safe(r.message)[:_MAX_OUTPUT],
            }
            for ex_id, r in report.exercises.items()
        },
        "gpu_check": {
            "score": report.gpu_check.score,
            "max_score": report.gpu_check.max_score,
            "status": report.gpu_check.status,
            "device": _safe(report.gpu_check.device),
            "message": _safe(report.gpu_check.message),
        },
    }


# --- what students see: --visibility full | messages | scores -------------------------------------

VISIBILITIES = ("full", "messages", "scores")
WRAP_WIDTH = 100

_CALL_LINE = re.compile(r"\bcalled ([A-Za-z_][\w.]*)(?:\(.*)?:\s*$")
_DECIMAL = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?(?![\w.])")
_VALUES_ONLY = re.compile(r"^[\d\s.,+\-eE\[\]]*$")
_KEPT_LINE = "largest absolute difference"


def redact(text: str, visibility: str) -> str:
    """A hidden test's message as students may see it at ``visibility``.

    ``full``: unchanged. ``scores``: nothing (only scores and statuses are shown). ``messages``: the
    message without the hidden test's inputs and values:
      1. a ``called NAME(ARGS) [source]:`` line becomes ``called NAME(…):`` (which call, not its inputs);
      2. every bracketed list of numbers (a tensor's values, nested or cut with ``...``) becomes ``[…]``;
      3. every decimal number (``0.4921``, ``-1.5e-3``, ``inf`` is not one) becomes ``…``, except on the
         ``largest absolute difference ... (tolerance ...)`` line.
    Kept: shapes, dtypes, whole numbers (counts, sizes), ``likely cause:`` lines, and the text of
    errors the student's own code raised.
    """
    if visibility == "full":
        return text
    if visibility == "scores":
        return ""
    if visibility != "messages":
        raise ValueError(f"unknown visibility {visibility!r} (expected one of {', '.join(VISIBILITIES)})")
    lines = []
    for line in text.splitlines():
        line = _CALL_LINE.sub(lambda m: f"called {m.group(1)}(…):", line)
        line = _redact_value_lists(line)
        if _KEPT_LINE not in line:
            line = _DECIMAL.sub("…", line)
        lines.append(line)
    return "\n".join(lines)


def _redact_value_lists(line: str) -> str:
    """Every outermost ``[...]`` that holds only numbers (``inf``, ``nan``, ``...`` included) -> ``[…]``."""
    out, i = [], 0
    while i < len(line):
        if line[i] != "[":
            out.append(line[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(line):
            depth += {"[": 1, "]": -1}.get(line[j], 0)
            if depth == 0:
                break
            j += 1
        inner = line[i + 1:j]
        numbers = re.sub(r"\b(?:inf|nan|-inf)\b|\.\.\.|…", "0", inner)
        if j < len(line) and inner.strip() and _VALUES_ONLY.match(numbers) and re.search(r"\d", numbers):
            out.append("[…]")
            i = j + 1
        else:
            out.append("[")
            i += 1
    return "".join(out)


def wrap(text: str, width: int = WRAP_WIDTH) -> str:
    """Long lines (a tensor's values) wrapped at spaces, continued with the line's indent + 4 spaces."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + "    ",
                                   break_long_words=True, break_on_hyphens=False, drop_whitespace=True)
                     if line.strip() else [line])
    return "\n".join(lines)


def gpu_line(gpu: dict[str, Any], visibility: str) -> str:
    """The GPU-run check in one line, from the JSON report's ``gpu_check``."""
    head = f"GPU-run check: {gpu['score']:g} / {gpu['max_score']:g} ({gpu['status']}"
    if visibility == "scores":
        return head + ")"
    message = redact(_safe(str(gpu.get("message", ""))), visibility)
    return f"{head}, {_safe(str(gpu.get('device', 'unknown')))})" + (f": {message}" if message else "")


def to_gradescope(report: GradeReport, visibility: str = "full") -> dict[str, Any]:
    """Exactly the keys Gradescope's ``results.json`` specification accepts.

    ``visibility`` (full | messages | scores) decides how much of each hidden test's message its
    ``output`` holds (see :func:`redact`); every test is ``visible``: its name, score and status
    are the student's at once.
    """
    if visibility not in VISIBILITIES:
        raise ValueError(f"unknown visibility {visibility!r}")
    summary = [f"{ex_id}: {r.score:g}/{r.max_score:g} ({r.status})" for ex_id, r in report.exercises.items()]
    summary.append(f"gpu_check: {report.gpu_check.score:g}/{report.gpu_check.max_score:g} ({report.gpu_check.status})")
    summary.extend(f"warning: {_safe(w)}" for w in report.warnings)
    tests = []
    for entry in _test_entries(report):
        entry = {**entry, "visibility": "visible"}
        if entry["name"] == "gpu_check":
            gpu = to_json(report)["gpu_check"]
            entry["output"] = gpu_line(gpu, visibility)
        else:
            entry["output"] = wrap(redact(entry["output"], visibility))  # made safe in _test_entries
        if not entry["output"]:
            del entry["output"]
        tests.append(entry)
    return {
        "score": report.score,
        "execution_time": round(report.execution_time, 3),
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_MARK = {"passed": "✓", "partial": "~", "failed": "✗"}
_COLOUR = {"passed": "\033[32m", "partial": "\033[33m", "failed": "\033[31m"}
_RESET, _BOLD = "\033[0m", "\033[1m"


def to_text(report: GradeReport, *, colour: bool) -> str:
    """A table per group, the first failure of each exercise with its diagnosis, the total."""

    def paint(text: str, status: str) -> str:
        return f"{_COLOUR[status]}{text}{_RESET}" if colour else text

    lines = [f"Grading {_safe(report.submission)}"]
    lines.extend(f"warning: {_safe(w)}" for w in report.warnings)
    for group in GROUPS:
        lines.append("")
        lines.append(f"{_BOLD}{group}{_RESET}" if colour else group)
        for ex_id, result in report.exercises.items():
            if not ex_id.startswith(group + "/"):
                continue
            module = ex_id.split("/", 1)[1]
            mark = paint(_MARK[result.status], result.status)
            lines.append(f"  {mark} {module:<22} {result.score:6.2f} / {result.max_score:g}")
            if result.status != "passed" or result.regraded_with:
                for text_line in _safe(result.message).splitlines()[:12]:
                    lines.append(f"      {text_line}")
    gpu = report.gpu_check
    gpu_state = "passed" if gpu.max_score and gpu.score >= gpu.max_score else ("failed" if gpu.max_score else "partial")
    lines.append("")
    lines.append(
        f"{paint(_MARK[gpu_state], gpu_state)} GPU-run check ({gpu.status}, {_safe(gpu.device)}) "
        f"{gpu.score:6.2f} / {gpu.max_score:g}"
    )
    if gpu.message:
        lines.append(f"      {_safe(gpu.message)}")
    lines.append("")
    total = f"Total: {report.score:g} / {report.max_score:g}   ({report.execution_time:.1f} s, isolation: {report.isolation})"
    lines.append(f"{_BOLD}{total}{_RESET}" if colour else total)
    return "\n".join(lines) + "\n"
