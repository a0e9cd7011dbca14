"""The top README stays short and true: CI runs exactly its set-up commands, and the docs' paths exist.

Cheap (no subprocess, no torch): it reads README.md, .ci/run and the Markdown files under docs/,
tests/ and benchmarks/. The whole top README's paths are checked by
test_release.py::test_every_relative_path_in_the_whole_top_readme_resolves; this file reuses its
``broken_paths`` for the other Markdown files.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from test_release import broken_paths

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
CI_RUN = REPO_ROOT / ".ci" / "run"
MAX_README_LINES = 120
FENCE = re.compile(r"^```(install|test)\n(.*?)^```$", re.M | re.S)


def readme_commands() -> dict[str, list[str]]:
    """The README's ```install and ```test blocks: {"install": [command, ...], "test": [...]}."""
    blocks: dict[str, list[str]] = {}
    for name, body in FENCE.findall(README.read_text(encoding="utf-8")):
        assert name not in blocks, f"README.md has two ```{name} blocks"
        blocks[name] = [line.strip() for line in body.splitlines() if line.strip()]
    return blocks


def _words(command: str) -> list[str]:
    """A shell command as words; pip's quiet flag changes nothing installed, so it is dropped."""
    words = shlex.split(command, comments=True)
    if words[:4] == ["python", "-m", "pip", "install"]:
        words = [w for w in words if w not in ("-q", "--quiet")]
    return words


def ci_commands() -> list[list[str]]:
    return [_words(line) for line in CI_RUN.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_has_one_install_and_one_test_block():
    blocks = readme_commands()
    assert sorted(blocks) == ["install", "test"], "README.md needs a ```install and a ```test block"
    assert blocks["install"] and blocks["test"]


def test_ci_runs_exactly_the_readmes_install_and_test_commands():
    blocks = readme_commands()
    ci = ci_commands()
    positions = []
    for name in ("install", "test"):
        for command in blocks[name]:
            words = _words(command)
            assert words in ci, (f".ci/run does not run the README's {name} command {command!r} "
                                 f"(only pip's -q may differ)")
            positions.append(ci.index(words))
    assert positions == sorted(positions), ".ci/run must run the README's commands in the README's order"


def _docs_markdown() -> list[Path]:
    return [*sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "tests" / "README.md",
            REPO_ROOT / "benchmarks" / "README.md"]


def test_every_relative_path_in_the_docs_resolves():
    """Links resolve from the file's folder (as GitHub renders them); a path in a code span may also be
    written from the repository root (`grader/batch.py` in docs/), as these pages do."""
    files = _docs_markdown()
    assert len(files) >= 5, files
    broken = []
    for md in files:
        for line in broken_paths(md):
            span = re.fullmatch(re.escape(f"{md}: path `") + r"(.+)`", line)
            if span and (REPO_ROOT / span.group(1)).exists():
                continue
            broken.append(line)
    assert broken == [], "\n".join(broken)


def test_the_readme_fits_on_two_screens():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (f"README.md has {lines} lines (at most {MAX_README_LINES}): "
                                       "move the details to docs/")
