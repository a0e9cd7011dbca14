"""The public tests' verdict on a submission's modules: what the flag "public tests pass, hidden fail"
(grader/classroom/flags.py) is read from. It decides no points.

A student whose public tests all pass and who still loses points made a mistake the public tests do not
catch: a person should look (at the student's code, or at the public tests). The public tests
(``exercises/<group>/test_<module>.py``) and the check modules they import are the students' own, so they
may run in the student's domain: no reference code enters it. They run in the domain the hidden tests
already started, after everything there that decides points (the hidden tests, the GPU-run check's device
runs), one request per module, each with its own time limit (:data:`TIMEOUT_FACTOR` times the call
timeout); the worker runs them (grader/sandbox/kata_worker/public_tests.py) and sends back plain values,
``{test id: passed}``, and this module decides what they say.

Their pass or fail is computed where the student's code runs, so the student can forge it. The guide allows
no verdict there; this one is allowed because it changes no score: a forged answer, a crash or a hang sets or
clears this one flag for this student alone (a hang or a crash ends the domain, whose grading is done, and the
modules not run yet say :data:`NOT_RUN`). The public run never starts a domain, and what the worker reports
for review while it runs is dropped (the review list stays the hidden tests' and the GPU-run check's).

Cost: only a module that can be flagged runs its tests (its exercise failed a hidden test, none timed out,
it is no stub, its import was not refused): a submission that passes everything, or hands in the stubs, runs
none. A module that does run them costs its domain what its public tests cost a student (measured in a
domain beside the same grading without them: 50 ms for attention_scores, 0.5 s more for five modules with
a mistake each; their whole public files on the solutions take 3 s), so the run is on by default and
``--no-public-tests`` (``GradeOptions.public_tests``) leaves it out of a class that cannot spare it.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable
from typing import Any

from grader.rubric import EXERCISES_DIR, Rubric
from grader.sandbox.client import WorkerClient
from grader.grading.options import GradeOptions
from grader.grading.results import TestOutcome

PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"  # a module's verdict, as the JSON report keeps it
CHECK_MODULES = ("kata_mistakes", "kata_known", "kata_checks")  # what the public tests import, in import order
SHORTCUTS_TABLE = EXERCISES_DIR / "shortcuts.json"  # kata_trace reads it beside its own file
TIMEOUT_FACTOR = 2  # a module's public tests: this many call timeouts (of CPU time, as every call)


def candidates(rubric: Rubric, outcomes: Iterable[TestOutcome], scope: Collection[str] | None,
               refused: Collection[str] = ()) -> list[str]:
    """The modules that can be flagged, in the rubric's order: their exercise (in ``scope``, None: all) failed a
    hidden test and none timed out (that is a flag of its own, and a hang would only hang again), was started
    (a test passed, or one failed otherwise than with a stub's ``NotImplementedError``: a stub's public tests
    fail as well), their import is not ``refused``, and they have a public test file."""
    failed, timed_out, started = set(), set(), set()
    for outcome in outcomes:
        if not outcome.passed:
            failed.add(outcome.exercise)
            if "timed out" in outcome.message:
                timed_out.add(outcome.exercise)
        if outcome.passed or not outcome.message.lstrip().startswith("NotImplementedError"):
            started.add(outcome.exercise)
    return [ex.module for ex_id, ex in rubric.exercises.items()
            if ex_id in (failed & started) - timed_out and (scope is None or ex_id in scope)
            and ex.module not in refused and ex.public_test_file.is_file()]


def run_public_tests(worker: WorkerClient, rubric: Rubric, outcomes: list[TestOutcome], options: GradeOptions,
                     refused: Collection[str]) -> dict[str, str]:
    """The verdicts of the :func:`candidates` among ``outcomes`` (hidden tests' outcomes, before any re-grade),
    run in ``worker``'s domain; none under ``options.public_tests`` False (``--no-public-tests``)."""
    if not options.public_tests:
        return {}
    modules = candidates(rubric, outcomes, options.exercises, refused)
    return public_verdicts(worker, rubric, modules, options.call_timeout)


def public_verdicts(worker: WorkerClient, rubric: Rubric, modules: Iterable[str], timeout: float) -> dict[str, str]:
    """``{module: PASSED | FAILED | NOT_RUN}`` for ``modules``, run in ``worker``'s domain while it is alive."""
    review = set(worker.review)
    verdicts: dict[str, str] = {}
    tools_sent = False
    try:
        for module in modules:
            if worker.closed or worker._proc is None:  # ended (a hang, a crash): no domain is started for this
                verdicts[module] = NOT_RUN
                continue
            text = rubric.by_module[module].public_test_file.read_text(encoding="utf-8")
            request = {"op": "public_tests", "name": f"test_{module}", "text": text, **({} if tools_sent else _tools())}
            try:
                answer = worker.request(request, f"the public tests of {module}", TIMEOUT_FACTOR * timeout)
            except Exception:  # noqa: BLE001 - a WorkerFailure, or an error the worker sent back (its run broke)
                verdicts[module] = NOT_RUN
                continue
            tools_sent = True  # the domain holds them now
            verdicts[module] = verdict(answer, public_test_names(text))
    finally:
        worker.review.intersection_update(review)  # nothing of the public run is put up for review
    return verdicts


def verdict(answer: Any, names: Collection[str]) -> str:
    """PASSED when ``answer`` (the worker's ``{test id: passed}``) has every test of ``names`` (``test_x``, or
    ``test_x[0]``... for a parametrized one) and all passed; FAILED otherwise."""
    if type(answer) is not dict or not names:
        return FAILED
    ran = {str(test_id).split("[", 1)[0] for test_id in answer}
    return PASSED if set(names) <= ran and all(passed is True for passed in answer.values()) else FAILED


def public_test_names(text: str) -> list[str]:
    """The test functions a public test file defines at its top level (read with ``ast``, never run here)."""
    return [node.name for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def _tools() -> dict[str, Any]:
    return {"tools": [[name, (EXERCISES_DIR / f"{name}.py").read_text(encoding="utf-8")] for name in CHECK_MODULES],
            "table": SHORTCUTS_TABLE.read_text(encoding="utf-8")}
