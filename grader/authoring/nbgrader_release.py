"""The nbgrader course of a release: one assignment per group, public tests only.

    build_nbgrader_course(Path("release/nbgrader"))
        nbgrader_config.py
        source/01_simple_attention/01_simple_attention.ipynb   (+ kata_checks.py and its kin, documents/, hints/)
        source/02_trainable_weights/...   source/03_causal/...   source/04_multihead/...

Each group of the rubric (``grader.rubric.GROUPS``) is an nbgrader assignment named after its folder,
so each is released and due on its own date. Its SOURCE notebook holds, per exercise, a solution cell
(``grade_id`` = the module name, ``### BEGIN/END SOLUTION`` as in solutions/) and a locked test cell
(``grade_id`` = ``<module>_tests``, the rubric's points) made from the public tests of
``exercises/<group>/test_<module>.py`` (with ``exercises/kata_checks.py`` beside the notebook), never
from the hidden tests: those stay in tests/, and ``python -m grader nbgrader`` runs them
(grader/classroom/nbgrader_course.py). The notebooks carry no hidden test and no hidden-test markers.

A group whose modules build on another group's module (04_multihead's wrapper uses
``03_causal``'s CausalAttention) gets an editable solution cell named after that module
(``grade_id`` ``causal_attention``, not graded in this assignment) where the student pastes their own
class: in the source it is the reference between solution markers, so ``nbgrader generate_assignment``
releases it as a stub that raises NotImplementedError; the 03 answer is never handed out. When the
assignment is graded, that cell becomes the module file (``03_causal/causal_attention.py``), exactly
like a student's own file in the command-line layout.

The group that holds the last module of the GPU-run check (tests/rubric.json's ``gpu_check.modules``) gets a
locked grade cell ``gpu_check`` worth the rubric's GPU points: the grader records the check there.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from grader.authoring.student_text import without_student_text
from grader.rubric import EXERCISES_DIR, GROUPS, Exercise, load_rubric

if TYPE_CHECKING:  # nbformat comes with nbgrader (the `instructor` extra): imported where notebooks are made
    from nbformat.notebooknode import NotebookNode

TEMPLATES = Path(__file__).resolve().parent / "templates"
# The public tests' helpers, shipped beside each notebook: the checks, the mistakes they name
# (exercises/kata_mistakes.py) and how they name them (kata_known.py; outside pytest no known result
# applies), the simulated GPU (kata_gpu.py), and the trace of the operations that ran with the table of
# those each name must not run (exercises/kata_trace.py, exercises/shortcuts.json).
CHECKS_FILES = ("kata_checks.py", "kata_gpu.py", "kata_known.py", "kata_mistakes.py", "kata_trace.py", "shortcuts.json")
GPU_CELL = "gpu_check"
SETUP_CELL = "setup"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ipynb_checkpoints")


class ReleaseError(Exception):
    """The release cannot be built (reported as one line by the command line)."""


def gpu_group() -> str:
    """The assignment whose notebook holds the ``gpu_check`` grade cell: the group of the last module
    the GPU-run check runs (``04_multihead``)."""
    return load_rubric().module_groups[_gpu_modules()[-1]]


def _gpu_modules() -> list[str]:
    return [checked.module for checked in load_rubric().gpu_modules]


def outside_dependencies(group: str) -> list[Exercise]:
    """The exercises of other groups that ``group``'s modules import (the rubric's ``depends_on``)."""
    rubric = load_rubric()
    ids = sorted({dep for ex in rubric.in_group(group) for dep in ex.depends_on if not dep.startswith(group + "/")})
    return [rubric.exercises[dep] for dep in ids]


def notebook_modules(group: str) -> list[Exercise]:
    """Every exercise whose module a ``group`` notebook holds a solution cell of (``grade_id`` = module):
    the borrowed ones (outside_dependencies) first, then the group's own."""
    return [*outside_dependencies(group), *load_rubric().in_group(group)]


def build_nbgrader_course(dest: Path) -> None:
    """Write ``nbgrader_config.py`` and, per group, ``source/<group>/<group>.ipynb`` with
    ``kata_checks.py``, ``documents/`` and ``hints/<group>.md`` beside it (nbgrader releases an
    assignment folder's other files too)."""
    import nbformat

    dest.mkdir(parents=True)
    shutil.copy(TEMPLATES / "nbgrader_config.py", dest / "nbgrader_config.py")
    for group in GROUPS:
        source = dest / "source" / group
        source.mkdir(parents=True)
        for name in CHECKS_FILES:
            shutil.copy(EXERCISES_DIR / name, source / name)
        shutil.copytree(EXERCISES_DIR / "documents", source / "documents", ignore=_IGNORE)
        (source / "hints").mkdir()
        shutil.copy(EXERCISES_DIR / group / "hints.md", source / "hints" / f"{group}.md")
        nbformat.write(group_notebook(group), source / f"{group}.ipynb")


def group_notebook(group: str) -> NotebookNode:
    """The SOURCE notebook of one group: intro, setup, borrowed modules, then per exercise its text,
    solution cell and public test cell (and the GPU-run check's grade cell in gpu_group())."""
    import nbformat

    rubric = load_rubric()
    exercises = rubric.in_group(group)
    all_modules = {ex.module for ex in rubric.exercises.values()}
    v4 = nbformat.v4
    cells = [v4.new_markdown_cell(_intro(group, exercises)),
             _locked(v4.new_code_cell((TEMPLATES / "notebook_setup.py").read_text().strip()), SETUP_CELL)]
    for dep in outside_dependencies(group):
        cells.append(v4.new_markdown_cell(
            f"## Your `{dep.module}` from {dep.group}\n\n"
            f"The exercises below build on `{', '.join(dep.names)}` from the assignment {dep.group}. Paste your "
            f"own code from there into the next cell (replace the whole cell) and run it. It is not graded here "
            f"(its points belong to {dep.group}), but the exercises that use it are graded with it, as "
            f"`{dep.group}/{dep.module}.py` is in the command-line kata: if it is wrong, the grader re-grades "
            "them with a correct one, so a mistake there costs its points once."))
        _, code = _split_module(dep.reference_file.read_text(), all_modules)
        cells.append(_solution(v4.new_code_cell(code), dep.module))
    for number, ex in enumerate(exercises, start=1):
        points = _int_points(ex.id, ex.points)
        docstring, code = _split_module(ex.reference_file.read_text(), all_modules)
        cells.append(v4.new_markdown_cell(
            f"## {number}. `{ex.module}` ({points} points)\n\n{docstring}\n\n"
            "Replace each `YOUR CODE HERE` in the next cell, run it, then run the test cell below it."))
        cells.append(_solution(v4.new_code_cell(code), ex.module))
        tests = v4.new_code_cell(public_test_cell(ex))
        tests.metadata["nbgrader"] = _nbgrader_meta(f"{ex.module}_tests", grade=True, locked=True, points=points)
        cells.append(tests)
    if group == gpu_group():
        points = _int_points("the GPU-run check", rubric.gpu_points)
        cells.append(v4.new_markdown_cell(
            f"## The GPU-run check ({points} points)\n\n"
            f"The grader moves your {', '.join(f'`{m}`' for m in _gpu_modules())} modules to a GPU (or a simulated "
            "one, `kata_gpu.py`) and runs them there: they must compute what they compute on the CPU, with every "
            "tensor forward uses on the input's device (register the mask with `register_buffer`; give a tensor "
            "made in forward `device=x.device`). The `..._runs_on_any_device` tests above check it."))
        gpu = v4.new_code_cell("# Nothing to do here: the grader records the GPU-run check in this cell.")
        gpu.metadata["nbgrader"] = _nbgrader_meta(GPU_CELL, grade=True, locked=True, points=points)
        cells.append(gpu)
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def public_test_cell(ex: Exercise) -> str:
    """The test cell of ``ex``: its public test file (exercises/<group>/test_<module>.py) without the
    module docstring, then one call running each of its tests (``run_public_tests``, from the setup cell)."""
    path = ex.public_test_file
    tree = ast.parse(path.read_text())
    tests = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    if not tests:
        raise ReleaseError(f"{path}: no test functions")
    _, body = _split_module(path.read_text(), set())
    header = f"# The public tests of {ex.module} (exercises/{ex.group}/test_{ex.module}.py). The grader runs more checks."
    return f"{header}\n{body}\n\nrun_public_tests({ex.module!r}, [{', '.join(tests)}])"


def _intro(group: str, exercises: list[Exercise]) -> str:
    readme = EXERCISES_DIR / group / "README.md"
    text = readme.read_text().strip() if readme.is_file() else f"# {group}: {load_rubric().groups[group].heading}"
    # The README's links are relative to exercises/<group>/; the notebook sits next to documents/ and hints/.
    text = text.replace("](../documents/", "](documents/").replace("](hints.md)", f"](hints/{group}.md)")
    modules = ", ".join(f"`{ex.module}`" for ex in exercises)
    return (f"{text}\n\n---\n\nThis notebook holds the exercises {modules}. Run the setup cell first; "
            "after each exercise, run its test cell: it runs the public tests of the command-line kata. "
            "The grader runs more checks than the ones you see, on the code of the solution cells only: "
            "each solution cell is graded as a module file of its own, so keep the imports it needs in it.")


def _split_module(source: str, module_names: set[str]) -> tuple[str, str]:
    """(module docstring, the rest of the module) with imports of other exercise modules removed, and a
    solution's student text (the README's and the hints' source, grader/authoring/student_text.py)."""
    source = without_student_text(source)
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree) or ""
    lines = source.splitlines()
    if docstring:
        lines = lines[tree.body[0].end_lineno:]
    imports = re.compile(r"^from (\w+) import ")
    kept = [line for line in lines if not ((m := imports.match(line)) and m.group(1) in module_names)]
    return docstring, re.sub(r"\n{4,}", "\n\n\n", "\n".join(kept)).strip() + "\n"


def _int_points(what: str, points: float) -> int:
    if points != int(points):
        raise ReleaseError(f"{what} has {points} points; nbgrader grade cells need whole points")
    return int(points)


def _nbgrader_meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
                   points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return meta


def _solution(cell: NotebookNode, module: str) -> NotebookNode:
    cell.metadata["nbgrader"] = _nbgrader_meta(module, solution=True)
    return cell


def _locked(cell: NotebookNode, grade_id: str) -> NotebookNode:
    """A read-only cell: nbgrader restores its content if a student edits it."""
    cell.metadata["nbgrader"] = _nbgrader_meta(grade_id, locked=True)
    return cell
