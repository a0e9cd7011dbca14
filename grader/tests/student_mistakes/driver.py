"""Run the public tests against every mistake of ``mistakes.py``, in ONE process (torch imported once).

    python grader/tests/student_mistakes/driver.py OUT.json [NAME ...]

For each mistake: copy ``exercises/`` with the reference solutions dropped in to a fresh temporary
folder, apply the patch, run the patched module's public test file (or its whole group folder) with
``pytest.main([..., "-q", "-p", "no:cacheprovider"])``, then forget every module imported from that
folder so the next run imports its own copies. Writes ``{name: {test name: [status, message]}}``,
or ``{name: {"__error__": [...]}}`` when the patch cannot be applied or pytest reports no test.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
from mistakes import MISTAKES, apply  # noqa: E402

sys.dont_write_bytecode = True


def _tree(dest: Path) -> Path:
    """exercises/ (public tests, conftest, kata_checks) with every module replaced by its solution."""
    tree = dest / "exercises"
    shutil.copytree(REPO_ROOT / "exercises", tree, ignore=shutil.ignore_patterns("__pycache__", "documents", "*.md"))
    for solution in (REPO_ROOT / "solutions").glob("*/*.py"):
        if solution.name != "conftest.py":
            shutil.copy(solution, tree / solution.parent.name / solution.name)
    (dest / "pytest.ini").write_text("[pytest]\n")
    return tree


def _forget(root: Path) -> None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(root):
            del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not Path(p).resolve().is_relative_to(root)]


def run_one(mistake: dict, work: Path) -> dict[str, list[str]]:
    dest = work / mistake["name"]
    tree = _tree(dest)
    target = tree / mistake["file"]
    try:
        target.write_text(apply(target.read_text(), mistake))
    except ValueError as err:
        return {"__error__": ["patch", str(err)]}
    group, module = mistake["file"].removesuffix(".py").split("/")
    run = tree / group if mistake.get("run") == "group" else tree / group / f"test_{module}.py"
    xml = dest / "report.xml"
    try:
        pytest.main([str(run), "-q", "-p", "no:cacheprovider", "-c", str(dest / "pytest.ini"), "--rootdir", str(dest),
                     f"--junitxml={xml}"])
    finally:
        _forget(dest.resolve())
    if not xml.is_file():
        return {"__error__": ["pytest", "no report written"]}
    results: dict[str, list[str]] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        status, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                status, message = tag, f"{node.get('message', '')}\n{node.text or ''}"
                break
        results[case.get("name", "")] = [status, message]
    return results or {"__error__": ["pytest", "no test ran"]}


def main(argv: list[str]) -> int:
    out, names = Path(argv[0]), set(argv[1:])
    chosen = [m for m in MISTAKES if not names or m["name"] in names]
    with tempfile.TemporaryDirectory(prefix="student-mistakes-") as tmp:
        results = {m["name"]: run_one(m, Path(tmp)) for m in chosen}
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
