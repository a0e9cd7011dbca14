"""CI proofs that the hidden tests (``tests/<group>/test_<module>.py``) grade what they should.

(a) every hidden test passes on the reference ``solutions/``, and every exercise has tests;
(b) every hidden test fails on the unfilled stubs in ``exercises/``;
(c) every mutant in ``tests/mutants/`` (solutions with one realistic mistake) fails at least one
    test of its own exercise and no test of any other exercise (save the collateral exercises it
    declares, which must build on its exercise per ``rubric.json``'s ``depends_on``).

The hidden tests run in subprocesses (``python -m pytest tests --impl DIR``), see hidden_runner.py.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

try:
    from . import hidden_runner as hr
except ImportError:
    import hidden_runner as hr

MUTANTS = hr.load_mutants()
RUBRIC = hr.load_rubric()["exercises"]
SOLUTION_REGION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION\n", re.S | re.M)

pytestmark = pytest.mark.slow  # python -m pytest -m 'not slow' leaves it out; CI runs it


def _summary(results: dict[str, hr.Outcome]) -> str:
    lines = [f"{nodeid}: {o.status} {o.message.splitlines()[0] if o.message else ''}" for nodeid, o in results.items()]
    return "\n".join(lines)


def _by_exercise(results: dict[str, hr.Outcome]) -> dict[str, list[hr.Outcome]]:
    grouped: dict[str, list[hr.Outcome]] = {}
    for o in results.values():
        grouped.setdefault(o.exercise, []).append(o)
    return grouped


@pytest.mark.timeout(600)
def test_hidden_tests_pass_on_solutions():
    results = hr.run_hidden_tests(hr.SOLUTIONS_DIR)
    not_passed = {n: o for n, o in results.items() if not o.passed}
    assert not not_passed, f"hidden tests not passing on solutions/:\n{_summary(not_passed)}"
    untested = sorted(set(RUBRIC) - set(_by_exercise(results)))
    assert not untested, f"exercises without any hidden test: {untested}"
    unknown = sorted(set(_by_exercise(results)) - set(RUBRIC))
    assert not unknown, f"hidden tests mapped to no rubric exercise: {unknown}"


@pytest.mark.timeout(600)
def test_hidden_tests_fail_on_stubs():
    assert hr.EXERCISES_DIR.is_dir(), "exercises/ (the stubs) does not exist"
    results = hr.run_hidden_tests(hr.EXERCISES_DIR)
    assert results, "no hidden test ran on exercises/"
    not_failed = {n: o for n, o in results.items() if o.status in ("passed", "skipped")}
    assert not not_failed, f"hidden tests that do not fail on the stubs in exercises/:\n{_summary(not_failed)}"
    untested = sorted(set(RUBRIC) - set(_by_exercise(results)))
    assert not untested, f"exercises without any hidden test: {untested}"


def test_mutant_suite_is_well_formed():
    assert len(MUTANTS) >= 18, f"only {len(MUTANTS)} mutants in tests/mutants/"
    problems = []
    for m in MUTANTS:
        group, module = m.exercise.split("/") if m.exercise in RUBRIC else ("?", "?")
        if m.exercise not in RUBRIC:
            problems.append(f"{m.name}: unknown exercise {m.exercise!r}")
            continue
        if not m.mistake.strip():
            problems.append(f"{m.name}: no mistake described")
        own_file = f"{group}/{module}.py"
        files = [p.as_posix() for p in m.files]
        if files != [own_file]:
            problems.append(f"{m.name}: overlays {files}, expected exactly [{own_file!r}]")
            continue
        mutant_src = (m.path / own_file).read_text()
        solution_src = (hr.SOLUTIONS_DIR / own_file).read_text()
        if mutant_src == solution_src:
            problems.append(f"{m.name}: identical to solutions/{own_file}")
        if SOLUTION_REGION.sub("", mutant_src) != SOLUTION_REGION.sub("", solution_src):
            problems.append(
                f"{m.name}: differs from solutions/{own_file} outside its ### BEGIN/END SOLUTION regions "
                "(stale copy? re-copy the reference and re-apply the one mistake)"
            )
        for other in m.collateral:
            if m.exercise not in RUBRIC.get(other, {}).get("depends_on", []):
                problems.append(
                    f"{m.name}: collateral {other!r} does not depend on {m.exercise!r} in rubric.json"
                )
        extra = sorted(p.name for p in m.path.iterdir() if p.name != "mutant.json" and p.name not in hr.GROUPS)
        if extra:
            problems.append(f"{m.name}: unexpected entries {extra}")
        meta = json.loads((m.path / "mutant.json").read_text())
        unknown_keys = sorted(set(meta) - {"exercise", "mistake", "collateral"})
        if unknown_keys:
            problems.append(f"{m.name}: unknown mutant.json keys {unknown_keys}")
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(600)
def test_every_mutant_is_caught_by_its_own_exercise_only():
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(hr.check_mutant, MUTANTS))
    report = []
    for m, (problems, _) in zip(MUTANTS, outcomes):
        report.extend(f"{m.name} [{m.exercise}]: {p}" for p in problems)
    assert not report, f"{len(report)} mutant problem(s):\n" + "\n".join(report)
