"""``python -m grader dev check``: what each exercise of the rubric still lacks, as rustlings' ``dev check``.

    python -m grader dev check   # one line per missing thing and exit 1; else "all N exercises complete", exit 0

A new exercise starts as its entry in ``tests/rubric.json``; this check then names every file it still
needs and every place that disagrees with the rubric, so the maintainer's checklist
(docs/maintainers.md, "Add an exercise") is checked, not remembered. For each exercise:

* its solution (``solutions/<group>/<module>.py``) parses, defines the rubric's public names and marks
  its bodies with ``### BEGIN SOLUTION`` (else the stub would be the answer);
* its stub (``exercises/<group>/<module>.py``) and ``exercises/shortcuts.json`` are what
  ``python -m grader.authoring.stubs`` writes;
* its hidden tests (``tests/<group>/test_<module>.py``) carry one kind marker each, a kind the rubric
  gives points, and every kind the rubric gives points has a test;
* its public tests (``exercises/<group>/test_<module>.py``) are named after the module, and call
  ``assert_does_its_own_work`` when the rubric forbids operations in it, each of a kind the trace knows
  (``exercises/kata_trace.py``'s ``CATEGORIES``);
* its group's ``README.md`` and ``hints.md`` have a ``## <module>`` section (the stub's message points there),
  which the stub generator writes from the solution's student text (grader/authoring/student_text.py), as
  it writes the README's build order: a section missing or out of date is fixed in the solution, then by
  running the generator.

No file in ``exercises/`` or ``solutions/`` that the rubric does not account for: the release copies
``exercises/`` to the students as it is, and the Gradescope bundle ``solutions/``, so a stray file (a
scratch module, a solution dropped into the students' tree) would ship. Each line ends with the exact
fix, as rustlings' ``dev check`` does.

For each group: its folder is on the students' path (``exercises/conftest.py``'s own copy of the group
list) and the top README and docs/students.md name it. The rubric's own consistency (kinds adding up
to the points, a stand-in for every exercise built on) is ``grader.rubric.load_rubric``'s: a rubric it
refuses is the one line printed. Everything is read as text (``ast``), nothing is imported or run but
the stub generator; the CI proofs that the tests pass and fail where they should are the project's tests
(grader/tests/test_hidden_tests.py, test_exercises.py, test_public_tests.py).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from grader.authoring import student_text, stubs
from grader.authoring.nbgrader_release import _IGNORE as RELEASE_IGNORES
from grader.rubric import EXERCISES_DIR, REPO_ROOT, Exercise, Rubric, load_rubric

HELP = "maintainers' tools: `dev check` says what each exercise of tests/rubric.json still lacks"
REGION = "### BEGIN SOLUTION"
OWN_WORK_CHECK = "assert_does_its_own_work"  # exercises/kata_checks.py: the public test of forbidden operations
TRACE = EXERCISES_DIR / "kata_trace.py"  # its CATEGORIES: the kinds of operation the rubric may forbid
# Files that keep a copy of the group list because they stand alone (the students' tree has no rubric).
GROUP_LIST_COPIES = ("exercises/conftest.py",)
# Documents that name every group (a new group must appear there).
GROUP_DOCUMENTS = ("README.md", "docs/students.md")
# exercises/'s own files beside the groups: the students' kit (kata_*.py modules too) and the documents.
KIT_FILES = ("conftest.py", "shortcuts.json", "known_results.json")
KIT_FOLDERS = ("documents",)
REGION_FIX = "put each body between ### BEGIN SOLUTION and ### END SOLUTION"
GENERATOR = "python -m grader.authoring.stubs"
STUDENT_TEXT = (f"BUILD_ORDER, README and HINTS between {student_text.BEGIN} and {student_text.END}, "
                "docs/maintainers.md")


def problems(root: Path = REPO_ROOT) -> list[str]:
    """One line per missing or inconsistent thing in the repository at ``root`` (empty: complete)."""
    try:  # read now, not from load_rubric's cache: the file is what is being edited
        rubric = load_rubric.__wrapped__(root / "tests")
    except (OSError, ValueError, KeyError, TypeError) as err:  # RubricError is a ValueError, as is bad JSON
        return [f"tests/rubric.json: {err}: fix tests/rubric.json, or add what it names"]
    lines: list[str] = []
    for ex in rubric.exercises.values():
        lines += [f"{ex.id}: {line}" for line in _exercise_problems(root, rubric, ex)]
    lines += _stub_problems(root, rubric)
    lines += _group_problems(root, rubric)
    lines += _unexpected_files(root, rubric)
    lines += _kind_problems(root, rubric)
    return lines


def _kind_problems(root: Path, rubric: Rubric) -> list[str]:
    """Forbidden kinds of operation the trace does not know (read from kata_trace.py's CATEGORIES as text)."""
    tree, lines = _parsed(root, _at(root, TRACE), "the trace of the operations that ran, with its CATEGORIES")
    known = {getattr(key, "value", None) for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and getattr(node.targets[0], "id", "") == "CATEGORIES" and isinstance(node.value, ast.Dict)
             for key in node.value.keys} if tree else set()
    return lines + [f"{ex.id}: {name} forbids {kind!r}, which {_shown(root, _at(root, TRACE))}'s CATEGORIES does not "
                    f"name: name one of {', '.join(sorted(known))} in tests/rubric.json, or add it to CATEGORIES"
                    for ex in rubric.exercises.values() for name, kinds in ex.forbidden for kind in kinds if kind not in known]


def _at(root: Path, path: Path) -> Path:
    """``path`` (where the rubric puts a file in this repository) in the repository at ``root``."""
    return root / path.relative_to(REPO_ROOT)


def _shown(root: Path, path: Path) -> str:
    return str(path.relative_to(root))


def _exercise_problems(root: Path, rubric: Rubric, ex: Exercise) -> list[str]:
    return [*_solution_problems(root, ex), *_hidden_test_problems(root, rubric, ex),
            *_public_test_problems(root, ex), *_document_problems(root, ex)]


def _parsed(root: Path, path: Path, write: str) -> tuple[ast.Module | None, list[str]]:
    """The file parsed, or None and the line saying why not (``write``: what a missing file must hold)."""
    if not path.is_file():
        return None, [f"no {_shown(root, path)}: write it, {write}"]
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path)), []
    except (SyntaxError, ValueError, UnicodeDecodeError) as err:
        return None, [f"{_shown(root, path)} does not parse: {err}: fix that line"]


def _solution_problems(root: Path, ex: Exercise) -> list[str]:
    path = _at(root, ex.reference_file)
    tree, lines = _parsed(root, path, f"the reference defining {', '.join(ex.names)}; {REGION_FIX}")
    if tree is None:
        return lines
    defined = _top_level_names(tree)
    missing = [name for name in ex.names if name not in defined]
    if missing:
        lines.append(f"{_shown(root, path)} does not define {', '.join(missing)} (the rubric's names): define "
                     f"{'them' if len(missing) > 1 else 'it'}, or change {ex.id}'s names in tests/rubric.json")
    if not any(line.strip() == REGION for line in path.read_text(encoding="utf-8").splitlines()):
        lines.append(f"{_shown(root, path)} has no {REGION} region, so its stub would be the answer: {REGION_FIX}")
    return lines


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _marks(nodes: list[ast.expr]) -> list[str]:
    """The names of the ``pytest.mark.<name>`` (or ``mark.<name>``) among decorators or a ``pytestmark``."""
    marks = []
    for node in nodes:
        node = node.func if isinstance(node, ast.Call) else node
        if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Attribute, ast.Name)):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else node.value.id
            if owner == "mark":
                marks.append(node.attr)
    return marks


def _param_marks(decorators: list[ast.expr]) -> list[str]:
    """The marks of a parametrized test's cases: ``pytest.param(..., marks=pytest.mark.edge)``, any
    expression choosing them included (each case is a test of its own, with the kind it is given)."""
    return [mark for node in decorators for keyword in ast.walk(node)
            if isinstance(keyword, ast.keyword) and keyword.arg == "marks"
            for mark in _marks([n for n in ast.walk(keyword.value) if isinstance(n, ast.Attribute)])]


def _test_functions(tree: ast.Module) -> list[tuple[str, list[str], list[str]]]:
    """``[(test name, its marks, its cases' marks)]``: module-level tests and those of ``Test*`` classes,
    with the marks of the module's ``pytestmark`` and of the class."""
    module_marks = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            module_marks += _marks(node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value])
    tests = [(node.name, module_marks, node) for node in tree.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")]
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name.startswith("Test"):
            tests += [(f"{cls.name}::{f.name}", module_marks + _marks(cls.decorator_list), f) for f in cls.body
                      if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")]
    return [(name, marks + _marks(f.decorator_list), _param_marks(f.decorator_list)) for name, marks, f in tests]


def _hidden_test_problems(root: Path, rubric: Rubric, ex: Exercise) -> list[str]:
    path = _at(root, ex.test_file)
    tree, lines = _parsed(root, path, "the hidden tests through the impl and reference fixtures, one kind marker "
                                      "each (tests/README.md)")
    if tree is None:
        return lines
    shown, points, known = _shown(root, path), ex.kind_points, set(rubric.kinds)
    tests = _test_functions(tree)
    if not tests:
        return [f"{shown} has no tests: write them, one kind marker each (tests/README.md)"]
    carried = set()
    for name, marks, case_marks in tests:
        kinds, case_kinds = sorted(set(marks) & known), sorted(set(case_marks) & known)
        if len(kinds) + bool(case_kinds) != 1:
            lines.append(f"{shown}::{name} carries the kind markers {kinds + case_kinds}: give it exactly one of "
                         f"{', '.join('@pytest.mark.' + k for k in rubric.kinds)}")
        lines += [f"{shown}::{name} has {kind} tests, but the rubric gives {ex.id}'s {kind} tests no points: mark "
                  f"it with a kind that has points, or give {kind} points in tests/rubric.json"
                  for kind in kinds + case_kinds if points.get(kind, 0.0) <= 0]
        carried.update(kinds + case_kinds)
    lines += [f"{shown} has no {kind} test, though the rubric gives {kind} {value:g} points: add a test marked "
              f"@pytest.mark.{kind}, or move those points to another kind in tests/rubric.json"
              for kind, value in points.items() if value > 0 and kind not in carried]
    return lines


def _public_test_problems(root: Path, ex: Exercise) -> list[str]:
    path = _at(root, ex.public_test_file)
    tree, lines = _parsed(root, path, f"the public tests, each named test_{ex.module}_... (kata_checks.load)")
    if tree is None:
        return lines
    shown, module = _shown(root, path), ex.module
    names = [name for name, _, _ in _test_functions(tree)]
    if not names:
        lines.append(f"{shown} has no tests: add them, each named test_{module}_...")
    # `pytest exercises -k <module>` selects a module's public tests by name (exercises/conftest.py)
    lines += [f"{shown}::{name} is not named test_{module}_..., so `pytest exercises -k {module}` would miss it: "
              f"rename it test_{module}_{name.removeprefix('test_')}"
              for name in names if not (name == f"test_{module}" or name.startswith(f"test_{module}_"))]
    if ex.forbidden and not any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == OWN_WORK_CHECK
                                and [getattr(a, "value", None) for a in node.args] == [module]
                                for node in ast.walk(tree)):
        lines.append(f"{shown} has no test calling {OWN_WORK_CHECK}({module!r}), though the rubric forbids "
                     f"operations in {', '.join(name for name, _ in ex.forbidden)}: add "
                     f"test_{module}_does_its_own_work calling it")
    return lines


def _document_problems(root: Path, ex: Exercise) -> list[str]:
    """The module's sections of its group's README.md and hints.md, which the generator writes from the
    solution's student text: the fix is there, never in the generated file."""
    lines = []
    for name, part in (("README.md", "README"), ("hints.md", "HINTS")):
        path = _at(root, ex.stub_file).parent / name
        if path.is_file() and f"\n## {ex.module}\n" not in path.read_text(encoding="utf-8"):
            lines.append(f"{_shown(root, path)} has no '## {ex.module}' section: write it as {part} in the student "
                         f"text at the end of {_shown(root, _at(root, ex.reference_file))} ({STUDENT_TEXT}), then "
                         f"run `{GENERATOR}`")
    return lines


def _stub_problems(root: Path, rubric: Rubric) -> list[str]:
    """The stubs and exercises/shortcuts.json against the generator's output; left to the solution's
    lines when a solution is missing or broken (the generator reads them all)."""
    if not all(_at(root, ex.reference_file).is_file() for ex in rubric.exercises.values()):
        return []
    try:
        stale = stubs.check(root)
    except student_text.StudentTextError as err:  # its message ends with the fix
        return [f"the stubs cannot be generated: {err}"]
    except (SyntaxError, ValueError) as err:
        return [f"the stubs cannot be generated: {err}: fix the solution it names"]
    except ImportError as err:
        return [f"the stubs cannot be checked: {err}: pip install -e \".[instructor]\" (it brings nbgrader)"]
    owners = {_at(root, ex.stub_file): ex.id for ex in rubric.exercises.values()}
    return [(f"{owners[path]}: " if path in owners else "")
            + f"{_shown(root, path)} is not what the stub generator writes"
            + (" (its generated regions are the solutions' student text: a change to them belongs there)"
               if path.suffix == ".md" else "") + f": run `{GENERATOR}`"
            for path in stale]


def _group_problems(root: Path, rubric: Rubric) -> list[str]:
    lines = []
    for group in rubric.groups:
        folder = _at(root, EXERCISES_DIR / group)
        lines += [f"{group}: no {_shown(root, folder / name)}: write the group's own text with the marker lines of its "
                  f"generated regions (copy them from another group's), then run `{GENERATOR}`"
                  for name in ("README.md", "hints.md") if not (folder / name).is_file()]
        lines += [f"{group}: {doc} does not name `exercises/{group}`: add a line naming it" for doc in GROUP_DOCUMENTS
                  if f"`exercises/{group}`" not in _text(root / doc)]
    for copy in GROUP_LIST_COPIES:
        listed = _assigned_literal(root / copy, "GROUPS") if (root / copy).is_file() else None
        if listed != tuple(rubric.groups):
            lines.append(f"{copy}: GROUPS is {listed}, the rubric's groups are {tuple(rubric.groups)}: set "
                         f"GROUPS = {tuple(rubric.groups)}")
    return lines


def _unexpected_files(root: Path, rubric: Rubric) -> list[str]:
    """Every file of ``exercises/`` and ``solutions/`` that no exercise or group of the rubric accounts for
    (what the release leaves out, caches, is not looked at)."""
    expected: dict[str, set[str]] = {"exercises": {*KIT_FILES, *KIT_FOLDERS, *rubric.groups},
                                     "solutions": {"conftest.py", *rubric.groups}}
    for ex in rubric.exercises.values():
        expected[f"exercises/{ex.group}"] = expected.get(f"exercises/{ex.group}", {"README.md", "hints.md"})
        expected[f"exercises/{ex.group}"] |= {f"{ex.module}.py", f"test_{ex.module}.py"}
        expected.setdefault(f"solutions/{ex.group}", set()).add(f"{ex.module}.py")
    lines = []
    for folder, names in expected.items():
        if not (root / folder).is_dir():
            continue  # a missing group folder: the lines above name its files
        found = [p.name for p in sorted((root / folder).iterdir())]
        for name in sorted(set(found) - names - RELEASE_IGNORES(str(root / folder), found)):
            if not (folder == "exercises" and name.startswith("kata_") and name.endswith(".py")):
                lines.append(_unexpected(folder, name, (root / folder / name).is_dir()))
    return lines


def _unexpected(folder: str, name: str, is_folder: bool) -> str:
    """The line for a file (or folder) of ``exercises/`` or ``solutions/`` the rubric does not account for."""
    path, top, students = f"{folder}/{name}" + ("/" if is_folder else ""), "/" not in folder, folder.startswith("exercises")
    ships = "the release gives exercises/ to the students" if students else "the Gradescope bundle copies solutions/"
    if top and is_folder:
        return f"{path} is not a group of tests/rubric.json ({ships} as it is): delete it, or add \"{name}\" " \
               "to the rubric's groups"
    module = name.removesuffix(".py").removeprefix("test_" if students else "")
    if not top and not is_folder and name.endswith(".py") and not module.startswith("test_"):
        return f"{path} belongs to no exercise of tests/rubric.json ({ships} as it is): delete it, or add " \
               f"\"{folder.split('/', 1)[1]}/{module}\" to tests/rubric.json"
    holds = {(True, True): f"its own files are {', '.join(KIT_FILES + KIT_FOLDERS)} and the kata_*.py modules",
             (True, False): "it holds conftest.py and a folder per group",
             (False, True): "a group's folder holds its modules, their test_<module>.py, README.md and hints.md",
             (False, False): "a group's folder holds its exercises' references"}[top, students]
    return f"{path} is no part of the kata ({ships} as it is; {holds}): delete it"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _assigned_literal(path: Path, name: str) -> object:
    """The literal a module assigns to ``name`` at top level (a list as a tuple), read without importing
    the module; None when it assigns none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            value = ast.literal_eval(node.value)
            return tuple(value) if isinstance(value, list) else value
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``dev check`` under the CLI's ``dev`` command (its sub-parsers are of the CLI's parser class)."""
    tools = parser.add_subparsers(dest="dev_command", metavar="TOOL", required=True)
    tools.add_parser("check", help="say what each exercise of tests/rubric.json still lacks (exit 1 if anything)")


def run(args: argparse.Namespace) -> int:
    """Print what lacks, one line each, and return 1; or the count of complete exercises and return 0."""
    lines = problems()
    for line in lines:
        print(line)
    if lines:
        return 1
    print(f"all {len(load_rubric().exercises)} exercises complete")
    return 0
