"""The student-facing tree ``exercises/`` is what the generator makes, and its public tests work.

* ``exercises/<group>/<module>.py`` equals ``python -m grader.authoring.stubs`` run on ``solutions/``;
* every public test fails on the stubs, and fails with the stub's NotImplementedError (so a student
  starting out sees "not written yet", never a broken test);
* every public test passes once the modules are replaced by the reference solutions.

The public tests run on a temporary copy with its own tiny ini as config and the copy as rootdir, so
that the repository's pyproject settings (testpaths, timeout) do not interfere; the solutions stand in
for the stubs first on ``sys.path``. Both runs are forked children of one warm process, with
test_public_tests.py's runs (public_runner.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.authoring.nbgrader_release import CHECKS_FILES
from grader.authoring import student_text, stubs
from grader.rubric import GROUPS, REPO_ROOT, load_rubric

try:
    from . import public_runner as pr
except ImportError:
    import public_runner as pr

EXERCISE_IDS = list(load_rubric().exercises)
# One public test file per exercise module: exercises/<group>/test_<module>.py.
PUBLIC_TESTS = {ex_id: pr.public_test_file(ex_id) for ex_id in EXERCISE_IDS}


@pytest.mark.timeout(60)  # stubs.check imports nbgrader: 2 s, 10 s and more on a loaded machine
def test_exercises_are_in_sync_with_the_generator():
    stale = stubs.check(REPO_ROOT)
    assert not stale, f"out of date (run `python -m grader.authoring.stubs`): {[str(p.relative_to(REPO_ROOT)) for p in stale]}"


def test_the_rubrics_modules_exist_with_the_same_names_in_both_trees():
    expected = {f"{ex_id}.py" for ex_id in EXERCISE_IDS}
    for tree in ("solutions", "exercises"):
        root = REPO_ROOT / tree
        found = {
            str(p.relative_to(root))
            for p in root.glob("*/*.py")
            if not p.name.startswith("test_") and p.name != "conftest.py"
        }
        assert found == expected, f"{tree}/: extra {sorted(found - expected)}, missing {sorted(expected - found)}"


def test_every_group_has_its_readme_hints_and_one_public_test_file_per_module():
    for group in GROUPS:
        for name in ("README.md", "hints.md"):
            assert (REPO_ROOT / "exercises" / group / name).is_file(), f"missing exercises/{group}/{name}"
    for test_file in PUBLIC_TESTS.values():
        assert test_file.is_file(), f"missing {test_file.relative_to(REPO_ROOT)}"
    for name in ("conftest.py", *CHECKS_FILES):  # what the release ships beside the public tests
        assert (REPO_ROOT / "exercises" / name).is_file(), f"missing exercises/{name}"


def test_stub_messages_name_the_function_and_the_readme_section():
    for ex in load_rubric().exercises.values():
        ex_id, group, module = ex.id, ex.group, ex.module
        text = (pr.EXERCISES_DIR / group / ex.reference_file.name).read_text()
        assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text, ex_id
        assert stubs.PLACEHOLDER not in text and stubs.SECTION_PLACEHOLDER not in text, ex_id
        assert f"see exercises/{group}/README.md, section '{module}'" in text, ex_id
        assert "# TODO" in text, ex_id
        readme = (REPO_ROOT / "exercises" / group / "README.md").read_text()
        assert f"\n## {module}\n" in readme, f"exercises/{group}/README.md has no '## {module}' section"


def test_make_stub_names_the_enclosing_method():
    source = (
        "class A:\n"
        "    def f(self):\n"
        '        """Doc."""\n'
        "        ### BEGIN SOLUTION\n"
        "        return 1\n"
        "        ### END SOLUTION\n"
    )
    stub = stubs.make_stub(source, "03_causal/causal_attention")
    assert "return 1" not in stub
    assert (
        "        raise NotImplementedError(\"A.f: not written yet -- see exercises/03_causal/README.md, "
        "section 'causal_attention'\")"
    ) in stub
    assert "        # TODO: write the body of A.f here" in stub


def test_the_student_text_is_read_from_the_solutions_end_and_only_there():
    """Every solution carries its student text; stripping it gives the module back; a block that is not the
    module's end, or lacks a part, is refused in one line naming the fix."""
    for ex in load_rubric().exercises.values():
        source = ex.reference_file.read_text()
        parts = student_text.student_text(source, ex.id)
        assert parts and all(parts.values()), ex.id
        stripped = student_text.without_student_text(source)
        assert student_text.BEGIN not in stripped and parts["HINTS"] not in stripped, ex.id
        assert source.startswith(stripped.rstrip("\n")), ex.id
    block = f'{student_text.BEGIN}\nBUILD_ORDER = "b"\nREADME = "r"\nHINTS = "h"\n{student_text.END}\n'
    assert student_text.student_text(f"x = 1\n\n\n{block}", "m.py") == {"BUILD_ORDER": "b", "README": "r", "HINTS": "h"}
    with pytest.raises(student_text.StudentTextError, match="m.py: the student text must be one block at the module's end"):
        student_text.student_text(f"{block}x = 1\n", "m.py")
    with pytest.raises(student_text.StudentTextError, match="m.py: the student text lacks HINTS"):
        student_text.student_text(block.replace('HINTS = "h"\n', ""), "m.py")


def test_a_group_file_keeps_its_own_prose_and_gets_the_generated_regions(tmp_path: Path):
    """What is hand-written stays; the build order and the sections are rewritten; a lost marker is one line."""
    readme = tmp_path / "exercises" / "g" / "README.md"
    readme.parent.mkdir(parents=True)
    (tmp_path / "solutions" / "g").mkdir(parents=True)
    (tmp_path / "solutions" / "g" / "m.py").write_text(
        f'x = 1\n{student_text.BEGIN}\nBUILD_ORDER = "first"\nREADME = "Write m."\nHINTS = "h"\n{student_text.END}\n')
    own = "# g\n\nIn this order:\n\n"
    sections = student_text.SECTIONS.format(part="README")
    readme.write_text(f"{own}{student_text.ORDER_BEGIN}\nstale\n{student_text.ORDER_END}\n\nRules.\n\n{sections}\nold\n")
    documents = student_text.group_documents(tmp_path, "g", ["m"])
    assert documents == {readme: f"{own}{student_text.ORDER_BEGIN}\n1. `m.py` — first\n{student_text.ORDER_END}\n\n"
                                 f"Rules.\n\n{sections}\n## m\n\nWrite m.\n"}
    readme.write_text(own)
    with pytest.raises(student_text.StudentTextError, match="exercises/g/README.md has 0 lines '<!-- BEGIN GENERATED"):
        student_text.group_documents(tmp_path, "g", ["m"])


@pytest.fixture(scope="module")
def public_runs() -> dict[str, dict[str, tuple[str, str]]]:
    """The public tests on the stubs and on the solutions: ``{"stubs"|"solved": {nodeid: (status, message)}}``."""
    runs = pr.public_runs()
    for name in ("stubs", "solved"):
        assert "__error__" not in runs[name], f"the public tests did not run on the {name}: {runs[name]['__error__'][1]}"
    return runs


@pytest.mark.timeout(300)
def test_every_public_test_fails_on_the_stubs_with_not_implemented_error(public_runs):
    cases = public_runs["stubs"]
    files = {Path(nodeid.split("::")[0]).name for nodeid in cases}
    assert files == {path.name for path in PUBLIC_TESTS.values()}, files
    wrong = {}
    for name, (status, message) in cases.items():
        if status != "failed" or "NotImplementedError" not in message:
            wrong[name] = (status, message[:300])
    assert not wrong, f"public tests that do not fail with NotImplementedError on the stubs: {wrong}"


@pytest.mark.timeout(300)
def test_every_public_test_passes_on_the_solutions(public_runs):
    cases = public_runs["solved"]
    not_passed = {name: outcome for name, outcome in cases.items() if outcome[0] != "passed"}
    assert not not_passed, f"public tests that do not pass on solutions/: {not_passed}"
    # Between 2 and 7 tests per exercise module.
    assert 2 * len(EXERCISE_IDS) <= len(cases) <= 7 * len(EXERCISE_IDS), len(cases)
