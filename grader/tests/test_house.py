"""The house rules a newcomer can rely on (docs/maintainers.md): modules of one job, short functions, no
import loops, walls one way. Checked on the source as text (ast), so a rule broken anywhere fails here with where.

- no module over MAX_MODULE_LINES lines, no function over MAX_FUNCTION_LINES;
- no module imports another in a loop, late (function-level) imports included: a late import may defer a
  costly library, never hide a loop;
- the grader's wings stand on FLOORS: a module imports its own wing and the floors below, never a wing
  above (what two wings share lives on the floor below both), and every module of grader/ is on a floor.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections import defaultdict
from functools import cache
from pathlib import Path

from grader.rubric import REPO_ROOT

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
# The floors of grader/, lowest first (docs/maintainers.md, "The layout"): a folder (its wing) or a file.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("grader/__init__.py", "grader/rubric.py", "grader/files.py", "grader/safe_text.py", "grader/visibility.py",
     "grader/commands.py", "grader/blind_ids.py", "grader/progress.py", "grader/progress_pytest.py",
     "grader/attention_view.py", "grader/student_commands.py"),
    ("grader/sandbox/",),
    ("grader/grading/",),
    ("grader/authoring/",),
    ("grader/reports/",),
    ("grader/classroom/",),
    ("grader/cli.py", "grader/__main__.py"),
)
# Not the project's code: the documents' own notebooks, hostile submissions kept as test data.
NOT_OURS = ("exercises/documents/", "grader/tests/submissions/")


@cache
def project_files() -> dict[str, ast.Module]:
    """Every tracked or new Python file of the project (as git sees it), parsed (once for this module)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    files = {}
    for rel in listed:
        path = REPO_ROOT / rel
        if rel.startswith(NOT_OURS) or not path.is_file():
            continue
        files[rel] = ast.parse(path.read_text(encoding="utf-8"), rel)
    return files


def test_no_module_over_the_limit_and_no_long_function() -> None:
    files = project_files()
    long_modules = [f"{rel}: {n} lines" for rel in files
                    if (n := (REPO_ROOT / rel).read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES]
    long_functions = [f"{rel}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
                      for rel, tree in files.items() for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"


def _module_name(rel: str) -> str:
    """The name an import uses: dotted inside the grader package, the file's stem elsewhere (tests/,
    exercises/, solutions/ and grader/tests/ put their folders on sys.path)."""
    path = Path(rel)
    if rel.startswith("grader/") and not rel.startswith("grader/tests/"):
        parts = path.with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return path.stem


def _tree(rel: str) -> str:
    """Which files a bare import can reach: its own top folder (grader/tests is one of its own)."""
    return "grader/tests" if rel.startswith("grader/tests/") else rel.split("/", 1)[0]


def _imported(rel: str, tree: ast.Module) -> set[str]:
    """The names of the modules ``rel`` imports anywhere in it (relative imports resolved)."""
    package = _module_name(rel).rpartition(".")[0] if rel.startswith("grader/") else ""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)] if package else []
                base = ".".join([*up, base] if base else up)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(files: dict[str, ast.Module]) -> dict[str, set[str]]:
    """{file: the project files it imports}; a bare name resolves in its own folder first, then its tree."""
    by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rel in files:
        by_name[(_tree(rel), _module_name(rel))].append(rel)
        if rel.startswith("grader/") and not rel.startswith("grader/tests/"):
            by_name[("grader", _module_name(rel))].append(rel)
    graph: dict[str, set[str]] = {}
    for rel, tree in files.items():
        targets = set()
        for name in _imported(rel, tree):
            tree_key = "grader" if name.startswith("grader.") or name == "grader" else _tree(rel)
            found = by_name.get((tree_key, name), [])
            same_folder = [f for f in found if Path(f).parent == Path(rel).parent]
            targets.update(same_folder or found[:1])
        targets.discard(rel)
        # a package's __init__ is run by importing any of its modules: that edge is not a loop of ours
        graph[rel] = {t for t in targets if not (t.endswith("__init__.py") and rel.startswith(t[:-len("__init__.py")]))}
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_another_in_a_loop() -> None:
    assert loops(import_graph(project_files())) == []


def test_the_loop_finder_finds_a_loop_through_a_late_import() -> None:
    """The check above can fail: two modules that import each other, one of them inside a function."""
    a = ast.parse("import grader.b\n")
    b = ast.parse("def f():\n    from grader import a\n")
    assert loops(import_graph({"grader/a.py": a, "grader/b.py": b})) == [["grader/a.py", "grader/b.py"]]


def floor_of(rel: str) -> int | None:
    """The floor (an index of FLOORS) of a module of grader/ (not its tests); None: on none."""
    for level, rooms in enumerate(FLOORS):
        if any(rel == room or (room.endswith("/") and rel.startswith(room)) for room in rooms):
            return level
    return None


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    """Every import of grader/ that reaches a floor above its own, and every module of grader/ on no floor."""
    ours = [rel for rel in graph if rel.startswith("grader/") and not rel.startswith("grader/tests/")]
    found = [f"{rel}: on no floor of test_house.FLOORS (docs/maintainers.md, \"The layout\")"
             for rel in ours if floor_of(rel) is None]
    for rel in ours:
        for target in sorted(graph[rel]):
            below, above = floor_of(rel), floor_of(target)
            if below is not None and above is not None and above > below:
                found.append(f"{rel} imports {target}, a floor above it: move what they share to the floor below both")
    return found


def test_no_wing_imports_a_wing_above_it() -> None:
    assert arrows_up(import_graph(project_files())) == []


def test_the_wall_check_finds_an_arrow_up_and_a_module_on_no_floor() -> None:
    """The check above can fail: the sandbox importing a report, and a wing the floors do not name."""
    sandbox = ast.parse("from grader.reports import text\n")
    graph = import_graph({"grader/sandbox/x.py": sandbox, "grader/reports/text.py": ast.parse(""),
                          "grader/lms/canvas.py": ast.parse("")})
    assert arrows_up(graph) == [
        "grader/lms/canvas.py: on no floor of test_house.FLOORS (docs/maintainers.md, \"The layout\")",
        "grader/sandbox/x.py imports grader/reports/text.py, a floor above it: move what they share to the floor "
        "below both"]


def test_the_guide_states_the_floors_the_check_holds() -> None:
    """docs/maintainers.md's "The floors" lists FLOORS' rooms, floor by floor, in order: the guide a newcomer
    trusts first says where a module may import from, and says it truly."""
    text = (REPO_ROOT / "docs" / "maintainers.md").read_text(encoding="utf-8")
    section = text.split("### The floors\n", 1)[1].split("\n#", 1)[0]
    items = re.findall(r"^\d+\. (.*?)(?=^\d+\. |\n\n|\Z)", section, re.M | re.S)
    stated = tuple(tuple(re.findall(r"`(grader/[^`]*)`", item)) for item in items)
    assert stated == FLOORS


def test_the_command_line_only_assembles_the_commands_the_wings_declare() -> None:
    """Adding a command edits one wing (docs/maintainers.md, "Add a command"): grader/cli.py declares no option
    and no command, and it takes the ``COMMANDS`` of every module that declares some, each name once."""
    files = project_files()
    cli = files["grader/cli.py"]
    declared = [node.attr for node in ast.walk(cli) if isinstance(node, ast.Attribute) and node.attr == "add_argument"]
    assert declared == [], "grader/cli.py declares options: they belong to a wing's commands.py"
    declaring = {rel for rel, tree in files.items() if rel.startswith("grader/") and rel != "grader/cli.py"
                 and any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMMANDS" for t in node.targets)
                         for node in tree.body)}
    assert {"grader/reports/commands.py", "grader/classroom/commands.py"} <= declaring
    assert declaring <= import_graph(files)["grader/cli.py"], "a wing's COMMANDS that grader/cli.py does not assemble"
    names = [node.args[0].value for rel in declaring for node in ast.walk(files[rel])
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Command"
             and isinstance(node.args[0], ast.Constant)]
    assert len(names) == len(set(names)), f"a command declared twice: {sorted(names)}"
