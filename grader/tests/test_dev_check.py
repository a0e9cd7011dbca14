"""``python -m grader dev check`` (grader/authoring/dev_check.py): this tree lacks nothing, and a copy with
files removed or out of step is told exactly what it lacks. CI runs the check through this file."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from grader.authoring import dev_check
from grader.rubric import REPO_ROOT, load_rubric

# The check's stubs.check imports nbgrader (2 s, 10 s and more on a loaded machine) in the first test to
# run it: the limit is for that, not for the check's own work.
pytestmark = pytest.mark.timeout(60)
# What the check reads; the documents and caches are left behind.
COPIED = ("solutions", "tests", "exercises", "README.md", "docs/students.md")
# The fixes the check's lines end with (each line says what to do, as rustlings' dev check does).
HIDDEN_TESTS = "the hidden tests through the impl and reference fixtures, one kind marker each (tests/README.md)"
STALE = "is not what the stub generator writes: run `python -m grader.authoring.stubs`"
STALE_TEXT = ("is not what the stub generator writes (its generated regions are the solutions' student text: a change "
              "to them belongs there): run `python -m grader.authoring.stubs`")


def no_section(document: str, module: str, solution: str) -> str:
    """The line for a group document without the module's section: the fix is in the solution, then the generator."""
    part = "HINTS" if document.endswith("hints.md") else "README"
    return (f"{document} has no '## {module}' section: write it as {part} in the student text at the end of "
            f"{solution} (BUILD_ORDER, README and HINTS between ### BEGIN STUDENT TEXT and ### END STUDENT TEXT, "
            "docs/maintainers.md), then run `python -m grader.authoring.stubs`")


def public_tests(module: str) -> str:
    return f"the public tests, each named test_{module}_... (kata_checks.load)"


def test_this_tree_lacks_nothing(capsys: pytest.CaptureFixture) -> None:
    assert dev_check.run(argparse.Namespace(dev_command="check")) == 0
    assert capsys.readouterr().out == f"all {len(load_rubric().exercises)} exercises complete\n"


def test_what_lacks_is_printed_one_line_each_with_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(dev_check, "problems", lambda: ["a: no b", "c: no d"])
    assert dev_check.run(argparse.Namespace(dev_command="check")) == 1
    assert capsys.readouterr().out == "a: no b\nc: no d\n"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "documents", "mutants")
    for name in COPIED:
        source, dest = REPO_ROOT / name, tmp_path / name
        if source.is_dir():
            shutil.copytree(source, dest, ignore=ignore)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, dest)
    assert dev_check.problems(tmp_path) == [], "the copy must start complete"
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def test_a_copy_with_files_removed_is_told_what_it_lacks(copy: Path) -> None:
    (copy / "tests" / "03_causal" / "test_causal_mask.py").unlink()
    (copy / "exercises" / "04_multihead" / "test_head_split.py").unlink()
    (copy / "exercises" / "01_simple_attention" / "context_vectors.py").unlink()
    _edit(copy / "solutions" / "02_trainable_weights" / "scaled_attention.py", "def scaled_dot_product(",
          "def scaled_dot_product_renamed(")
    _edit(copy / "tests" / "03_causal" / "test_attention_dropout.py", "@pytest.mark.edge\n", "")
    _edit(copy / "exercises" / "03_causal" / "hints.md", "## causal_attention\n", "## causal attention\n")
    _edit(copy / "exercises" / "03_causal" / "test_attention_dropout.py",
          'assert_does_its_own_work("attention_dropout")', "pass")
    _edit(copy / "exercises" / "conftest.py", '"03_causal", ', "")
    _edit(copy / "docs" / "students.md", "`exercises/04_multihead`", "`exercises/04`")
    lines = dev_check.problems(copy)
    expected = [
        f"03_causal/causal_mask: no tests/03_causal/test_causal_mask.py: write it, {HIDDEN_TESTS}",
        f"04_multihead/head_split: no exercises/04_multihead/test_head_split.py: write it, {public_tests('head_split')}",
        f"01_simple_attention/context_vectors: exercises/01_simple_attention/context_vectors.py {STALE}",
        "02_trainable_weights/scaled_attention: solutions/02_trainable_weights/scaled_attention.py does not define "
        "scaled_dot_product (the rubric's names): define it, or change 02_trainable_weights/scaled_attention's names "
        "in tests/rubric.json",
        "03_causal/attention_dropout: tests/03_causal/test_attention_dropout.py has no edge test, though the rubric "
        f"gives edge {load_rubric().exercises['03_causal/attention_dropout'].kind_points['edge']:g} points: add a test "
        "marked @pytest.mark.edge, or move those points to another kind in tests/rubric.json",
        "03_causal/causal_attention: " + no_section("exercises/03_causal/hints.md", "causal_attention",
                                                    "solutions/03_causal/causal_attention.py"),
        "03_causal/attention_dropout: exercises/03_causal/test_attention_dropout.py has no test calling "
        "assert_does_its_own_work('attention_dropout'), though the rubric forbids operations in dropout: add "
        "test_attention_dropout_does_its_own_work calling it",
        "exercises/conftest.py: GROUPS is ('01_simple_attention', '02_trainable_weights', '04_multihead'), the "
        "rubric's groups are ('01_simple_attention', '02_trainable_weights', '03_causal', '04_multihead'): set "
        "GROUPS = ('01_simple_attention', '02_trainable_weights', '03_causal', '04_multihead')",
        "04_multihead: docs/students.md does not name `exercises/04_multihead`: add a line naming it",
    ]
    # the edited solution's stub is out of date too: one fix (the name) makes it right again
    expected.append(f"02_trainable_weights/scaled_attention: exercises/02_trainable_weights/scaled_attention.py {STALE}")
    # the hints' section was edited by hand: the generator would put it back
    expected.append(f"exercises/03_causal/hints.md {STALE_TEXT}")
    unmarked = [line for line in lines if "carries the kind markers []" in line]
    assert unmarked and all(line.startswith("03_causal/attention_dropout: tests/03_causal/test_attention_dropout.py::")
                            for line in unmarked), lines
    assert sorted(line for line in lines if line not in unmarked) == sorted(expected)


def test_a_rubric_the_grader_refuses_is_the_one_line(copy: Path) -> None:
    (copy / "tests" / "standins" / "causal_attention.py").unlink()
    assert dev_check.problems(copy) == [
        "tests/rubric.json: exercises built on (depends_on) without a stand-in in tests/standins/: "
        "03_causal/causal_attention: fix tests/rubric.json, or add what it names"]


def test_a_gpu_check_module_no_exercise_defines_is_the_one_line(copy: Path) -> None:
    """The GPU-run check's modules live in the rubric: a name no exercise defines is told, in one line."""
    raw = json.loads((copy / "tests" / "rubric.json").read_text())
    raw["gpu_check"]["modules"]["MultiHeadAttentionV2"] = {"args": [3, 4, 8, 0.0]}
    (copy / "tests" / "rubric.json").write_text(json.dumps(raw))
    assert dev_check.problems(copy) == ["tests/rubric.json: gpu_check.modules names what no exercise defines: "
                                        "MultiHeadAttentionV2: fix tests/rubric.json, or add what it names"]


def test_a_new_exercise_in_the_rubric_is_told_every_file_it_needs(copy: Path) -> None:
    """The maintainer's first step (docs/maintainers.md): the rubric entry alone, and the check lists the rest."""
    raw = json.loads((copy / "tests" / "rubric.json").read_text())
    raw["exercises"]["04_multihead/kv_cache"] = {"points": 4, "kinds": {"core": 3, "edge": 1}, "names": ["KVCache"],
                                                 "depends_on": []}
    (copy / "tests" / "rubric.json").write_text(json.dumps(raw))
    lines = dev_check.problems(copy)
    assert lines == [
        "04_multihead/kv_cache: no solutions/04_multihead/kv_cache.py: write it, the reference defining KVCache; "
        "put each body between ### BEGIN SOLUTION and ### END SOLUTION",
        f"04_multihead/kv_cache: no tests/04_multihead/test_kv_cache.py: write it, {HIDDEN_TESTS}",
        f"04_multihead/kv_cache: no exercises/04_multihead/test_kv_cache.py: write it, {public_tests('kv_cache')}",
        *(f"04_multihead/kv_cache: " + no_section(f"exercises/04_multihead/{name}", "kv_cache",
                                                  "solutions/04_multihead/kv_cache.py")
          for name in ("README.md", "hints.md")),
    ]


def test_files_the_rubric_does_not_account_for_are_named_with_their_fix(copy: Path) -> None:
    """The release gives exercises/ to the students and the Gradescope bundle copies solutions/, each as it
    is: a stray file would ship. Each is one line saying what to do; caches are not looked at."""
    for stray in ("exercises/scratch.py", "exercises/03_causal/kv_cache.py", "exercises/03_causal/test_kv_cache.py",
                  "solutions/notes.txt", "solutions/03_causal/test_causal_mask.py", "solutions/04_multihead/kv_cache.py",
                  "exercises/03_causal/__pycache__/causal_mask.cpython-311.pyc", "exercises/kata_extra.py"):
        (copy / stray).parent.mkdir(parents=True, exist_ok=True)
        (copy / stray).write_text("")
    (copy / "exercises" / "05_extra").mkdir()
    (copy / "exercises" / "05_extra" / "README.md").write_text("")
    exercises, solutions = "(the release gives exercises/ to the students as it is", \
        "(the Gradescope bundle copies solutions/ as it is"
    assert sorted(dev_check.problems(copy)) == sorted([
        f"exercises/05_extra/ is not a group of tests/rubric.json {exercises}): delete it, or add \"05_extra\" to "
        "the rubric's groups",
        f"exercises/scratch.py is no part of the kata {exercises}; its own files are conftest.py, shortcuts.json, "
        "known_results.json, documents and the kata_*.py modules): delete it",
        f"solutions/notes.txt is no part of the kata {solutions}; it holds conftest.py and a folder per group): "
        "delete it",
        f"exercises/03_causal/kv_cache.py belongs to no exercise of tests/rubric.json {exercises}): delete it, or "
        "add \"03_causal/kv_cache\" to tests/rubric.json",
        f"exercises/03_causal/test_kv_cache.py belongs to no exercise of tests/rubric.json {exercises}): delete it, "
        "or add \"03_causal/kv_cache\" to tests/rubric.json",
        f"solutions/03_causal/test_causal_mask.py is no part of the kata {solutions}; a group's folder holds its "
        "exercises' references): delete it",
        f"solutions/04_multihead/kv_cache.py belongs to no exercise of tests/rubric.json {solutions}): delete it, "
        "or add \"04_multihead/kv_cache\" to tests/rubric.json",
    ])


def test_doing_what_each_stray_file_line_says_leaves_the_check_clean(copy: Path) -> None:
    """The fix a line names works: deleting the file makes the check pass again."""
    stray = copy / "exercises" / "01_simple_attention" / "notes.md"
    stray.write_text("my notes")
    (line,) = dev_check.problems(copy)
    assert line.startswith("exercises/01_simple_attention/notes.md ") and line.endswith(": delete it"), line
    stray.unlink()
    assert dev_check.problems(copy) == []
