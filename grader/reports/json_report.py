"""The JSON report: the one shape of a grading's report, which every other format renders.

``to_json(GradeReport)`` makes it; the text table (grader/reports/text.py), Gradescope's results.json
(grader/reports/gradescope.py), the feedback files, the nbgrader feedback page and the class summary
all render from it, so a report read back from a file (``score-all --json-dir``) renders as a fresh one.
It is a contract other tools read too (score-all's CSV, the gradebook, Gradescope), documented in
docs/grading.md ("The JSON report"): top-level ``submission``, ``score``, ``max_score``, ``execution_time``,
``isolation``, ``warnings``, ``review`` (what could hide operations from the from-scratch rule's trace,
or told the simulated GPU from CUDA: a person's to judge), ``public_tests`` (``{module: "passed" | "failed" | "not run"}``
for the modules whose public tests ran, grader/grading/public_tests.py: a flag's, never a grade), ``tests`` (Gradescope's per-test fields: ``name``, ``score``, ``max_score``,
``status``, ``output``; the GPU-run check last, named ``gpu_check``), ``exercises`` (keyed by the
rubric's exercise ids: ``score``, ``max_score``, ``status``, ``message``) and ``gpu_check`` (``score``,
``max_score``, ``status``, ``device``, ``message``).

Every text a student's code or files can put in a report (messages, outputs, warnings, the
submission's name) is passed through grader.safe_text here, and again by every renderer (a report
read from a file may come from elsewhere): no raw terminal escape, control or bidi-override character
reaches the instructor's terminal, a feedback file or Gradescope.
"""

from __future__ import annotations

import json
import re
from typing import Any, Collection

from grader.authoring.stubs import CODE_STUB, PLACEHOLDER, SECTION_PLACEHOLDER
from grader.grading.results import GradeReport
from grader.safe_text import escape_controls as _safe

MAX_OUTPUT = 2000  # characters of one message or output the report keeps


def _test_entries(report: GradeReport) -> list[dict[str, Any]]:
    entries = []
    for ex_id, result in report.exercises.items():
        if not result.outcomes:  # the exercise's tests never ran: one line says why
            entries.append(
                {"name": ex_id, "score": 0.0, "max_score": result.max_score, "status": "failed",
                 "output": _safe(result.message)[:MAX_OUTPUT], "kind": "core"}
            )
        for outcome in result.outcomes:
            test_name = outcome.nodeid.split("::", 1)[-1]
            entries.append(
                {
                    "name": _safe(f"{ex_id}: {test_name}"),
                    "score": round(outcome.points, 4),
                    "max_score": round(outcome.max_points, 4),
                    "status": "passed" if outcome.passed else "failed",
                    "kind": outcome.kind,  # core | printed | edge (tests/conftest.py): the summary counts by it
                    "output": _safe(outcome.message)[:MAX_OUTPUT],
                }
            )
    gpu = report.gpu_check
    entries.append(
        {"name": "gpu_check", "score": gpu.score, "max_score": gpu.max_score,
         "status": "passed" if gpu.score >= gpu.max_score else "failed",
         "output": _safe(f"[{gpu.status}, {gpu.device}] {gpu.message}"), "kind": "gpu_check"}
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
        "review": [_safe(line) for line in report.review],  # for a person to judge, never a grade (docs/grading.md)
        "public_tests": dict(report.public_tests),  # computed where the student's code ran: a flag's, never a grade
        "tests": _test_entries(report),
        "exercises": {
            ex_id: {
                "score": r.score,
                "max_score": r.max_score,
                "status": r.status,
                "message": _safe(r.message)[:MAX_OUTPUT],
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


def says_only_passed(exercise: dict[str, Any]) -> bool:
    """An exercise of the report that passed and whose message says nothing more ("all 6 tests
    passed"). A re-graded exercise that passed says over which stand-in (grader/grading/scoring.py),
    so the text table and the feedback show its message."""
    return exercise["status"] == "passed" and str(exercise.get("message", "")).startswith("all ")


# A hidden test's output when the student's code raised a stub's own NotImplementedError (the message the
# stub generator writes, grader/authoring/stubs.py: its README section names the stub's module), or nbgrader's
# bare one; and when a kata module was not handed in.
_STUB_RAISE = re.escape(re.search(r'raise NotImplementedError\("(.*)"\)', CODE_STUB).group(1))
_STUB_ERROR = re.compile("NotImplementedError: " + _STUB_RAISE.replace(PLACEHOLDER, r"[\w.]+").replace(
    SECTION_PLACEHOLDER, r"(?P<section>[^\n]*)") + r"(?:\n|$)")
_BARE_STUB = re.compile(r"NotImplementedError:?\s*(?:\n|$)")
_MISSING = re.compile(r"ModuleNotFoundError: No module named '(\w+)'(?:\n|$)")


def stopped_at(ex_id: str, tests: list[dict[str, Any]], kata_modules: Collection[str]) -> tuple[set[str], set[str]] | None:
    """Not started: ``(stubs, missing)``, the kata modules whose stub every failed test of exercise ``ex_id``
    (``tests``: its entries of the report) stopped at, and those not handed in, when it earned nothing and
    every failed test stopped so; else None. One definition for the feedback and the class summary.

    A test that passed and earned nothing is no sign of work (an edge test of code whose core tests all
    fail passes so). The module may be another one the exercise builds on (weight_transfer's tests build
    a SelfAttention_v2 first)."""
    module = ex_id.rsplit("/", 1)[-1]
    failed = [t for t in tests if t.get("status") == "failed"]
    if not failed or any(t.get("score") for t in tests):
        return None
    stubs, missing = set(), set()
    for test in failed:
        output = str(test.get("output", "")).lstrip()
        raised, absent = _STUB_ERROR.match(output), _MISSING.match(output)
        if raised is not None:
            named = re.search(r"'(\w+)'", raised.group("section"))  # "exercises/03_causal/README.md, section 'causal_mask'"
            stubs.add(named.group(1) if named else module)
        elif _BARE_STUB.match(output):
            stubs.add(module)
        elif absent is not None and absent.group(1) in kata_modules:
            missing.add(absent.group(1))
        else:
            return None
    return stubs, missing


def dumps(data: dict[str, Any]) -> str:
    """A report as the files and the command line write it: indented, UTF-8 kept, a final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render(report: dict[str, Any], visibility: str, colour: bool) -> str:
    """``--format json``: the whole report, whatever the visibility (it is the instructor's)."""
    return dumps(report)
