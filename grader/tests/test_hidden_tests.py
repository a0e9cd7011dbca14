"""CI proofs that the hidden tests (``tests/<group>/test_<module>.py``) grade what they should.

(a) every hidden test passes on the reference ``solutions/``, and every exercise has tests;
(b) every hidden test fails on the unfilled stubs in ``exercises/``;
(c) every exercise's tests reach no module but its own and those it depends on (rubric.json's
    ``depends_on``): they pass on an implementation where every other module is a tripwire that kills
    the process importing it. So a mistake in one module can only affect the tests of its exercise and
    of the exercises that depend on it (``hidden_runner.affected_by``);
(d) every mutant in ``tests/mutants/mutants.py`` (solutions with one realistic mistake) fails at least
    one test of its own exercise and no test of any other exercise (save the collateral exercises it
    declares, which must build on its exercise): by (c), running the tests of the exercises it can
    affect is running every test that could fail;
(e) that verdict can fail: two control mutants, a no-op and one that breaks an exercise it does not
    declare, run beside the real ones and must be judged wrong;
(f) the stand-ins a re-grade gives (tests/standins/) are not the answer where they stand for a class:
    they fail every core test of their own exercises; a function's stand-in (the result computed with the
    library) passes every test of its own exercise; and a correct dependent over them passes all its tests.

All the runs share one warm process with test_book_variants.py's (hidden_runner.proof_runs,
grader/authoring/forked_pytest.py): torch is imported once, each run is a forked child, two at a time.
"""

from __future__ import annotations

import re

import pytest

from grader.authoring import known_results, mutation
from grader.rubric import load_rubric
from support import patch_problems

try:
    from . import hidden_runner as hr
except ImportError:
    import hidden_runner as hr

MUTANTS = hr.MUTANTS
EXERCISES = load_rubric().exercises
MUTANT_KEYS = {*mutation.PATCH_KEYS, "mistake", "collateral", "cause", "also_named"}


def _summary(results: dict[str, hr.Outcome]) -> str:
    return "\n".join(f"{nodeid}: {o.status} {o.first_line}" for nodeid, o in results.items())


def _exercises(results: dict[str, hr.Outcome]) -> set[str]:
    return {o.exercise for o in results.values()}


def _assert_every_exercise_tested(results: dict[str, hr.Outcome]) -> None:
    untested = sorted(set(EXERCISES) - _exercises(results))
    assert not untested, f"exercises without any hidden test: {untested}"


def _completed(results):
    if isinstance(results, Exception):
        pytest.fail(str(results))
    return results


@pytest.fixture(scope="module")
def runs() -> dict:
    """Every run of (a)-(e): ``{run: {nodeid: Outcome} or the error}``."""
    return hr.proof_runs()[0]


@pytest.mark.timeout(300)
def test_the_known_results_of_the_hidden_tests_are_what_the_mutants_give():
    """tests/known_results.json (what the hidden tests' feedback names causes from) is what the mutants with a
    cause gave in these runs, but for float noise (grader/authoring/known_results.py writes it the same way)."""
    mutants = known_results.library((known_results.MUTANTS,))
    records = {run: hr.proof_runs()[1][run] for run in ["solutions", *(m["name"] for m in mutants)]}
    records[known_results.SOLVED] = records.pop("solutions")
    stale = known_results.mismatches(known_results.read(known_results.HIDDEN_DATA_FILE),
                                     known_results.known_results(records, mutants))
    assert not stale, "out of date: run python -m grader.authoring.known_results\n" + "\n".join(stale[:10])


@pytest.mark.timeout(300)
def test_hidden_tests_pass_on_solutions(runs):
    results = _completed(runs["solutions"])
    not_passed = {n: o for n, o in results.items() if not o.passed}
    assert not not_passed, f"hidden tests not passing on solutions/:\n{_summary(not_passed)}"
    _assert_every_exercise_tested(results)
    unknown = sorted(_exercises(results) - set(EXERCISES))
    assert not unknown, f"hidden tests mapped to no rubric exercise: {unknown}"


@pytest.mark.timeout(300)
def test_hidden_tests_fail_on_stubs(runs):
    assert hr.EXERCISES_DIR.is_dir(), "exercises/ (the stubs) does not exist"
    results = _completed(runs["stubs"])
    not_failed = {n: o for n, o in results.items() if o.status in ("passed", "skipped")}
    assert not not_failed, f"hidden tests that do not fail on the stubs in exercises/:\n{_summary(not_failed)}"
    _assert_every_exercise_tested(results)


@pytest.mark.timeout(300)
def test_standins_are_not_the_answer_and_carry_a_correct_dependent(runs):
    own = _completed(runs["standins alone"])  # the class stand-ins' core tests only
    assert hr.CLASS_STANDINS and _exercises(own) == set(hr.CLASS_STANDINS)
    assert {dep for ex in EXERCISES.values() for dep in ex.depends_on} <= set(hr.CLASS_STANDINS) | set(hr.FUNCTION_STANDINS)
    passed = {n: o for n, o in own.items() if o.passed}
    assert not passed, f"core tests a class's stand-in passes (it must not be the answer):\n{_summary(passed)}"
    dependents = _completed(runs["over standins"])  # the dependents, and the function stand-ins' own tests
    assert set(hr.FUNCTION_STANDINS) <= _exercises(dependents)
    not_passed = {n: o for n, o in dependents.items() if not o.passed}
    assert dependents and not not_passed, f"a correct dependent or a function's stand-in fails:\n{_summary(not_passed)}"


@pytest.mark.timeout(300)
def test_each_exercise_s_tests_reach_only_its_own_module_and_what_it_depends_on(runs):
    problems = []
    for ex_id in EXERCISES:
        results = runs[f"alone {ex_id}"]
        if isinstance(results, Exception):
            problems.append(f"{ex_id}: its tests reach a module outside {ex_id} and its depends_on "
                            f"(a tripwire fired, or the run failed):\n{results}")
            continue
        not_passed = {n: o for n, o in results.items() if not o.passed}
        if not_passed or _exercises(results) != {ex_id}:
            problems.append(f"{ex_id}, tested alone (exercises {sorted(_exercises(results))}):\n{_summary(not_passed)}")
    assert not problems, "\n".join(problems)


def test_mutant_suite_is_well_formed():
    assert len(MUTANTS) >= 18, f"only {len(MUTANTS)} mutants in {mutation.MUTANTS_FILE}"
    names = [m.get("name") for m in MUTANTS]
    assert len(names) == len(set(names)), f"duplicate mutant names: {sorted(n for n in names if names.count(n) > 1)}"
    problems = []
    for m in MUTANTS:
        unknown_keys = sorted(set(m) - MUTANT_KEYS)
        if unknown_keys:
            problems.append(f"{m.get('name')}: unknown keys {unknown_keys}")
        if not str(m.get("mistake", "")).strip():
            problems.append(f"{m.get('name')}: no mistake described")
        problems += patch_problems(m)
        for other in m.get("collateral", ()):
            if other == m["exercise"] or other not in load_rubric().affected_by(m["exercise"]):
                problems.append(f"{m['name']}: collateral {other!r} does not depend on {m['exercise']!r} in rubric.json")
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(300)
def test_every_mutant_is_caught_by_its_own_exercise_only(runs):
    report = []
    for m in MUTANTS:
        report.extend(f"{m['name']} [{m['exercise']}]: {p}" for p in hr.mutant_problems(m, runs[m["name"]]))
    assert not report, f"{len(report)} mutant problem(s):\n" + "\n".join(report)


@pytest.mark.timeout(300)
def test_the_mutant_verdict_rejects_a_no_op_and_undeclared_collateral_damage(runs):
    for name, (control, expected) in hr.CONTROLS.items():
        problems = hr.mutant_problems(control, runs[name])
        assert any(p.startswith(expected) for p in problems), (name, expected, problems)


def test_a_patch_whose_anchor_is_missing_or_ambiguous_fails_naming_it():
    source = "a = 1\nb = 1\n"
    assert mutation.apply(source, {"name": "m", "exercise": "x/y", "replace": "a = 1", "with": "a = 2"}) == "a = 2\nb = 1\n"
    for anchor, problem in (("c = 1", "is not found"), ("= 1", "occurs 2 times"), ("", "is not found")):
        with pytest.raises(mutation.PatchError, match=rf"^m: the anchor {re.escape(repr(anchor))} {problem}"):
            mutation.apply(source, {"name": "m", "exercise": "x/y", "replace": anchor, "with": "z"})
    with pytest.raises(mutation.PatchError, match="m: unknown exercise 'x/y'"):
        mutation.patched_source({"name": "m", "exercise": "x/y", "replace": "a", "with": "b"})


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mistake", hr.PREMISES_IN_THE_GRADE, ids=[m["name"] for m in hr.PREMISES_IN_THE_GRADE])
def test_the_grade_names_a_mistake_that_once_got_a_false_cause_and_never_says_the_false_one(runs, mistake):
    results = _completed(runs[mistake["name"]])
    failed = {nodeid: o.message for nodeid, o in results.items() if not o.passed}
    assert any(mistake["expect_message"] in m for m in failed.values()), _summary(results)
    said = sorted({(nodeid, words) for nodeid, m in failed.items() for words in mistake["not_said"] if words in m})
    assert not said, said
