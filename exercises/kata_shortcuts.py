"""Library calls that would skip an exercise's work, found in a module's source without running it.

Some exercises ask you to write, by hand, what PyTorch already has: a softmax, dropout, the attention
itself. ``exercises/shortcuts.json`` says, for each function or class you write, which library calls
would do its work for you (``torch.nn.Dropout`` in ``dropout``, ``F.scaled_dot_product_attention`` in
``CausalAttention``); the public test of each such module fails, naming the call, when your code uses
one, and the grader does not count the tests that reach it. Elsewhere they are fine: CausalAttention
may use ``nn.Dropout``, since ``dropout`` is written by hand in its own exercise.

How calls are found (Python's ``ast``, never by running the code): the imports give each name its
dotted path (``import torch.nn.functional as F`` makes ``F.softmax`` ``torch.nn.functional.softmax``);
every reference inside the function or class, and inside the module's own helper functions it
calls, is resolved that way; a method call on a tensor (``x.softmax(dim=-1)``) matches a table entry
``torch.Tensor.softmax``. The source read (``source_of``) is the module's file, or in a notebook the
cells that define the names (IPython keeps them in ``linecache``).

(For the instructors: ``tests/kata_shortcuts.py`` is a symbolic link to this file, and the table is
generated from ``tests/rubric.json``'s ``shortcuts`` by ``python -m grader.authoring.stubs``.)
"""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import types
from pathlib import Path
from typing import Any, Iterable

TABLE = Path(__file__).with_name("shortcuts.json")
TENSOR = "torch.Tensor."


def table() -> dict[str, dict[str, list[str]]]:
    """``{module: {public name: [dotted calls that would do its work]}}``, from ``shortcuts.json``."""
    return json.loads(TABLE.read_text())


def find(source: str | bytes, forbidden: dict[str, list[str]]) -> dict[str, list[str]]:
    """``{public name: [the forbidden calls it makes]}`` for the module ``source``; empty when none (or
    when it does not parse: its own tests say why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    aliases = _aliases(tree)
    top = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    found: dict[str, list[str]] = {}
    for name, calls in forbidden.items():
        if name not in top:
            continue
        # the table names every form a student may write (torch.softmax, F.softmax, torch.Tensor.softmax, ...)
        hits = sorted(set(calls) & _reached(top[name], top, aliases))
        if hits:
            found[name] = hits
    return found


def source_of(module: Any, names: Iterable[str]) -> str | None:
    """The source the ``names`` of ``module`` are defined in: its file, or in a notebook the cells that
    define them, after the setup cell's imports (``torch``, ``nn``); None when the cells cannot be read."""
    if isinstance(module, types.ModuleType):
        return Path(module.__file__).read_text()

    def cell(obj: Any) -> str:  # a class's cell is its methods' (inspect.getfile asks its module for a file)
        functions = [v for v in vars(obj).values() if inspect.isfunction(v)] if isinstance(obj, type) else [obj]
        return functions[0].__code__.co_filename if functions and hasattr(functions[0], "__code__") else ""

    cells = dict.fromkeys(cell(getattr(module, name)) for name in names)
    code = "".join("".join(linecache.getlines(cell)) for cell in cells)
    return "import torch\nimport torch.nn as nn\n" + code if code else None


def not_written(source: str | bytes, names: list[str]) -> list[str]:
    """Which of ``names`` still raise NotImplementedError somewhere in their bodies (a stub's TODO)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    stubs = []
    for node in tree.body:
        if getattr(node, "name", None) in names and any(
                isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call) and isinstance(sub.exc.func, ast.Name)
                and sub.exc.func.id == "NotImplementedError" for sub in ast.walk(node)):
            stubs.append(node.name)
    return stubs


def describe(found: dict[str, list[str]]) -> str:
    """One line: ``dropout calls torch.nn.Dropout``; ``""`` for none."""
    return "; ".join(f"{name} calls {', '.join(calls)}" for name, calls in sorted(found.items()))


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Every name an import binds (anywhere in the module) -> the dotted path it stands for."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _reached(node: ast.AST, top: dict[str, ast.AST], aliases: dict[str, str]) -> set[str]:
    """The dotted references made in ``node`` and in the module's own functions and classes it uses."""
    refs: set[str] = set()
    todo, seen = [node], set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for sub in ast.walk(current):
            if isinstance(sub, ast.Name) and sub.id in top and top[sub.id] is not node:
                todo.append(top[sub.id])
            dotted = _dotted(sub, aliases)
            if dotted:
                refs.add(dotted)
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and _dotted(sub.func, aliases) is None:
                refs.add(TENSOR + sub.func.attr)  # a method called on a value: x.softmax(dim=-1)
    return refs


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """``torch.nn.functional.softmax`` for ``F.softmax`` (F an alias), None for anything not rooted in an import."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])
