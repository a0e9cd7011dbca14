"""The public tests (``exercises/<group>/test_<module>.py``) catch the mistakes students make, and say which.

* every mistake in ``tests/mutants/student_mistakes.py`` (a small patch to one reference solution, the
  format of grader/authoring/mutation.py) fails the public test it names, with a message that names the mistake,
  and no failing test says its ``not_said`` words (a false cause once printed for it);
* every known mistake of the library (those two files' entries with a ``cause``, the mutants among them)
  fails a public test whose "likely cause:" line names it, and no run of any library mistake shows a
  "likely cause:" line that is not its own; ``exercises/known_results.json`` is what the library gives
  (grader/authoring/known_results.py);
* one public test file per exercise module, every test named after its module, so that
  ``pytest exercises -k <module>`` selects exactly that module's tests;
* the shared checks (``exercises/kata_*.py``) and the public tests quote no solution line;
* the ``>>>`` examples in the solutions' docstrings run (``pytest --doctest-modules solutions``, with the
  documents' tensors from ``solutions/conftest.py``).

The mistakes and the doctests run in one warm process, each in a forked child (public_runner.py).
That every public test fails on the stubs and passes on the solutions is proved in test_exercises.py.
"""

from __future__ import annotations

import ast

import pytest

from grader.authoring import known_results, mutation
from grader.rubric import REPO_ROOT, load_rubric

try:
    from . import public_runner as pr
except ImportError:
    import public_runner as pr

MISTAKES = pr.MISTAKES
LIBRARY = pr.library()
EXERCISE_IDS = list(load_rubric().exercises)
MODULES = [ex.module for ex in load_rubric().exercises.values()]


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, tuple[str, str]]]:
    """Every mistake's run, by test name (``{mistake: {test name: (status, message)}}``), and the doctests'."""
    return {run: {nodeid.split("::")[-1] if run != pr.DOCTESTS else nodeid: outcome for nodeid, outcome in tests.items()}
            for run, tests in pr.public_runs().items()}


def test_every_mistake_patch_applies_to_exactly_one_place():
    names = [m["name"] for m in MISTAKES]
    assert len(names) == len(set(names)) and len(MISTAKES) >= 15, names
    for m in MISTAKES:
        assert mutation.patched_source(m) != mutation.reference_source(m), f"{m['name']}: the patch changes nothing"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mistake", MISTAKES, ids=[m["name"] for m in MISTAKES])
def test_public_tests_catch_the_mistake_and_name_it(runs, mistake):
    results = runs[mistake["name"]]
    assert "__error__" not in results, results.get("__error__")
    status, message = results.get(mistake["expect_test"], ["not run", ""])
    assert status == "failed", (
        f"{mistake['expect_test']} did not fail ({status}) with the mistake {mistake['name']!r}; "
        f"ran: {sorted(results)}"
    )
    assert mistake["expect_message"] in message, (
        f"{mistake['expect_test']} failed, but its message does not name the mistake "
        f"({mistake['expect_message']!r}):\n{message[:2000]}"
    )
    for prefix in mistake.get("expect_passed", []):
        chosen = {name: status for name, (status, _) in results.items() if name.startswith(prefix)}
        assert chosen and all(s == "passed" for s in chosen.values()), (prefix, chosen)
    said = {(test, words) for words in mistake.get("not_said", []) for test, (status, message) in results.items()
            if status == "failed" and words in message}
    assert not said, f"{mistake['name']}: a failing test says what is false for it: {sorted(said)}"
    assert not any(w in n for w in mistake.get("not_said", []) for n in known_results.named_words(mistake)), \
        "not_said contradicts its cause"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("patch", LIBRARY, ids=[p["name"] for p in LIBRARY])
def test_every_library_mistake_fails_a_public_test_that_names_it_and_no_other(runs, patch):
    results = runs[patch["name"]]
    assert "__error__" not in results, results.get("__error__")
    causes, named = known_results.likely_causes(results.values()), known_results.named_words(patch)
    assert any(n in c for c in causes for n in named), (
        f"no 'likely cause:' line names {patch['name']} ({named}); the failing tests said: "
        f"{ {t: m[-600:] for t, (st, m) in results.items() if st == 'failed'} }")
    wrong = [c for c in causes if not any(n in c for n in named)]
    assert not wrong, f"{patch['name']} is told a cause that is not its own: {wrong}"


@pytest.mark.timeout(180)
def test_the_known_results_are_what_the_library_gives(runs):
    """exercises/known_results.json is what the runs above recorded, but for float noise (so a student is told
    a cause only where this library's mistake reproduces their result, on any CPU), and holds no code."""
    assert all("__error__" not in runs[p["name"]] for p in LIBRARY)
    data = known_results.known_results(pr.recorded(), [p for p in LIBRARY if p.get("cause")])
    text = known_results.DATA_FILE.read_text(encoding="utf-8")
    stale = known_results.mismatches(known_results.read(known_results.DATA_FILE), data)
    assert not stale, "out of date: run python -m grader.authoring.known_results\n" + "\n".join(stale[:10])
    assert not any(p["with"].strip() in text for p in LIBRARY if len(p["with"].strip()) > 25)


def test_a_known_result_that_is_nan_everywhere_is_not_kept():
    """NaN alone names no mistake (any mistake that gives NaN there gives it): such a result is not kept."""
    def rec(key: str, *values) -> dict:
        return {"key": key, "got": {"dtype": "torch.float32", "shape": [len(values)], "values": list(values)}}
    records = {known_results.SOLVED: [rec("a", 0.5, 0.5), rec("b", 0.5, 0.5)],
               "m": [rec("a", "nan", "nan"), rec("b", "nan", 1.0)]}
    data = known_results.known_results(records, [{"name": "m", "cause": "a cause in words"}])
    assert list(data) == ["b"] and data["b"][0]["cause"] == "a cause in words"


def test_one_public_test_file_per_module_and_every_test_named_after_its_module():
    found = set(pr.EXERCISES_DIR.glob("*/test_*.py"))
    expected = {pr.public_test_file(ex_id) for ex_id in EXERCISE_IDS}
    assert found == expected, f"extra {sorted(found - expected)}, missing {sorted(expected - found)}"
    for ex_id in EXERCISE_IDS:
        module = load_rubric().exercises[ex_id].module
        path = pr.public_test_file(ex_id)
        tree = ast.parse(path.read_text())
        tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        assert len(tests) >= 2, (path, tests)
        for name in tests:
            assert name.startswith(f"test_{module}_") or name == f"test_{module}", (path.name, name)
            # `pytest exercises -k <other>` must not pick this test up
            others = [o for o in MODULES if o != module and o in name]
            assert not others, (path.name, name, others)
        # The module under test is loaded inside the tests (kata_checks.load), never at import time:
        # a syntax error in one module fails only that module's tests.
        imported = {a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
        assert not imported & set(MODULES), (path.name, imported & set(MODULES))


def _solution_lines() -> dict[str, str]:
    """The non-trivial lines (stripped, over 25 characters) of every solution region: {line: file}."""
    lines: dict[str, str] = {}
    for ex_id in EXERCISE_IDS:
        inside = False
        for line in load_rubric().exercises[ex_id].reference_file.read_text().splitlines():
            stripped = line.strip()
            if stripped in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = stripped == "### BEGIN SOLUTION"
            elif inside and len(stripped) > 25:
                lines[stripped] = ex_id
    return lines


def test_shared_checks_and_public_tests_quote_no_solution_line():
    forbidden = _solution_lines()
    assert len(forbidden) > 40
    files = [*sorted((REPO_ROOT / "exercises").glob("kata_*.py")), REPO_ROOT / "exercises" / "conftest.py",
             *sorted((REPO_ROOT / "exercises").glob("*/test_*.py"))]
    leaks = [f"{p.relative_to(REPO_ROOT)}: {line!r} ({ex_id})" for p in files for line, ex_id in forbidden.items()
             if line in p.read_text()]
    assert not leaks, "\n".join(leaks)


@pytest.mark.timeout(180)
def test_solution_docstring_examples_run_as_doctests(runs):
    results = runs[pr.DOCTESTS]
    assert "__error__" not in results, results.get("__error__")
    not_passed = {nodeid: message[-2000:] for nodeid, (status, message) in results.items() if status != "passed"}
    assert not not_passed, not_passed
    assert len(results) >= 20, sorted(results)  # every exercise's functions and classes carry an example


# Raw errors students meet, each a library mistake whose run must say it in the short format: the chapter's own
# head_dim = d_out (a .view's RuntimeError), a weight's dimensions swapped (mat1 and mat2 shapes cannot be
# multiplied), a .view of a transposed tensor without .contiguous().
RAW_ERRORS = {"multihead_attention_head_dim_d_out": "RuntimeError: shape",
              "self_attention_v2_linear_d_in_d_out_swapped": "RuntimeError: mat1 and mat2 shapes cannot be multiplied",
              "multihead_attention_view_without_contiguous": "RuntimeError: view size is not compatible"}
FRAMES = ("site-packages", "dist-packages", "_pytest", "pluggy", "torch/nn/", "torch/_", "Traceback (most recent call last)")


@pytest.mark.timeout(180)
def test_no_failing_public_test_says_more_than_20_lines_or_shows_a_frame_of_torch_or_pytest(runs):
    """Over the stubs and every library mistake: each failure in the short format (exercises/kata_report.py),
    the raw errors above among them, each with its type and its text."""
    failed = {(run, test): message for run, tests in runs.items() if run != pr.DOCTESTS and "__error__" not in tests
              for test, (status, message) in tests.items() if status == "failed"}
    assert len(failed) >= len(LIBRARY) and any(run == known_results.STUBS for run, _ in failed)
    long = {key: len(message.splitlines()) for key, message in failed.items() if len(message.splitlines()) > 20}
    assert not long, long
    frames = {key: message for key, message in failed.items() if any(f in message for f in FRAMES)}
    assert not frames, frames
    for mistake, error in RAW_ERRORS.items():  # with the student's own line: test_public_reports.py
        assert any(run == mistake and f"raised {error}" in m for (run, _), m in failed.items()), mistake
