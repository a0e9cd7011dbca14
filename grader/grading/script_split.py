"""A submission that is one script: split, as text, by its top-level definitions into the kata's modules.

Students who follow the chapter in one file (``chapter3_attention.py``) hold every module's names in it,
as the book's own listings do. The grader grades modules (each its own tests, its own share, re-graded
over stand-ins when another module it imports fails), so the script is split into the modules it holds:

* a module gets the script's top-level imports, the definitions of its public names (the rubric's
  ``names``), and the helpers those reach (top-level functions, classes and simple assignments that are
  no module's public name), found by the names their code uses, transitively;
* a public name of another module that its code uses becomes an import of that module
  (``from causal_attention import CausalAttention``): the worker then sees the dependency as it runs,
  as it would have in a student's own module files;
* every other line is left blank, so a line number in a message is the script's line number, and
  top-level code that is no definition (a demo, ``if __name__ == "__main__":``) is left out, with a note.

Nothing here imports or runs the script: it is parsed (``ast``) and its lines are copied.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from grader.rubric import load_rubric
from grader.safe_text import escape_line

_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError)


@dataclass
class _Script:
    """One parsed script: its lines, imports and top-level definitions by name."""

    name: str
    lines: list[str]
    imports: list[ast.stmt] = field(default_factory=list)
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    left_out: list[ast.stmt] = field(default_factory=list)


def parse_script(name: str, data: bytes) -> _Script | str:
    """The script, or why it cannot be split (one line, escaped)."""
    try:
        text = data.decode("utf-8")
        tree = ast.parse(text)
    except SyntaxError as err:
        return f"{escape_line(name)}: a syntax error at line {err.lineno}: it cannot be split into modules"
    except _PARSE_ERRORS:
        return f"{escape_line(name)}: not Python that can be read: it cannot be split into modules"
    script = _Script(name, text.splitlines())
    modules = load_rubric().module_groups
    for node in tree.body:
        defined = _defined_name(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not _imports_a_kata_module(node, modules):  # those become the split's own imports
                script.imports.append(node)
        elif defined is not None:  # defined again later: the later one, as when the script runs
            script.defs[defined] = node
        elif not _is_docstring(node):
            script.left_out.append(node)
    return script


def defines_kata_names(script: _Script) -> bool:
    return any(name in script.defs for name in load_rubric().owner_of)


def split_scripts(scripts: list[_Script], dest: Path, notes: list[str]) -> list[str]:
    """Write ``dest/<group>/<module>.py`` for each module whose names a script defines (the first
    script, in the order given, that defines any of a module's names holds it); returns the modules
    written. ``notes`` gets what was split and what was left out."""
    rubric = load_rubric()
    owner = rubric.owner_of
    written: list[str] = []
    for ex in rubric.exercises.values():
        script = next((s for s in scripts if any(n in s.defs for n in ex.names)), None)
        if script is None:
            continue
        (dest / ex.group).mkdir(parents=True, exist_ok=True)
        (dest / ex.group / f"{ex.module}.py").write_text(_module_text(script, ex.names, ex.module, owner))
        written.append(ex.module)
    for script in scripts:
        shown = escape_line(script.name)
        held = [ex.module for ex in rubric.exercises.values() if any(n in script.defs for n in ex.names)]
        if held:
            notes.append(f"{shown}: one script, split by its top-level definitions into {', '.join(held)} "
                         f"(line numbers in messages are the script's)")
        if script.left_out:
            spans = ", ".join(_span(node) for node in script.left_out[:8]) + (", ..." if len(script.left_out) > 8
                                                                              else "")
            notes.append(f"{shown}: top-level code that defines nothing left out (lines {spans})")
    return written


def _module_text(script: _Script, names: tuple[str, ...], module: str, owner: dict[str, str]) -> str:
    """The script with only this module's lines kept (the rest blank), plus imports of the other
    modules whose public names the kept code uses."""
    rubric_modules = {ex_id: ex_id.split("/")[1] for ex_id in set(owner.values())}
    own = {n for n in names if n in script.defs}
    kept, used = reach(script, own, owner)
    foreign = {n for n in used if n in owner and rubric_modules[owner[n]] != module}
    lines = [""] * len(script.lines)
    for node in script.imports + [script.defs[n] for n in kept]:
        first = _first_line(node)
        lines[first - 1:node.end_lineno] = script.lines[first - 1:node.end_lineno]
    imports = [f"from {rubric_modules[owner[n]]} import {n}" for n in sorted(foreign)]
    if imports:
        at = script.imports[0].end_lineno - 1 if script.imports else None
        if at is None:
            lines.insert(0, "; ".join(imports))
        else:
            lines[at] = lines[at] + "; " + "; ".join(imports)
    return "\n".join(lines) + "\n"


def reach(script: _Script, start: set[str], owner: dict[str, str]) -> tuple[set[str], set[str]]:
    """(the definitions ``start`` reaches: themselves and the helpers their code uses, transitively; every
    global name that code uses). A public name of the kata (``owner``) is never a helper."""
    kept, todo, used = set(start), list(start), set()
    while todo:
        for name in _names_used(script.defs[todo.pop()]):
            used.add(name)
            if name not in kept and name in script.defs and name not in owner:
                kept.add(name)
                todo.append(name)
    return kept, used


def helper_text(script: _Script, names: set[str]) -> str:
    """The script's imports and the definitions ``names`` reach, in the script's order: what code that
    uses ``names`` needs of it to run."""
    kept, _ = reach(script, {n for n in names if n in script.defs}, load_rubric().owner_of)
    nodes = sorted(script.imports + [script.defs[n] for n in kept], key=lambda node: node.lineno)
    return "\n".join("\n".join(script.lines[_first_line(node) - 1:node.end_lineno]) for node in nodes) + "\n"


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _imports_a_kata_module(node: ast.Import | ast.ImportFrom, modules: dict[str, str]) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module in modules
    return any(alias.name in modules for alias in node.names)


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and value is not None and _is_literal(value):
            return targets[0].id
    return None


def _is_literal(value: ast.expr) -> bool:
    """A constant the module may keep without running anything: a number, a string, a tuple of them."""
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _names_used(node: ast.AST) -> set[str]:
    """The global names ``node``'s code reads: a function's parameters and the names it assigns are
    its own (``dropout`` the argument is not ``dropout`` the function of another module). Walked with a
    stack of its own, not by recursion: a hostile script's expression may nest thousands deep."""
    used: set[str] = set()
    todo: list[tuple[ast.AST, frozenset[str]]] = [(node, frozenset())]
    while todo:
        node, local = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
            body = node.body if isinstance(node.body, list) else [node.body]
            assigned = {n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}
            outer = [*getattr(node, "decorator_list", []), *args.defaults, *[d for d in args.kw_defaults if d],
                     *([node.returns] if getattr(node, "returns", None) else []),
                     *[a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.annotation]]
            todo += [(part, local) for part in outer]
            todo += [(stmt, local | params | assigned) for stmt in body]
        elif isinstance(node, ast.Name):
            if node.id not in local and isinstance(node.ctx, ast.Load):
                used.add(node.id)
        else:
            todo += [(child, local) for child in ast.iter_child_nodes(node)]
    return used


def _span(node: ast.stmt) -> str:
    return str(node.lineno) if node.end_lineno == node.lineno else f"{node.lineno}-{node.end_lineno}"
