"""The nbgrader course's notebooks (grader/authoring/nbgrader_release.py) and the intake of students'
notebooks (grader/classroom/notebook_intake.py): cheap checks, no grading. test_nbgrader_course.py grades
a whole course.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest

from grader.authoring.nbgrader_release import GPU_CELL, gpu_group, group_notebook, notebook_modules, outside_dependencies
from grader.classroom.notebook_intake import JOURNEY, MAX_CELL_BYTES, SETUP_NAMES, NotebookError, cell_imports
from grader.classroom.notebook_intake import notebook_modules as read_modules
from grader.rubric import GROUPS, REPO_ROOT, load_rubric
from support import hidden_lines, nb_cell, nb_meta


# --- the source notebooks -------------------------------------------------------------------------


def test_one_notebook_per_group_with_public_tests_only_and_no_other_groups_answer():
    rubric = load_rubric()
    hidden = hidden_lines()
    assert len(hidden) > 100, "the scan would be vacuous"
    for group in GROUPS:
        nb = group_notebook(group)
        nbformat.validate(nb)
        ids = [nb_meta(c)["grade_id"] for c in nb.cells if nb_meta(c)]
        assert len(ids) == len(set(ids)), ids
        points = 0
        for ex in rubric.in_group(group):
            solution, tests = nb_cell(nb, ex.module), nb_cell(nb, f"{ex.module}_tests")
            assert nb_meta(solution) == {"grade": False, "grade_id": ex.module, "locked": False, "schema_version": 3,
                                       "solution": True}
            assert "### BEGIN SOLUTION" in solution.source
            meta = nb_meta(tests)
            assert (meta["grade"], meta["solution"], meta["locked"]) == (True, False, True)
            assert meta["points"] == ex.points and isinstance(meta["points"], int)
            points += meta["points"]
            public = (REPO_ROOT / "exercises" / ex.group / f"test_{ex.module}.py").read_text()
            # the public test file itself (its docstring aside), and a call running each of its tests
            assert public.split('"""\n', 2)[-1].strip() in tests.source
            assert tests.source.count("def test_") == public.count("def test_") > 0
            assert f"run_public_tests({ex.module!r}, [" in tests.source
        text = "\n".join(c.source for c in nb.cells if not nb_meta(c).get("solution"))  # solution cells: the answers
        assert "HIDDEN TESTS" not in text
        assert [line for line in hidden if line in text] == [], f"{group} quotes the hidden tests"
        for dep in outside_dependencies(group):  # the borrowed module: the student's own, never graded here
            cell = nb_cell(nb, dep.module)
            assert nb_meta(cell)["solution"] and not nb_meta(cell)["grade"] and not nb_meta(cell)["locked"]
            assert "### BEGIN SOLUTION" in cell.source, "generate_assignment must release it as a stub"
        if group == gpu_group():
            gpu = nb_meta(nb_cell(nb, GPU_CELL))
            assert gpu["grade"] and gpu["locked"] and gpu["points"] == rubric.gpu_points
            points += gpu["points"]
        else:
            assert GPU_CELL not in ids
        assert points == sum(ex.points for ex in rubric.in_group(group)) + (rubric.gpu_points if group == gpu_group() else 0)
    assert [dep.id for dep in outside_dependencies("04_multihead")] == ["03_causal/causal_attention"]
    assert gpu_group() == "04_multihead"


def test_public_test_files_define_no_name_a_solution_cell_defines():
    """A notebook is one namespace: a test cell must not overwrite the student's names."""
    rubric = load_rubric()
    public_names = {name for ex in rubric.exercises.values() for name in ex.names}
    for path in sorted((REPO_ROOT / "exercises").glob("*/test_*.py")):
        tree = ast.parse(path.read_text())
        defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
        assert not defined & public_names, (path, defined & public_names)


# --- intake of untrusted notebooks ----------------------------------------------------------------


def _notebook_file(tmp_path: Path, nb: dict | str | bytes) -> Path:
    path = tmp_path / "03_causal.ipynb"
    data = nb if isinstance(nb, (str, bytes)) else json.dumps(nb)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _solution_cell(module: str, source) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {"nbgrader": {"grade_id": module, "solution": True}},
            "outputs": [], "execution_count": None}


MODULES_03 = ["causal_mask", "attention_dropout", "causal_attention"]


def test_intake_reads_solution_cells_by_grade_id_into_the_module_layout(tmp_path: Path):
    cells = [_solution_cell(m, [f"def {m}():\n", "    return 1\n"]) for m in MODULES_03]
    cells.insert(0, {"cell_type": "code", "source": "raise SystemExit", "metadata": {}, "outputs": []})
    files = read_modules(_notebook_file(tmp_path, {"cells": cells}), MODULES_03)
    assert sorted(files) == [f"03_causal/{m}.py" for m in sorted(MODULES_03)]
    text = files["03_causal/causal_mask.py"].decode()
    assert text.splitlines()[0].startswith(SETUP_NAMES + "  #")
    assert text.splitlines()[1:] == ["def causal_mask():", "    return 1"]
    nb04 = group_notebook("04_multihead")
    path = tmp_path / "04.ipynb"
    nbformat.write(nb04, path)
    files = read_modules(path, [ex.module for ex in notebook_modules("04_multihead")])
    assert "03_causal/causal_attention.py" in files  # the student's own CausalAttention, as a module
    wrapper = files["04_multihead/multihead_wrapper.py"].decode()
    assert "from causal_attention import CausalAttention" in wrapper.splitlines()[0]


def test_a_helper_in_a_cell_the_student_added_is_graded_with_the_cell_that_uses_it(tmp_path: Path):
    """nbgrader's autograde runs the whole notebook, so a helper in a cell of its own works there: the intake
    appends it (its cell's imports, and the helpers it reaches) after the graded cell's own lines, and says
    so in one line; demo code and another module's public name stay out."""
    helper = {"cell_type": "code", "metadata": {}, "outputs": [],
              "source": "import math\n\ndef _floor(d):\n    return max(d, 1)\n\ndef scale(d):\n    return math.sqrt(_floor(d))\n\n"
                        "class CausalAttention:\n    pass\n\nprint('demo')\n"}
    uses = ["class CausalAttention:\n", "    def f(self, s):\n", "        return s / scale(s.shape[-1])\n"]
    cells = [_solution_cell(m, uses if m == "causal_attention" else [f"def {m}():\n", "    return 1\n"]) for m in MODULES_03]
    notes: list[str] = []
    files = read_modules(_notebook_file(tmp_path, {"cells": [helper, *cells]}), MODULES_03, notes)
    text = files["03_causal/causal_attention.py"].decode().splitlines()
    assert text[1:4] == [line.rstrip("\n") for line in uses]  # the cell's lines keep their numbers
    borrowed = "\n".join(text[4:])
    assert "import math" in borrowed and "def scale(d):" in borrowed and "def _floor(d):" in borrowed
    assert "print(" not in borrowed and "class CausalAttention" not in borrowed
    compile("\n".join(text), "causal_attention.py", "exec")
    assert "scale" not in files["03_causal/causal_mask.py"].decode()
    assert notes == ["the causal_attention cell uses `scale`, defined in a cell that is not graded: graded with it; "
                     "move it into the causal_attention cell"]


def test_a_cell_gets_the_names_of_the_setup_cell_and_of_earlier_cells_as_its_py_file_would_import_them():
    kata_checks = ast.parse((REPO_ROOT / "exercises" / "kata_checks.py").read_text())
    (journey,) = [node.value for node in kata_checks.body if isinstance(node, ast.Assign) and node.targets[0].id == "JOURNEY"]
    assert ast.literal_eval(journey) == JOURNEY  # the setup cell's inputs
    cells = {"causal_mask": "import torch\ndef causal_attention_weights(s, d):\n    return s\nscale = 2\n",
             "attention_dropout": "def dropout(x, p, scale=1):\n    return x * scale\nbroken(",
             "causal_attention": "class CausalAttention:\n    def f(self, s, mask):\n"
                                 "        return causal_attention_weights(s, scale) + inputs + mask + dropout(s, 1) + elsewhere\n",
             "multihead_wrapper": "def causal_attention_weights(s):\n    return s\ny = causal_attention_weights(scale)\n"}
    assert cell_imports(cells) == {
        "causal_mask": [], "attention_dropout": [],  # its own parameter named scale; a cell that does not parse
        "causal_attention": ["from causal_mask import causal_attention_weights, scale"],  # dropout: not parsed
        "multihead_wrapper": ["from causal_mask import scale"]}  # it defines causal_attention_weights itself


@pytest.mark.parametrize("content, message", [
    ("{not json", "unreadable JSON"),
    (b"\xff\xfe", "unreadable JSON"),
    ("[1, 2]", "no list of cells"),
    ({"cells": [_solution_cell("causal_mask", "x = 1")]}, "no solution cell 'attention_dropout', 'causal_attention'"),
    ({"cells": [_solution_cell(m, "x = 1") for m in MODULES_03 + ["causal_mask"]]}, "two solution cells named 'causal_mask'"),
    ({"cells": [_solution_cell(m, 42 if m == "causal_mask" else "x") for m in MODULES_03]}, "has no text source"),
    ({"cells": [_solution_cell(m, "#" * (MAX_CELL_BYTES + 1) if m == "causal_attention" else "x") for m in MODULES_03]},
     "'causal_attention' is larger than"),
    ({"cells": [dict(_solution_cell(m, "x"), cell_type="markdown") for m in MODULES_03]}, "not a code cell"),
])
def test_intake_refuses_a_broken_notebook_in_one_line(tmp_path: Path, content, message: str):
    with pytest.raises(NotebookError, match="^03_causal.ipynb: ") as err:
        read_modules(_notebook_file(tmp_path, content), MODULES_03)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_intake_never_follows_a_symlink(tmp_path: Path):
    secret = tmp_path / "secret.ipynb"
    secret.write_text(json.dumps({"cells": [_solution_cell(m, "x") for m in MODULES_03]}))
    (tmp_path / "03_causal.ipynb").symlink_to(secret)
    with pytest.raises(NotebookError, match="cannot be read"):
        read_modules(tmp_path / "03_causal.ipynb", MODULES_03)
