"""A submitted notebook -> the module layout the grader knows (``<group>/<module>.py``), by reading it.

    files = notebook_modules(Path("submitted/alice/03_causal/03_causal.ipynb"), "03_causal")
    # {"03_causal/causal_mask.py": b"...", "03_causal/attention_dropout.py": b"...", ...}

The notebook is untrusted input and is never executed: it is read as JSON (at most MAX_NOTEBOOK_BYTES,
a regular file, never through a symlink), and each module is the source of the one code cell whose
nbgrader metadata names it (``grade_id`` = the module, ``solution`` true), the cells that
grader/authoring/nbgrader_release.py wrote. The group's own modules and the modules it borrows from earlier
groups (04_multihead's ``causal_attention`` cell) are all required; anything else in the notebook
(markdown, the test cells, cells the student added) is ignored, as a .py submission's other files are,
but for the helpers a solution cell uses from a cell the student added (``borrowed_helpers``): nbgrader's
own autograde runs the whole notebook, so those are appended to the cell's module, and named in a note.
Whatever is wrong (not JSON, not a notebook, a cell missing or twice, a cell over MAX_CELL_BYTES) is
a NotebookError with one line for the instructor.

Each module file is the cell's source after one header line: the names the notebook's setup cell
gives every cell (``math``, ``torch``, ``nn``, ``inputs``, ``batch``), the imports of other exercise
modules that the module's file has in the command-line kata (``from causal_attention import
CausalAttention``; the release leaves them out of the cell, as the notebook defines those names in cells
of their own), and the import of each name the cell uses that an earlier solution cell defines
(cell_imports), as in the notebook, where a cell sees what the cells above it defined. Line numbers in the grader's
messages therefore count the cell's lines from 2.
"""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

from grader.attention_view import INPUTS
from grader.files import UnreadableFile, read_regular
from grader.grading import script_split
from grader.grading.intake import one_line
from grader.sandbox.bundle import MAX_FILE_BYTES
from grader.rubric import load_rubric

MAX_NOTEBOOK_BYTES = 20 * 2**20
MAX_CELL_BYTES = MAX_FILE_BYTES  # as for a module file of a .py submission
# The names the notebook's setup cell (grader/authoring/templates/notebook_setup.py) gives every cell; inputs is
# kata_checks.JOURNEY, the documents' "Your journey starts with one step" (test_nbgrader_notebooks checks both),
# taken from the grader's one copy: attention_view's, which ships stand-alone.
JOURNEY = INPUTS
SETUP_NAMES = (f"import math, torch, torch.nn as nn; inputs = torch.tensor({JOURNEY}); "
               "batch = torch.stack((inputs, inputs), dim=0)")
SETUP_DEFINES = frozenset({"math", "torch", "nn", "inputs", "batch"})


class NotebookError(Exception):
    """The notebook cannot be graded; the message is one line for the instructor."""


def read_notebook(path: Path) -> dict:
    """The notebook's JSON (a dict with a list of cells); NotebookError for anything else."""
    try:
        data = read_regular(path, MAX_NOTEBOOK_BYTES)
    except UnreadableFile as err:
        why = {"unopenable": f"cannot be read ({err})", "not regular": "not a regular file",
               "too large": f"larger than {MAX_NOTEBOOK_BYTES // 2**20} MB"}[err.kind]
        raise NotebookError(f"{path.name}: {why}") from None
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise NotebookError(f"{path.name}: not a notebook (unreadable JSON: {one_line(err)})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path.name}: not a notebook (no list of cells)")
    return nb


def solution_cells(nb: dict, modules: list[str], name: str) -> dict[str, str]:
    """{module: the source of its solution cell} for each of ``modules``; NotebookError when one is
    missing, twice there, not code, or too large. ``name`` names the notebook in messages."""
    found: dict[str, str] = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(nbgrader, dict) or nbgrader.get("solution") is not True:
            continue
        module = nbgrader.get("grade_id")
        if module not in modules:
            continue
        if module in found:
            raise NotebookError(f"{name}: two solution cells named {module!r}")
        if cell.get("cell_type") != "code":
            raise NotebookError(f"{name}: the solution cell {module!r} is not a code cell")
        found[module] = _source(cell.get("source"), module, name)
    missing = [module for module in modules if module not in found]
    if missing:
        raise NotebookError(f"{name}: no solution cell {', '.join(map(repr, missing))} (its nbgrader grade_id); "
                            "was it deleted, or is this another assignment's notebook?")
    return found


def _source(source: object, module: str, name: str) -> str:
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise NotebookError(f"{name}: the solution cell {module!r} has no text source")
    if len(source.encode("utf-8", "surrogatepass")) > MAX_CELL_BYTES:
        raise NotebookError(f"{name}: the solution cell {module!r} is larger than {MAX_CELL_BYTES // 1024} KB")
    return source


def module_file(module: str, source: str, imports: list[str] = ()) -> bytes:
    """The module file of a solution cell: the header line (see the module docstring), then the cell."""
    header = "; ".join(dict.fromkeys([SETUP_NAMES, *exercise_imports(module), *imports]))
    return (header + "  # the notebook's setup cell, and the cells this one builds on\n" + source).encode(
        "utf-8", "surrogatepass")


def cell_imports(cells: dict[str, str]) -> dict[str, list[str]]:
    """{module: imports} giving each cell the names it uses, binds nowhere, and an earlier solution cell
    (in the notebook's order) defines at its top level: ``from causal_mask import causal_attention_weights``,
    what its ``.py`` file would say. Read from the code (ast), never run; a cell that does not parse
    gets none and gives none."""
    known = set(dir(builtins)) | SETUP_DEFINES
    defined: dict[str, str] = {}  # name -> the module of the latest earlier cell defining it at its top level
    result: dict[str, list[str]] = {}
    for module, source in cells.items():
        try:
            tree = ast.parse(source)
            nodes = list(ast.walk(tree))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            result[module] = []
            continue
        wanted: dict[str, list[str]] = {}
        for name in sorted(_free_names(nodes) - known):
            if name in defined:
                wanted.setdefault(defined[name], []).append(name)
        result[module] = [f"from {other} import {', '.join(names)}" for other, names in wanted.items()]
        for node in tree.body:
            for name in _top_level_names(node):
                defined[name] = module
    return result


def _free_names(nodes: list[ast.AST]) -> set[str]:
    """The names a cell's code (all its nodes) reads and binds nowhere."""
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.arg for n in nodes if isinstance(n, ast.arg)}
    bound |= {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound |= {(a.asname or a.name).split(".")[0] for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def helper_cells(nb: dict) -> list:
    """The code cells a student added (no nbgrader metadata of a solution, test or locked cell), each
    parsed as a script (grader/grading/script_split.py); a cell that does not parse is left out."""
    scripts = []
    for i, cell in enumerate(nb["cells"]):
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or (isinstance(nbgrader, dict) and any(
                nbgrader.get(key) is True for key in ("solution", "grade", "locked"))):
            continue
        source = cell.get("source")
        source = "".join(source) if isinstance(source, list) and all(isinstance(p, str) for p in source) else source
        if isinstance(source, str) and len(source.encode("utf-8", "surrogatepass")) <= MAX_CELL_BYTES:
            script = script_split.parse_script(f"cell {i + 1}", source.encode("utf-8", "surrogatepass"))
            if not isinstance(script, str):
                scripts.append(script)
    return scripts


def borrowed_helpers(module: str, source: str, helpers: list) -> tuple[str, list[str]]:
    """(the text of the helpers the ``module`` cell uses that cells added by the student define: their
    imports and definitions, as nbgrader's own autograde, which runs the whole notebook, would see
    them; the names borrowed)."""
    try:
        free = _free_names(list(ast.walk(ast.parse(source)))) - set(dir(builtins)) - SETUP_DEFINES
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "", []
    public = set(load_rubric().owner_of)
    texts, borrowed = [], []
    for script in helpers:
        names = {n for n in free if n in script.defs and n not in public}
        if names:
            texts.append(script_split.helper_text(script, names))
            borrowed += sorted(names - set(borrowed))
    return "".join(texts), borrowed


def _top_level_names(node: object) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return []


def exercise_imports(module: str) -> list[str]:
    """The imports of other exercise modules in ``module``'s reference file (``from causal_attention import
    CausalAttention``): the lines the release left out of its notebook cell, which the notebook's own cells
    stand in for."""
    rubric = load_rubric()
    tree = ast.parse(rubric.by_module[module].reference_file.read_text())
    return [f"from {node.module} import {', '.join(alias.name for alias in node.names)}"
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in rubric.module_groups]


def notebook_modules(path: Path, modules: list[str], notes: list[str] | None = None) -> dict[str, bytes]:
    """``{"<group>/<module>.py": bytes}`` for each of ``modules``, from the notebook at ``path``. A helper a
    solution cell uses from a cell the student added is appended to its module (after the cell's own
    lines, which keep their numbers), with a line in ``notes``."""
    groups = load_rubric().module_groups
    nb = read_notebook(path)
    cells = solution_cells(nb, modules, path.name)
    imports, helpers = cell_imports(cells), helper_cells(nb)
    files = {}
    for module in modules:
        extra, borrowed = borrowed_helpers(module, cells[module], helpers)
        source = cells[module]
        if borrowed:
            source += f"\n\n# ---- used by this cell, defined in cells that are not graded ----\n{extra}"
            if notes is not None:
                shown = ", ".join(f"`{name}`" for name in borrowed)
                notes.append(f"the {module} cell uses {shown}, defined in a cell that is not graded: graded with "
                             f"it; move it into the {module} cell")
        files[f"{groups[module]}/{module}.py"] = module_file(module, source, imports[module])
    return files
