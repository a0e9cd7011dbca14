"""Gradescope's ``results.json``, rendered from the JSON report (grader/reports/json_report.py).

Exactly the keys Gradescope's results.json specification accepts; how much of each hidden test's
message a test's ``output`` holds is the visibility's (grader/visibility.py), and the same failure in
several tests of an exercise is said once (grader/reports/repeats.py).
"""

from __future__ import annotations

from typing import Any

from grader.reports.sources import readable_sources
from grader.reports.json_report import dumps
from grader.reports.repeats import said_once
from grader.visibility import check_visibility, gpu_line, redact, status_words, wrap
from grader.safe_text import escape_controls as _safe


def to_gradescope(report: dict[str, Any], visibility: str = "full") -> dict[str, Any]:
    """Gradescope's results of the JSON report ``report``.

    ``visibility`` (full | messages | scores) decides how much of each hidden test's message its
    ``output`` holds (see grader.visibility.redact); every test is ``visible``: its name, score
    and status are the student's at once.
    """
    check_visibility(visibility)
    gpu = report["gpu_check"]
    summary = [f"{ex_id}: {r['score']:g}/{r['max_score']:g} ({status_words(r['status'])})"
               for ex_id, r in report["exercises"].items()]
    summary.append(f"GPU-run check: {gpu['score']:g}/{gpu['max_score']:g} ({status_words(gpu['status'])})")
    summary.extend(f"warning: {_safe(w)}" for w in report["warnings"])
    return {
        "score": report["score"],
        "execution_time": report["execution_time"],
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_test(entry, gpu, visibility, output) for entry, output in zip(report["tests"], _outputs(report, visibility))],
    }


def _outputs(report: dict[str, Any], visibility: str) -> list[str]:
    """Every test's output at ``visibility``; of an exercise's failing tests, each failure said once
    (grader/reports/repeats.py)."""
    outputs = [wrap(redact(readable_sources(_safe(str(e.get("output", "")))), visibility)) for e in report["tests"]]
    by_exercise: dict[str, list[int]] = {}
    for i, entry in enumerate(report["tests"]):
        if entry.get("status") == "failed" and ": " in str(entry["name"]):
            by_exercise.setdefault(str(entry["name"]).split(": ", 1)[0], []).append(i)
    for members in by_exercise.values():
        names = [_safe(readable_sources(str(report["tests"][i]["name"]).split(": ", 1)[1])) for i in members]
        for i, output in zip(members, said_once([(name, outputs[i]) for name, i in zip(names, members)])):
            outputs[i] = output
    return outputs


def _test(entry: dict[str, Any], gpu: dict[str, Any], visibility: str, output: str) -> dict[str, Any]:
    """One of the report's ``tests`` as Gradescope shows it; no ``output`` when there is nothing to show."""
    test = {**{k: v for k, v in entry.items() if k != "kind"}, "name": _safe(readable_sources(str(entry["name"]))),
            "visibility": "visible"}
    test["output"] = gpu_line(gpu, visibility) if test["name"] == "gpu_check" else output
    if not test["output"]:
        del test["output"]
    return test


def render(report: dict[str, Any], visibility: str, colour: bool) -> str:
    """``--format gradescope``: results.json at ``visibility``."""
    return dumps(to_gradescope(report, visibility))
