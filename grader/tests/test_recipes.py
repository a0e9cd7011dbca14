"""The change recipes of docs/maintainers.md, performed: each test makes the change in a copy of this working
tree as a maintainer would (the files the guide says to edit by hand, the rest by the generators it names),
runs the checks the guide says to run, and fails when more files had to be edited by hand than the guide says.
The number is read from the guide's own text, so the guide and the test cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.rubric import REPO_ROOT
from support import venv_env

GUIDE = REPO_ROOT / "docs" / "maintainers.md"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
CACHES = {"__pycache__", ".pytest_cache"}


def copy_of_repository(dest: Path) -> Path:
    """``dest`` holding this working tree's files as they are now (tracked, and untracked but not ignored:
    uncommitted changes included; no git history, no venv, no caches); links stay links."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source, target = REPO_ROOT / name, dest / name
        if not source.is_symlink() and not source.exists():
            continue  # deleted in the working tree, not yet in git
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    return dest


def files_of(root: Path) -> dict[str, bytes]:
    """``{path relative to root: content}`` for every file of ``root`` but caches."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not CACHES & set(p.relative_to(root).parts)}


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """The files added, removed or changed between two ``files_of``."""
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def files_the_guide_allows(section: str) -> int:
    """The number of hand-edited files the guide's ``## <section>`` says the change takes ("takes four files by hand")."""
    text = GUIDE.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"takes (\w+) files? by hand", text)
    assert found, f"docs/maintainers.md, '## {section}', says no 'takes N files by hand'"
    return NUMBERS.get(found.group(1)) or int(found.group(1))


def run_in(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python <args>`` in the copy, importing the copy's grader (not the one this venv has installed), in
    its children too."""
    env = {**(env or venv_env()), "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, env=env)


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m pytest <args>`` in the copy, with only the plugin the tests use (pytest-timeout): loading
    pytest-xdist too, unused for a path, costs about 1.5 CPU-s a run (the suite has a CPU budget)."""
    env = {**venv_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return run_in(root, "-m", "pytest", "-p", "pytest_timeout", *args, env=env)


# ---- a new exercise ------------------------------------------------------------------------------------

# A small but real exercise (the mean of the heads' attention weights), as a maintainer writes it: the
# solution with its student text, the hidden tests through impl and reference, the public tests.
MODULE = "head_average"
SOLUTION = '''"""Section 3.6: one picture of a multi-head layer's attention, the mean of its heads' weights.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.
"""

import torch


def average_heads(attn_weights: torch.Tensor) -> torch.Tensor:
    """(b, num_heads, T_q, T_k) -> (b, T_q, T_k): the mean of the heads' attention weights.

    Each row of the result sums to 1, as each head's rows do.

    Example::

        >>> average_heads(torch.tensor([[[[1.0, 0.0]], [[0.0, 1.0]]]]))
        tensor([[[0.5000, 0.5000]]])
    """
    ### BEGIN SOLUTION
    return attn_weights.mean(dim=1)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "one picture of all the heads' weights"
README = r"""
Section 3.6. `average_heads(attn_weights)`: (b, num_heads, T_q, T_k) → (b, T_q, T_k), the mean of the
heads' attention weights (each row still sums to 1).
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

Which axis holds the heads?

</details>

<details><summary>Level 2: an approach</summary>

A mean over one dimension removes that dimension.

</details>

<details><summary>Level 3: nearly the answer</summary>

`.mean(dim=1)` of the weights.

</details>
"""
### END STUDENT TEXT
'''
HIDDEN_TESTS = '''"""Hidden tests for {ex_id}: average_heads against the reference on random softmax weights."""

import pytest
import torch

from diagnose import assert_close


@pytest.mark.core
def test_average_heads_matches_the_reference(impl, reference):
    weights = torch.softmax(torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert_close(impl.average_heads(weights), reference.average_heads(weights), atol=1e-6,
                 call="average_heads(weights of shape (2, 3, 4, 5))")
'''
PUBLIC_TESTS = '''"""Public tests for {module} ({group}): ``pytest exercises -k {module}``."""

import torch

from kata_checks import assert_close, load


def test_{module}_takes_the_mean_of_the_heads():
    m = load("{module}")
    assert_close(m.average_heads(torch.tensor([[[[1.0, 0.0]], [[0.0, 1.0]]]])), torch.tensor([[[0.5, 0.5]]]),
                 atol=1e-6, call="average_heads(two heads, one row each)")


def test_{module}_rows_still_sum_to_one():
    m = load("{module}")
    weights = torch.softmax(torch.randn(1, 3, 4, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert_close(m.average_heads(weights).sum(dim=-1), torch.ones(1, 4), atol=1e-6,
                 call="average_heads(the softmax weights of 3 heads).sum(dim=-1)")
'''

TEST_DEF = "\ndef test_"


def add_an_exercise(root: Path) -> tuple[str, str]:
    """The hand-edited files of docs/maintainers.md's "Add an exercise": a new exercise in the rubric's last
    group, as a maintainer writes it. Returns (group, exercise id)."""
    rubric_file = root / "tests" / "rubric.json"
    rubric = json.loads(rubric_file.read_text(encoding="utf-8"))
    group = list(rubric["groups"])[-1]
    ex_id = f"{group}/{MODULE}"
    rubric["exercises"][ex_id] = {"points": 1, "kinds": {"core": 1}, "names": ["average_heads"], "depends_on": []}
    rubric_file.write_text(json.dumps(rubric, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (root / "solutions" / f"{ex_id}.py").write_text(SOLUTION, encoding="utf-8")
    (root / "tests" / group / f"test_{MODULE}.py").write_text(HIDDEN_TESTS.format(ex_id=ex_id), encoding="utf-8")
    (root / "exercises" / group / f"test_{MODULE}.py").write_text(PUBLIC_TESTS.format(module=MODULE, group=group),
                                                                  encoding="utf-8")
    return group, ex_id


@pytest.mark.slow
@pytest.mark.timeout(180)  # four subprocesses, three of them importing torch or nbgrader, on a busy machine
def test_a_new_exercise_takes_the_files_by_hand_the_guide_says(tmp_path: Path) -> None:
    root = copy_of_repository(tmp_path / "copy")
    pristine = files_of(root)
    group, ex_id = add_an_exercise(root)
    edited = files_of(root)
    written = run_in(root, "-m", "grader.authoring.stubs")
    assert written.returncode == 0, written.stdout + written.stderr
    generated = changed(edited, files_of(root))
    hand = changed(pristine, edited)

    # what the generator wrote: the stub, and the student text in the group's README.md and hints.md
    stub, readme, hints = (f"exercises/{ex_id}.py", f"exercises/{group}/README.md", f"exercises/{group}/hints.md")
    assert {stub, readme, hints} <= generated, sorted(generated)
    readme_text, hints_text, stub_text = ((root / name).read_text(encoding="utf-8") for name in (readme, hints, stub))
    assert f"\n## {MODULE}\n" in readme_text and f". `{MODULE}.py` — one picture" in readme_text, readme_text
    assert f"\n## {MODULE}\n" in hints_text and "`.mean(dim=1)` of the weights." in hints_text, hints_text
    assert "Level 1" not in stub_text and "STUDENT TEXT" not in stub_text and "mean(dim=1)" not in stub_text, stub_text

    # the guide's checks: dev check, the hidden tests pass on the solution, the public tests fail on the stub
    check = run_in(root, "-m", "grader", "dev", "check")
    exercises = json.loads((root / "tests" / "rubric.json").read_text(encoding="utf-8"))["exercises"]
    assert (check.returncode, check.stdout) == (0, f"all {len(exercises)} exercises complete\n"), check.stdout + check.stderr
    hidden = pytest_in(root, f"tests/{group}/test_{MODULE}.py", "--impl", "solutions", "-q")
    assert hidden.returncode == 0 and "1 passed" in hidden.stdout, hidden.stdout + hidden.stderr
    public = pytest_in(root, f"exercises/{group}/test_{MODULE}.py", "-q")
    failed = f"{PUBLIC_TESTS.count(TEST_DEF)} failed"  # every one of them, each on the stub's "not written yet"
    assert public.returncode == 1 and failed in public.stdout and "not written yet" in public.stdout, public.stdout

    allowed = files_the_guide_allows("Add an exercise")
    assert len(hand) <= allowed, f"{len(hand)} files edited by hand, the guide says {allowed}: {sorted(hand)}"
    assert not hand & generated, f"the generator rewrote hand-edited files: {sorted(hand & generated)}"
