"""The flag "public tests pass, hidden fail" (issue 39, Flags; grader/grading/public_tests.py): a mistake the
public tests miss is flagged, a correct module and a stub are not, in every isolating mode. The public tests
run where the student's code runs, so it can forge their answer, crash or hang them: each sets or clears
this one flag, and the grading and its scores stay what they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring import mutation
from grader.classroom.flags import row_flags
from grader.classroom.grades_sheet import csv_row
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.public_tests import FAILED, NOT_RUN, PASSED, verdict
from grader.reports.json_report import to_json
from grader.rubric import EXERCISES_DIR, load_rubric
from support import MODES, build_submission

pytestmark = pytest.mark.timeout(300)  # a grading, on a busy machine (the hang's own limit is a few seconds)

# The documents' printed scores pasted in: the public tests, on the documents' input, all pass; the hidden tests,
# on other inputs of that shape, fail. A mistake of the same group the public tests name (its cause), a stub,
# and a correct module of another group.
MISSED, CAUGHT = mutation.mutant("01_scores_hardcoded_printed"), mutation.mutant("02_normalize_by_sum_ignores_dim")
RUBRIC = load_rubric()
GROUP = [ex_id for ex_id in RUBRIC.exercises if ex_id.split("/")[0] == MISSED["exercise"].split("/")[0]]
STUB = next(ex_id for ex_id in GROUP if ex_id not in (MISSED["exercise"], CAUGHT["exercise"]))
CORRECT = next(ex_id for ex_id, ex in RUBRIC.exercises.items() if ex_id not in GROUP and not ex.depends_on)
MODULE = {ex_id: ex.module for ex_id, ex in RUBRIC.exercises.items()}
FLAG = "public tests pass, hidden fail: {}"

# Appended to the stub, imported first in its domain: the worker's public run replaced for every module.
ATTACKS = {
    "forged": "return {t: name == 'test_%s' for t in names}" % MODULE[CAUGHT["exercise"]],  # the caught one "passes"
    "crash": "import os; os._exit(3)",
    "hang": "import time; time.sleep(600)",
}
ATTACK = """
import ast as _ast, sys as _sys
def _run_file(name, text, torch):
    names = [n.name for n in _ast.parse(text).body if isinstance(n, _ast.FunctionDef) and n.name.startswith("test_")]
    {attack}
if "kata_worker.public_tests" in _sys.modules:
    _sys.modules["kata_worker.public_tests"].run_file = _run_file
"""


def _graded(root: Path, domains, attack: str | None = None) -> dict:
    """The JSON report of the four exercises graded (the rest of the submission is the solutions), ``attack``
    appended to the stub."""
    sub = build_submission("public_flag", root)
    for patch in (MISSED, CAUGHT):
        mutation.write_patched(patch, sub)
    stub = RUBRIC.exercises[STUB]
    text = (EXERCISES_DIR / stub.group / f"{stub.module}.py").read_text()
    (sub / f"{STUB}.py").write_text(text + ("" if attack is None else ATTACK.format(attack=ATTACKS[attack])))
    # call_timeout: a hang of the public run ends after twice that much of CPU, or WALL_FACTOR times that of wall
    options = GradeOptions(gpu="skip", exercises=(*GROUP, CORRECT), call_timeout=0.5)
    return to_json(grade(sub, options, domains))


def _flags(report: dict) -> list[str]:
    return row_flags(csv_row("ann", {"report": report}), report)


@pytest.fixture(scope="module", params=MODES)
def honest(request, templates, tmp_path_factory) -> tuple[str, dict]:
    """(mode, the report of the honest submission graded in it)."""
    return request.param, _graded(tmp_path_factory.mktemp("honest"), templates(request.param))


def test_a_mistake_the_public_tests_miss_is_flagged_a_stub_and_a_correct_module_are_not(honest) -> None:
    """In every mode, the isolating ones and none. Nor is a mistake the public tests catch."""
    report = honest[1]
    missed, caught = MISSED["exercise"], CAUGHT["exercise"]
    # The stub and the correct module failed no hidden test of their own making: their public tests never ran.
    assert report["public_tests"] == {MODULE[missed]: PASSED, MODULE[caught]: FAILED}
    scores = {ex_id: (e["score"], e["max_score"]) for ex_id, e in report["exercises"].items()}
    assert all(0 < scores[ex_id][0] < scores[ex_id][1] for ex_id in (missed, caught))  # the hidden tests catch both
    assert scores[STUB][0] == 0 and scores[CORRECT][0] == scores[CORRECT][1]
    assert _flags(report) == [FLAG.format(MODULE[missed])]


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_student_s_code_can_set_or_clear_this_flag_alone(attack, honest, templates, tmp_path) -> None:
    """Forged, the caught mistake's flag is set and the missed one's cleared; crashed or hung, the domain ends
    and nothing is flagged. The scores and the report's review list stay the honest grading's, in every mode."""
    mode, fair = honest
    report = _graded(tmp_path, templates(mode), attack)
    missed, caught = MODULE[MISSED["exercise"]], MODULE[CAUGHT["exercise"]]
    expected = {missed: FAILED, caught: PASSED} if attack == "forged" else {missed: NOT_RUN, caught: NOT_RUN}
    assert report["public_tests"] == expected
    assert _flags(report) == ([FLAG.format(caught)] if attack == "forged" else [])
    assert report["score"] == fair["score"] and report["exercises"] == fair["exercises"]
    assert report["review"] == fair["review"]


def test_a_verdict_needs_every_test_of_the_file_and_each_passed() -> None:
    """What the worker answers is plain data the grader judges: a test left out, a value that is not True, an
    answer that is not a dict is a failure (a forged answer can only set the flag the student could set anyway)."""
    names = ["test_a", "test_b"]
    assert verdict({"test_a": True, "test_b[0]": True, "test_b[1]": True}, names) == PASSED
    assert verdict({"test_a": True}, names) == FAILED
    assert verdict({"test_a": True, "test_b": 1}, names) == FAILED
    assert verdict([("test_a", True), ("test_b", True)], names) == FAILED
    assert verdict({}, []) == FAILED


def test_the_worker_runs_a_public_file_as_pytest_does() -> None:
    """The worker's runner (grader/sandbox/kata_worker/public_tests.py), run here on a file of our own: each test
    seeded, a parametrized one once per case, one that asks for a fixture failed (pytest would run it otherwise)."""
    import torch  # here, not at the top: the xdist controller imports this module and runs no test

    from grader.sandbox.kata_worker.public_tests import run_file

    text = """
import pytest, torch
def test_seeded():
    assert torch.rand(1).item() == torch.rand(1, generator=torch.Generator().manual_seed(0)).item()
def test_fails():
    raise SystemExit(0)
@pytest.mark.parametrize("p", [1.5, pytest.param(-1)])
def test_positive(p):
    assert p > 0
def test_fixture(tmp_path):
    pass
"""
    torch.manual_seed(1)
    assert run_file("test_toy", text, torch) == {"test_seeded": True, "test_fails": False, "test_positive[0]": True,
                                                 "test_positive[1]": False, "test_fixture": False}
