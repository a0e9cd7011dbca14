"""Gradescope's ``results.json``, rendered from the JSON report (grader/reports/json_report.py).

Exactly the keys Gradescope's results.json specification accepts; how much of each hidden test's
message a test's ``output`` holds is the visibility's (grader/visibility.py).
"""

from __future__ import annotations

from typing import Any

from grader.reports.sources import readable_sources
from grader.reports.json_report import dumps
from grader.visibility import check_visibility, gpu_line, redact, wrap
from grader.safe_text import escape_controls as _safe


def to_gradescope(report: dict[str, Any], visibility: str = "full") -> dict[str, Any]:
    """Gradescope's results of the JSON report ``report``.

    ``visibility`` (full | messages | scores) decides how much of each hidden test's message its
    ``output`` holds (see grader.visibility.redact); every test is ``visible``: its name, score
    and status are the student's at once.
    """
    check_visibility(visibility)
    gpu = report["gpu_check"]
    summary = [f"{ex_id}: {r['score']:g}/{r['max_score']:g} ({r['status']})" for ex_id, r in report["exercises"].items()]
    summary.append(f"gpu_check: {gpu['score']:g}/{gpu['max_score']:g} ({gpu['status']})")
    summary.extend(f"warning: {_safe(w)}" for w in report["warnings"])
    return {
        "score": report["score"],
        "execution_time": report["execution_time"],
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_test(entry, gpu, visibility) for entry in report["tests"]],
    }


def _test(entry: dict[str, Any], gpu: dict[str, Any], visibility: str) -> dict[str, Any]:
    """One of the report's ``tests`` as Gradescope shows it; no ``output`` when there is nothing to show."""
    test = {**{k: v for k, v in entry.items() if k != "kind"}, "name": _safe(readable_sources(str(entry["name"]))),
            "visibility": "visible"}
    if test["name"] == "gpu_check":
        test["output"] = gpu_line(gpu, visibility)
    else:
        test["output"] = wrap(redact(readable_sources(_safe(str(entry.get("output", "")))), visibility))
    if not test["output"]:
        del test["output"]
    return test


def render(report: dict[str, Any], visibility: str, colour: bool) -> str:
    """``--format gradescope``: results.json at ``visibility``."""
    return dumps(to_gradescope(report, visibility))
