"""tests/rubric.json is the one definition of the groups, the kinds of hidden tests and the exercises.

Two files stand alone and read no ``grader``: the students' ``exercises/conftest.py`` (shipped without
the grader) keeps its own copy of the group list, which ``python -m grader dev check`` compares with the
rubric (grader/tests/test_dev_check.py runs it), and the hidden tests' seam (``tests/kata_seam.py``)
reads rubric.json itself. The worker beside student code keeps no copy: the grader's spawn spec carries
the groups.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from grader.rubric import GROUPS, KINDS, REPO_ROOT, RubricError, load_rubric


def test_the_hidden_tests_seam_reads_the_same_rubric() -> None:
    spec = importlib.util.spec_from_file_location("kata_seam_copy", REPO_ROOT / "tests" / "kata_seam.py")
    seam = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seam)
    assert seam.GROUPS == GROUPS
    assert tuple(seam.TEST_KINDS) == KINDS


def test_every_exercise_lives_in_a_group_in_order() -> None:
    rubric = load_rubric()
    assert [ex.group for ex in rubric.exercises.values()] == sorted(ex.group for ex in rubric.exercises.values())
    assert all(rubric.in_group(group) for group in GROUPS)
    assert rubric.groups["03_causal"].heading == "Causal attention: masking the future, dropout (section 3.5)"


def test_a_rubric_with_a_stray_exercise_or_no_core_kind_is_refused(tmp_path: Path) -> None:
    raw = json.loads((REPO_ROOT / "tests" / "rubric.json").read_text())
    raw["exercises"]["05_extra/thing"] = {"points": 1, "names": ["thing"], "depends_on": []}
    (tmp_path / "rubric.json").write_text(json.dumps(raw))
    with pytest.raises(RubricError, match="outside the rubric's groups: 05_extra/thing"):
        load_rubric(tmp_path)
    del raw["exercises"]["05_extra/thing"]
    del raw["kinds"]["core"]
    (tmp_path / "rubric.json").write_text(json.dumps(raw))
    with pytest.raises(RubricError, match="must include 'core'"):
        load_rubric(tmp_path)


def test_the_gpu_run_checks_modules_are_read_from_the_rubric(tmp_path: Path) -> None:
    """gpu_check.modules: public names the exercises define, each with its constructor's arguments; the check,
    the nbgrader release and the docs read them there, and a rubric naming what no exercise defines is refused."""
    raw = json.loads((REPO_ROOT / "tests" / "rubric.json").read_text())
    rubric = load_rubric()
    assert [m.name for m in rubric.gpu_modules] == list(raw["gpu_check"]["modules"])
    assert all(m.name in rubric.exercises[m.exercise].names and m.module == rubric.exercises[m.exercise].module
               for m in rubric.gpu_modules)
    shutil.copytree(REPO_ROOT / "tests" / "standins", tmp_path / "standins")  # the rubric's other checks pass
    raw["gpu_check"]["modules"]["CausalAttentionV9"] = {"args": []}
    (tmp_path / "rubric.json").write_text(json.dumps(raw))
    with pytest.raises(RubricError, match="gpu_check.modules names what no exercise defines: CausalAttentionV9"):
        load_rubric(tmp_path)
    raw["gpu_check"]["modules"] = {"CausalAttention": {"args": 3}}
    (tmp_path / "rubric.json").write_text(json.dumps(raw))
    with pytest.raises(RubricError, match="give args as a list and kwargs as an object for CausalAttention"):
        load_rubric(tmp_path)
