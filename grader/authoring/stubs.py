"""Generate the student stubs in ``exercises/`` from the reference solutions in ``solutions/``.

    python -m grader.authoring.stubs           # (re)write exercises/<group>/<module>.py for every exercise,
                                               # and the generated parts of each group's README.md and hints.md
    python -m grader.authoring.stubs --check   # exit 1 and list the files that differ; 0 when in sync

Why nbgrader: the solutions mark their bodies with ``### BEGIN SOLUTION`` / ``### END SOLUTION``,
nbgrader's own convention, so its ``ClearSolutions`` preprocessor is the tool that removes them.
It works on notebooks, so each ``.py`` file becomes a one-cell notebook for the round trip.

Why a placeholder: ``code_stub`` is one fixed string for every region, but the student-facing
message must name the function it sits in (``CausalAttention.forward``) and the README section
to read. The stub therefore carries ``__KATA_WHERE__``; afterwards ``ast`` finds the ``def``
enclosing each placeholder and fills in its qualified name.

Why the students' text is generated too: each solution ends with its student text (its line in the
group README's build order, its README section, its hints), so that the solution is the single source
of what its students read, as in nbgrader, and a new exercise is its rubric entry, its solution, its
hidden and its public tests: nothing else by hand. Why its form, string literals named ``BUILD_ORDER``,
``README`` and ``HINTS`` between the full-line markers ``### BEGIN STUDENT TEXT`` / ``### END STUDENT
TEXT`` at the module's end: the markers are nbgrader's kind, so the block is stripped from the stub as a
body is (the stub must not carry the hints: students open them level by level); the Markdown is pasted
as it is (raw strings, no escapes, no comment marks) and read with ``ast`` (nothing imported); each part is
named for where it goes. grader/authoring/student_text.py reads it and writes it into the group's
``README.md`` and ``hints.md``, in their marked generated regions, around the group's own hand-written
prose (intro, rules).

Only the modules listed in ``tests/rubric.json`` are generated, the generated regions of their groups'
``README.md`` and ``hints.md``, and ``exercises/shortcuts.json`` (the rubric's ``forbidden`` operations
per public name, which the public tests read); public tests, ``exercises/conftest.py`` and
``exercises/kata_checks.py`` (the checks and diagnoses shared with the hidden tests) are hand-written and
left alone.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

from grader.authoring.student_text import group_documents, without_student_text
from grader.rubric import REPO_ROOT, load_rubric

PLACEHOLDER = "__KATA_WHERE__"
SECTION_PLACEHOLDER = "__KATA_SECTION__"
CODE_STUB = (
    f"# TODO: write the body of {PLACEHOLDER} here, then delete the raise below.\n"
    f'raise NotImplementedError("{PLACEHOLDER}: not written yet -- see {SECTION_PLACEHOLDER}")'
)


def exercise_ids(repo_root: Path = REPO_ROOT) -> list[str]:
    """``["01_simple_attention/attention_scores", ...]``: the rubric is the one list of exercises."""
    return list(load_rubric(repo_root / "tests").exercises)


def _clear_solutions(source: str) -> str:
    """Run nbgrader's ClearSolutions over ``source`` wrapped as a one-cell notebook."""
    import nbformat  # here, not at the top: importing nbgrader takes 2 s, and importers of this module
    from nbgrader.preprocessors import ClearSolutions  # (the project's tests) may never make a stub
    from traitlets.config import Config

    cell = nbformat.v4.new_code_cell(source)
    # Marked as a solution cell so that nbgrader's metadata check (enforce_metadata) is satisfied.
    cell.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False, "grade_id": "stub"}
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    config = Config()
    config.ClearSolutions.code_stub = {"python": CODE_STUB}
    # Full-line markers only: a docstring that merely mentions the words is left alone.
    config.ClearSolutions.begin_solution_delimeter = "### BEGIN SOLUTION"
    config.ClearSolutions.end_solution_delimeter = "### END SOLUTION"
    nb, _ = ClearSolutions(config=config).preprocess(nb, {})
    return nb.cells[0].source


def _enclosing_defs(tree: ast.Module) -> dict[int, str]:
    """Map each line number inside a function to that function's qualified name (innermost wins)."""
    owner: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                        owner[line] = qualname
                visit(child, qualname + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return owner


def make_stub(solution_source: str, exercise_id: str) -> str:
    """The stub text for one solution module: every solution region becomes a TODO and a raise."""
    group, module = exercise_id.split("/")
    cleared = _clear_solutions(without_student_text(solution_source, f"solutions/{exercise_id}.py"))
    owner = _enclosing_defs(ast.parse(cleared))
    section = f"exercises/{group}/README.md, section '{module}'"
    lines = cleared.split("\n")
    for number, line in enumerate(lines, start=1):
        if PLACEHOLDER in line:
            if number not in owner:
                raise ValueError(f"{exercise_id}: a solution region at line {number} is not inside a def")
            lines[number - 1] = line.replace(PLACEHOLDER, owner[number]).replace(SECTION_PLACEHOLDER, section)
    return "\n".join(lines)


def generate(repo_root: Path = REPO_ROOT) -> dict[Path, str]:
    """``{exercises/<group>/<module>.py: stub text}`` for every exercise in the rubric, its group's
    ``README.md`` and ``hints.md`` with their generated regions rewritten from the solutions' student text,
    and ``exercises/shortcuts.json``: the rubric's forbidden operations per public name, for the public tests."""
    stubs: dict[Path, str] = {}
    for ex_id in exercise_ids(repo_root):
        source = (repo_root / "solutions" / f"{ex_id}.py").read_text()
        stubs[repo_root / "exercises" / f"{ex_id}.py"] = make_stub(source, ex_id)
    rubric = load_rubric(repo_root / "tests")
    for group in rubric.groups:
        stubs.update(group_documents(repo_root, group, [ex.module for ex in rubric.in_group(group)]))
    table = rubric.shortcut_table
    stubs[repo_root / "exercises" / "shortcuts.json"] = json.dumps(table, indent=1) + "\n"
    return stubs


def check(repo_root: Path = REPO_ROOT) -> list[Path]:
    """The generated files that are missing from ``exercises/`` or differ from it (empty: in sync)."""
    return [
        path for path, text in generate(repo_root).items() if not path.is_file() or path.read_text() != text
    ]


def write(repo_root: Path = REPO_ROOT) -> list[Path]:
    """Write every stub; returns the paths written."""
    written = []
    for path, text in generate(repo_root).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.authoring.stubs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if any generated file is out of date")
    args = parser.parse_args(argv)
    if args.check:
        stale = check()
        for path in stale:
            print(f"out of date: {path.relative_to(REPO_ROOT)}")
        if stale:
            print("run `python -m grader.authoring.stubs` to regenerate")
            return 1
        print(f"{len(exercise_ids())} stubs and their groups' README.md and hints.md in sync with solutions/")
        return 0
    for path in write():
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
