"""Build a release: the students' repository and an nbgrader course for classes that use Jupyter.

    build_release(Path("release"))  ->  release/student/   (hand this to students, e.g. as a
                                                            GitHub Classroom template repository)
                                        release/nbgrader/  (instructor only: holds the solutions)

Why two outputs: the command-line kata (``exercises/`` + pytest) is the primary format, but some
classes work in Jupyter and grade with nbgrader; its SOURCE notebooks must hold the solutions and
the hidden tests, which nbgrader's ``generate_assignment`` strips. The student folder is built only
from ``exercises/`` (already stubbed by grader/stubs.py) and templates, never from ``solutions/`` or
``tests/``, so no solution text can reach it; grader/tests/test_release.py scans it to make sure.

The notebook test cells live in grader/templates/notebook_tests/<group>/<module>.py: plain Python
written for a notebook's namespace (they call the functions the cells above define and the helpers
of the read-only setup cell), self-contained, with their randomized checks between
``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from grader import attention_view, progress
from grader.rubric import GROUPS, REPO_ROOT, Exercise, load_rubric

if TYPE_CHECKING:  # nbformat comes with nbgrader (the `instructor` extra): imported where notebooks are made
    from nbformat.notebooknode import NotebookNode

TEMPLATES = Path(__file__).resolve().parent / "templates"
NOTEBOOK_TESTS = TEMPLATES / "notebook_tests"
EXERCISES_DIR = REPO_ROOT / "exercises"
ASSIGNMENT = "attention-kata"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ipynb_checkpoints")


class ReleaseError(Exception):
    """The release cannot be built (reported as one line by the command line)."""


def build_release(out: Path) -> None:
    """Write ``out/student`` and ``out/nbgrader``; ``out`` must not exist or be an empty folder.

    Refusing a non-empty ``out`` keeps a stale file of an earlier release (or anything else) from
    being shipped to students along with the new one.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not empty: choose a new or empty directory")
    if not EXERCISES_DIR.is_dir():
        raise ReleaseError(f"{EXERCISES_DIR} is missing: generate the stubs first (python -m grader.stubs)")
    build_student_release(out / "student")
    build_nbgrader_course(out / "nbgrader")


# --- the student repository ----------------------------------------------------------------------


# The students' own tools, shipped as the very files the grader's `check` and `view` commands run.
STUDENT_SCRIPTS = {"check_progress.py": progress.__file__, "view_attention.py": attention_view.__file__}


def build_student_release(dest: Path) -> None:
    """Copy ``exercises/`` (documents included) and add the student README, pytest.ini, a GitHub
    Classroom workflow, and the progress and attention-view scripts with the module list they read."""
    rubric = load_rubric()
    shutil.copytree(EXERCISES_DIR, dest / "exercises", ignore=_IGNORE)
    for name, source in STUDENT_SCRIPTS.items():
        shutil.copy(source, dest / name)
    modules = [{"group": ex.group, "module": ex.module} for ex in rubric.exercises.values()]
    (dest / progress.MODULES_FILE).write_text(json.dumps(
        {"about": "The modules in the order of the chapter (from the kata's rubric); check_progress.py reads it.",
         "modules": modules}, indent=1) + "\n")
    lines = []
    for number, group in enumerate(GROUPS, start=1):
        modules = [ex.module for ex in rubric.exercises.values() if ex.group == group]
        lines.append(f"{number}. `exercises/{group}` -- {rubric.groups[group].heading}: "
                     + ", ".join(f"`{m}.py`" for m in modules))
    readme = Template((TEMPLATES / "student_README.md").read_text()).substitute(group_list="\n".join(lines))
    (dest / "README.md").write_text(readme)
    shutil.copy(TEMPLATES / "pytest.ini", dest / "pytest.ini")
    shutil.copy(TEMPLATES / "requirements.txt", dest / "requirements.txt")
    shutil.copy(TEMPLATES / "student_gitignore", dest / ".gitignore")
    workflows = dest / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(TEMPLATES / "github-classroom.yml", workflows / "classroom.yml")


# --- the nbgrader course -------------------------------------------------------------------------


def build_nbgrader_course(dest: Path) -> None:
    """Write ``nbgrader_config.py``, one SOURCE notebook per group under ``source/attention-kata``, and the
    documents and hints beside them (``documents/``, ``hints/<group>.md``: nbgrader releases the assignment
    folder's other files too)."""
    import nbformat

    source = dest / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    shutil.copy(TEMPLATES / "nbgrader_config.py", dest / "nbgrader_config.py")
    shutil.copytree(EXERCISES_DIR / "documents", source / "documents", ignore=_IGNORE)
    (source / "hints").mkdir()
    for group in GROUPS:
        shutil.copy(EXERCISES_DIR / group / "hints.md", source / "hints" / f"{group}.md")
    for group in GROUPS:
        nbformat.write(group_notebook(group), source / f"{group}.ipynb")


def group_notebook(group: str) -> NotebookNode:
    """The SOURCE notebook of one group: intro, setup, then per exercise text, solution, tests.

    A notebook is one namespace, so modules that import another group's module (the wrapper's
    ``from causal_attention import CausalAttention``) get that module as a read-only reference
    cell instead of the import.
    """
    import nbformat

    rubric = load_rubric()
    exercises = [ex for ex in rubric.exercises.values() if ex.group == group]
    all_modules = {ex.module for ex in rubric.exercises.values()}
    v4 = nbformat.v4
    cells = [v4.new_markdown_cell(_intro(group, exercises))]
    cells.append(_locked(v4.new_code_cell((NOTEBOOK_TESTS / "setup.py").read_text().strip()), "setup"))
    outside = sorted({dep for ex in exercises for dep in ex.depends_on if not dep.startswith(group + "/")})
    for dep_id in outside:
        dep = rubric.exercises[dep_id]
        _, code = _split_module(dep.reference_file.read_text(), all_modules)
        code = "\n".join(line for line in code.splitlines() if not _is_marker(line))
        header = (f"# Reference {dep.module} (exercise {dep_id}), read-only: the exercises below build on it.\n"
                  "# In the command-line kata they import your own version instead.\n")
        cells.append(_locked(v4.new_code_cell(header + code), f"{dep.module}_reference"))
    for number, ex in enumerate(exercises, start=1):
        points = _int_points(ex)
        docstring, code = _split_module(ex.reference_file.read_text(), all_modules)
        cells.append(v4.new_markdown_cell(
            f"## {number}. `{ex.module}` ({points} points)\n\n{docstring}\n\n"
            "Replace each `YOUR CODE HERE` in the next cell, run it, then run the test cell below it."
        ))
        solution = v4.new_code_cell(code)
        solution.metadata["nbgrader"] = _nbgrader_meta(ex.module, solution=True)
        cells.append(solution)
        tests = v4.new_code_cell((NOTEBOOK_TESTS / group / f"{ex.module}.py").read_text().strip())
        tests.metadata["nbgrader"] = _nbgrader_meta(f"{ex.module}_tests", grade=True, locked=True, points=points)
        cells.append(tests)
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def _intro(group: str, exercises: list[Exercise]) -> str:
    readme = EXERCISES_DIR / group / "README.md"
    text = readme.read_text().strip() if readme.is_file() else f"# {group}: {load_rubric().groups[group].heading}"
    # The README's links are relative to exercises/<group>/; the notebooks sit next to documents/ and hints/.
    text = text.replace("](../documents/", "](documents/").replace("](hints.md)", f"](hints/{group}.md)")
    modules = ", ".join(f"`{ex.module}`" for ex in exercises)
    return (f"{text}\n\n---\n\nThis notebook holds the exercises {modules}. Run the setup cell first; "
            "after each exercise, run its test cell: it checks the worked examples of the documents. "
            "The grader runs more checks than the ones you see.")


def _split_module(source: str, module_names: set[str]) -> tuple[str, str]:
    """(module docstring, the rest of the module) with imports of other exercise modules removed."""
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree) or ""
    lines = source.splitlines()
    if docstring:
        lines = lines[tree.body[0].end_lineno:]
    imports = re.compile(r"^from (\w+) import ")
    kept = [line for line in lines if not ((m := imports.match(line)) and m.group(1) in module_names)]
    return docstring, re.sub(r"\n{4,}", "\n\n\n", "\n".join(kept)).strip() + "\n"


def _is_marker(line: str) -> bool:
    return line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION")


def _int_points(ex: Exercise) -> int:
    if ex.points != int(ex.points):
        raise ReleaseError(f"{ex.id} has {ex.points} points; nbgrader test cells need whole points")
    return int(ex.points)


def _nbgrader_meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
                   points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return meta


def _locked(cell: NotebookNode, grade_id: str) -> NotebookNode:
    """A read-only cell: nbgrader restores its content if a student edits it."""
    cell.metadata["nbgrader"] = _nbgrader_meta(grade_id, locked=True)
    return cell
