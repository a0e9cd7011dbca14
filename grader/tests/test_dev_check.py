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
        "03_causal/causal_mask: no tests/03_causal/test_causal_mask.py",
        "04_multihead/head_split: no exercises/04_multihead/test_head_split.py",
        "01_simple_attention/context_vectors: exercises/01_simple_attention/context_vectors.py is not what "
        "`python -m grader.authoring.stubs` writes (run it)",
        "02_trainable_weights/scaled_attention: solutions/02_trainable_weights/scaled_attention.py does not define "
        "scaled_dot_product (the rubric's names)",
        "03_causal/attention_dropout: tests/03_causal/test_attention_dropout.py has no edge test, though the rubric "
        "gives edge 2 points",
        "03_causal/causal_attention: exercises/03_causal/hints.md has no '## causal_attention' section",
        "03_causal/attention_dropout: exercises/03_causal/test_attention_dropout.py has no test calling "
        "assert_does_its_own_work('attention_dropout'), though the rubric forbids operations in dropout",
        "exercises/conftest.py: GROUPS is ('01_simple_attention', '02_trainable_weights', '04_multihead'), the "
        "rubric's groups are ('01_simple_attention', '02_trainable_weights', '03_causal', '04_multihead')",
        "04_multihead: docs/students.md does not name `exercises/04_multihead`",
    ]
    # the edited solution's stub is out of date too: one fix (the name) makes it right again
    expected.append("02_trainable_weights/scaled_attention: exercises/02_trainable_weights/scaled_attention.py is "
                    "not what `python -m grader.authoring.stubs` writes (run it)")
    unmarked = [line for line in lines if "carries the kind markers []" in line]
    assert unmarked and all(line.startswith("03_causal/attention_dropout: tests/03_causal/test_attention_dropout.py::")
                            for line in unmarked), lines
    assert sorted(line for line in lines if line not in unmarked) == sorted(expected)


def test_a_rubric_the_grader_refuses_is_the_one_line(copy: Path) -> None:
    (copy / "tests" / "standins" / "causal_attention.py").unlink()
    assert dev_check.problems(copy) == [
        "tests/rubric.json: exercises built on (depends_on) without a stand-in in tests/standins/: "
        "03_causal/causal_attention"]


def test_a_new_exercise_in_the_rubric_is_told_every_file_it_needs(copy: Path) -> None:
    """The maintainer's first step (docs/maintainers.md): the rubric entry alone, and the check lists the rest."""
    raw = json.loads((copy / "tests" / "rubric.json").read_text())
    raw["exercises"]["04_multihead/kv_cache"] = {"points": 4, "kinds": {"core": 3, "edge": 1}, "names": ["KVCache"],
                                                 "depends_on": []}
    (copy / "tests" / "rubric.json").write_text(json.dumps(raw))
    lines = dev_check.problems(copy)
    assert lines == [
        "04_multihead/kv_cache: no solutions/04_multihead/kv_cache.py",
        "04_multihead/kv_cache: no tests/04_multihead/test_kv_cache.py",
        "04_multihead/kv_cache: no exercises/04_multihead/test_kv_cache.py",
        "04_multihead/kv_cache: exercises/04_multihead/README.md has no '## kv_cache' section",
        "04_multihead/kv_cache: exercises/04_multihead/hints.md has no '## kv_cache' section",
    ]
