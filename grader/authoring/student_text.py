"""What students read about each exercise, kept in its solution module and written into the group's
``README.md`` and ``hints.md`` (``python -m grader.authoring.stubs`` calls this module).

Each solution ends with its student text, between two full-line markers::

    ### BEGIN STUDENT TEXT
    BUILD_ORDER = "the reshapes that the efficient version needs"
    README = r\"\"\"
    Section 3.6.2, ...          <- the module's ``## <module>`` section of README.md, heading left out
    \"\"\"
    HINTS = r\"\"\"
    <details><summary>Level 1: a nudge</summary> ...   <- its section of hints.md, three folded levels
    \"\"\"
    ### END STUDENT TEXT

``BUILD_ORDER`` is the module's line in the README's "Build the modules in this order" list
(``N. `<module>.py` — <BUILD_ORDER>``, numbered in the rubric's order).

Why there and why this form: grader/authoring/stubs.py, which calls this module.

The group's own prose (intro, rules) stays hand-written around two generated regions, each opened by
a marker line (an HTML comment: invisible where the Markdown is shown): the build-order list, closed by
its end marker, and the module sections, from their marker to the end of the file (no closing marker,
so the last section read on its own, as ``check_progress.py`` does, ends with its own text).
"""

from __future__ import annotations

import ast
from pathlib import Path

BEGIN, END = "### BEGIN STUDENT TEXT", "### END STUDENT TEXT"
PARTS = ("BUILD_ORDER", "README", "HINTS")
ORDER_BEGIN = ("<!-- BEGIN GENERATED build order: python -m grader.authoring.stubs writes it from each "
               "solution's student text (BUILD_ORDER) -->")
ORDER_END = "<!-- END GENERATED build order -->"
SECTIONS = ("<!-- GENERATED from here to the end of the file: python -m grader.authoring.stubs writes each "
            "module's section from its solution's student text ({part}) -->")
FIX = f"end it with {BEGIN}, then BUILD_ORDER, README and HINTS as string literals, then {END} (docs/maintainers.md)"


class StudentTextError(ValueError):
    """A solution's student text, or a group file's generated regions, that cannot be read."""


def _block_lines(source: str, where: str) -> tuple[int, int] | None:
    """The indexes of the block's marker lines in ``source.split("\\n")``; None when it has none."""
    lines = [line.strip() for line in source.split("\n")]
    if BEGIN not in lines:
        if END in lines:
            raise StudentTextError(f"{where}: {END} without {BEGIN}: {FIX}")
        return None
    begin = lines.index(BEGIN)
    end = lines.index(END, begin) if END in lines[begin:] else None
    if end is None or lines.count(BEGIN) != 1 or any(lines[end + 1:]):
        raise StudentTextError(f"{where}: the student text must be one block at the module's end: {FIX}")
    return begin, end


def without_student_text(source: str, where: str = "the solution") -> str:
    """``source`` without its student text block and the blank lines before it (the module as it was)."""
    found = _block_lines(source, where)
    if found is None:
        return source
    return "\n".join(source.split("\n")[:found[0]]).rstrip("\n") + "\n"


def student_text(source: str, where: str) -> dict[str, str] | None:
    """``{"BUILD_ORDER": ..., "README": ..., "HINTS": ...}`` from the block (each stripped of the newlines
    around it); None when the solution has no block."""
    found = _block_lines(source, where)
    if found is None:
        return None
    block = "\n".join(source.split("\n")[found[0] + 1:found[1]])
    try:
        body = ast.parse(block).body
    except SyntaxError as err:
        raise StudentTextError(f"{where}: the student text does not parse ({err.msg}, line {err.lineno} of "
                               f"the block): {FIX}") from None
    parts = {}
    for node in body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if not (isinstance(target, ast.Name) and target.id in PARTS and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            raise StudentTextError(f"{where}: line {node.lineno} of the student text is no PART = \"...\": {FIX}")
        parts[target.id] = node.value.value.strip("\n")
    if sorted(parts) != sorted(PARTS):
        raise StudentTextError(f"{where}: the student text lacks {', '.join(p for p in PARTS if p not in parts)}: {FIX}")
    return parts


def _marker(lines: list[str], marker: str, where: str) -> int:
    if lines.count(marker) != 1:
        raise StudentTextError(f"{where} has {lines.count(marker)} lines '{marker}', not one: put it back where "
                               "the generated text starts (docs/maintainers.md, \"Add an exercise\")")
    return lines.index(marker)


def with_sections(current: str, where: str, sections: list[tuple[str, str]], part: str) -> str:
    """``current`` with everything after the sections' marker replaced by ``## <module>`` sections."""
    lines = current.split("\n")
    start = _marker(lines, SECTIONS.format(part=part), where)
    generated = "\n\n".join(f"## {module}\n\n{text}" for module, text in sections)
    return "\n".join(lines[:start + 1]) + "\n" + generated + "\n"


def with_build_order(current: str, where: str, modules: list[tuple[str, str]]) -> str:
    """``current`` with the lines between the build order's markers replaced by the numbered list."""
    lines = current.split("\n")
    begin, end = _marker(lines, ORDER_BEGIN, where), _marker(lines, ORDER_END, where)
    if end < begin:
        raise StudentTextError(f"{where}: '{ORDER_END}' comes before '{ORDER_BEGIN}': swap them")
    listed = [f"{number}. `{module}.py` — {line}" for number, (module, line) in enumerate(modules, start=1)]
    return "\n".join(lines[:begin + 1] + listed + lines[end:])


def group_documents(repo_root: Path, group: str, modules: list[str]) -> dict[Path, str]:
    """``{exercises/<group>/README.md: text, .../hints.md: text}``: each file as it is, its generated
    regions rewritten from the student text of ``modules`` (in the build order); a missing file is left
    to ``dev check``, which names it."""
    texts = []
    for module in modules:
        path = repo_root / "solutions" / group / f"{module}.py"
        parts = student_text(path.read_text(encoding="utf-8"), str(path.relative_to(repo_root)))
        if parts is not None:
            texts.append((module, parts))
    folder, documents = repo_root / "exercises" / group, {}
    readme, hints = folder / "README.md", folder / "hints.md"
    if readme.is_file():
        shown = str(readme.relative_to(repo_root))
        text = with_build_order(readme.read_text(encoding="utf-8"), shown,
                                [(module, parts["BUILD_ORDER"]) for module, parts in texts])
        documents[readme] = with_sections(text, shown, [(m, parts["README"]) for m, parts in texts], "README")
    if hints.is_file():
        documents[hints] = with_sections(hints.read_text(encoding="utf-8"), str(hints.relative_to(repo_root)),
                                         [(m, parts["HINTS"]) for m, parts in texts], "HINTS")
    return documents
