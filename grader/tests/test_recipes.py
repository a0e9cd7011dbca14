"""The maintainer's recipes (docs/maintainers.md), performed: each test makes one change in a copy of this
working tree as the guide tells a maintainer to make it (the files its section names, edited by hand, then
the generators it names), runs the checks that would catch a file left out, and counts the files edited by
hand (those that differ from this tree, less what a generator wrote) against the number the section states
("Two files:"), read from the guide, so that the guide and this test cannot drift apart.

The copies run their checks in processes of their own (the copy's ``grader`` package, not this one): each
import of torch there costs 2 to 3.5 s of CPU, so a recipe runs the few checks that touch its change."""

from __future__ import annotations

import ast
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom.grades_sheet import csv_cell, csv_row, write_grades
from grader.rubric import REPO_ROOT, load_rubric
from support import fake_report, venv_env

pytestmark = pytest.mark.timeout(300)
GUIDE = REPO_ROOT / "docs" / "maintainers.md"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
CACHES = {"__pycache__", ".pytest_cache"}


# ---- the copy, the guide's numbers, the files edited -------------------------------------------------

def _listed(root: Path) -> list[str]:
    """The working tree's files: tracked, and untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return sorted({rel for rel in out.split("\0") if rel and os.path.lexists(root / rel)})


def copy_of_repository(dest: Path) -> Path:
    """This working tree as it stands, at ``dest``: its tracked files and the untracked ones git does not
    ignore (not a clone: a change not yet committed is in the copy), links kept as links."""
    for rel in _listed(REPO_ROOT):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, target, follow_symlinks=False)
    return dest


def _same(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return filecmp.cmp(a, b, shallow=False)


def edited_by_hand(copy: Path, generated: tuple[str, ...] = ()) -> list[str]:
    """The files of ``copy`` added, changed or removed against this tree, less ``generated`` (what the
    guide's generators wrote) and caches."""
    pristine = set(_listed(REPO_ROOT))
    now = set()
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if d not in CACHES]
        now |= {str((Path(folder) / name).relative_to(copy)) for name in files}
    changed = (now ^ pristine) | {rel for rel in now & pristine if not _same(copy / rel, REPO_ROOT / rel)}
    return sorted(changed - set(generated))


def files_the_guide_allows(title: str) -> int:
    """The number of files the guide's section ``## <title>`` says its change takes ("Two files:")."""
    section = GUIDE.read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    said = re.search(r"\b(one|two|three|four|five|six)\s+files?\b", section, re.IGNORECASE)
    assert said, f"docs/maintainers.md's {title!r} says no number of files"
    return NUMBERS[said.group(1).lower()]


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` (there ``count`` times) by ``new`` in ``path``: a maintainer's edit."""
    text = path.read_text()
    assert text.count(old) == count, (path, old)
    path.write_text(text.replace(old, new))


def run_in(copy: Path, *args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``copy`` (its ``grader`` package imported, not this tree's)."""
    return subprocess.run([sys.executable, *args], cwd=copy, capture_output=True, text=True, timeout=timeout,
                          env={**venv_env(), **env})


def assert_within_the_guide(copy: Path, title: str, expected: set[str], generated: tuple[str, ...] = ()) -> None:
    edited = edited_by_hand(copy, generated)
    assert set(edited) == expected, edited  # the test made the edits it meant to, and no check wrote files
    assert len(edited) <= files_the_guide_allows(title), (title, edited)


# ---- Add an exercise -------------------------------------------------------------------------------

# A small but real exercise as a maintainer writes it: the solution with its student text, hidden and public tests.
MODULE = "head_average"
SOLUTION = '''"""Section 3.6: one picture of a multi-head layer's attention, the mean of its heads' weights."""

import torch


def average_heads(attn_weights: torch.Tensor) -> torch.Tensor:
    """(b, num_heads, T_q, T_k) -> (b, T_q, T_k): the mean of the heads' attention weights (rows sum to 1).

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

from kata_checks import assert_close


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
    weights = torch.softmax(torch.randn(1, 3, 4, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert_close(load("{module}").average_heads(weights).sum(dim=-1), torch.ones(1, 4), atol=1e-6, call="rows")
'''


def add_an_exercise(copy: Path) -> tuple[str, str]:
    """The hand-edited files of "Add an exercise", for a new exercise in the rubric's last group (its entry
    one line more: the rubric holds one exercise a line). Returns (group, exercise id)."""
    rubric_file = copy / "tests" / "rubric.json"
    group = list(json.loads(rubric_file.read_text())["groups"])[-1]
    ex_id = f"{group}/{MODULE}"
    entry = {"points": 1, "kinds": {"core": 1}, "names": ["average_heads"], "depends_on": []}
    lines = rubric_file.read_text().split("\n")
    last = max(i for i, line in enumerate(lines) if re.match(r'^\s*"[^"]+/[^"]+": \{"points"', line))
    lines[last:last + 1] = [lines[last] + ",", f'    "{ex_id}": {json.dumps(entry)}']
    rubric_file.write_text("\n".join(lines))
    (copy / "solutions" / f"{ex_id}.py").write_text(SOLUTION)
    (copy / "tests" / group / f"test_{MODULE}.py").write_text(HIDDEN_TESTS.format(ex_id=ex_id))
    (copy / "exercises" / group / f"test_{MODULE}.py").write_text(PUBLIC_TESTS.format(module=MODULE, group=group))
    return group, ex_id


# pytest with the one plugin the tests use (pytest-xdist too, loaded for nothing, costs 1.5 CPU-s a run)
PYTEST, NO_AUTOLOAD = ("-m", "pytest", "-p", "pytest_timeout", "-q"), {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.mark.slow
def test_a_new_exercise_is_four_files(tmp_path: Path) -> None:
    """The recipe: the rubric entry, the solution with its student text, the hidden and public tests; the stub
    generator writes the rest. Then dev check passes, the hidden tests pass, the public ones fail on the stub."""
    copy = copy_of_repository(tmp_path / "copy")
    group, ex_id = add_an_exercise(copy)
    hand = {"tests/rubric.json", f"solutions/{ex_id}.py", f"tests/{group}/test_{MODULE}.py",
            f"exercises/{group}/test_{MODULE}.py"}
    assert_within_the_guide(copy, "Add an exercise", hand)  # counted before any generator ran
    written = run_in(copy, "-m", "grader.authoring.stubs")
    assert written.returncode == 0, written.stdout + written.stderr
    stub, readme, hints = f"exercises/{ex_id}.py", f"exercises/{group}/README.md", f"exercises/{group}/hints.md"
    generated = set(edited_by_hand(copy)) - hand
    assert {stub, readme, hints} <= generated, sorted(generated)
    readme_text, hints_text, stub_text = ((copy / name).read_text() for name in (readme, hints, stub))
    assert f"\n## {MODULE}\n" in readme_text and f"\n## {MODULE}\n" in hints_text and f". `{MODULE}.py` — one" in readme_text
    assert "Level 1" not in stub_text and "STUDENT TEXT" not in stub_text and "mean(dim=1)" not in stub_text, stub_text

    check = run_in(copy, "-m", "grader", "dev", "check")
    exercises = json.loads((copy / "tests" / "rubric.json").read_text())["exercises"]
    assert (check.returncode, check.stdout) == (0, f"all {len(exercises)} exercises complete\n"), check.stdout + check.stderr
    hidden = run_in(copy, *PYTEST, f"tests/{group}/test_{MODULE}.py", "--impl", "solutions", **NO_AUTOLOAD)
    assert hidden.returncode == 0 and "1 passed" in hidden.stdout, hidden.stdout + hidden.stderr
    public = run_in(copy, *PYTEST, f"exercises/{group}/test_{MODULE}.py", **NO_AUTOLOAD)
    failed = f"{PUBLIC_TESTS.count('def test_')} failed"  # every one of them, each on the stub's "not written yet"
    assert public.returncode == 1 and failed in public.stdout and "not written yet" in public.stdout, public.stdout
    assert_within_the_guide(copy, "Add an exercise", hand, tuple(generated))  # the checks wrote nothing more


# ---- Change the rubric's point split ---------------------------------------------------------------

# The tests that check a point value and run no whole grading: re-run over a changed split, each must still
# pass, since each reads the points from tests/rubric.json. A point written by hand in one of them fails here.
READ_POINTS = (
    "grader/tests/test_rubric.py",
    "grader/tests/test_rubric_fairness.py::test_every_exercise_splits_its_points_over_kinds",
    "grader/tests/test_rubric_fairness.py::test_edge_tests_count_in_proportion_to_the_core_points_earned",
    "grader/tests/test_dev_check.py::test_a_copy_with_files_removed_is_told_what_it_lacks",
    "grader/tests/test_intake_and_reports.py::test_broken_dependency_costs_points_once",
    "grader/tests/test_intake_and_reports.py::test_text_report_indents_every_line_of_the_gpu_check",
    "grader/tests/test_intake_and_reports.py::test_a_grades_sheet_row_s_cells_add_up_to_its_score",
    "grader/tests/test_untrusted_names_text_and_answers.py::test_every_renderer_escapes_what_it_is_given",
    "grader/tests/test_feedback.py::test_only_an_exercise_whose_every_test_hit_a_stub_or_a_missing_module_is_one_line",
)


def _new_split(exercise: dict) -> dict:
    """Every kind's points changed: three more core points, one more for each other kind (printed points
    stay at most a quarter of the core points: test_rubric_fairness.py)."""
    kinds = {kind: points + (3 if kind == "core" else 1) for kind, points in exercise["kinds"].items()}
    return {**exercise, "points": sum(kinds.values()), "kinds": kinds}


def change_the_split(rubric: Path) -> None:
    """Every exercise's split changed (:func:`_new_split`) and the GPU-run check one point more (a share per
    module that is no round number): no point value of the tree stays what it was. Edited line by line, as
    a maintainer edits the file (one exercise a line)."""
    exercise = re.compile(r'^(\s*"[^"]+": )(\{"points".*\})(,?)$')
    lines = []
    for line in rubric.read_text().splitlines():
        if found := exercise.match(line):
            line = f"{found[1]}{json.dumps(_new_split(json.loads(found[2])))}{found[3]}"
        lines.append(line)
    text, gpu = re.subn(r'("gpu_check": \{"points": )(\d+)', lambda m: f"{m[1]}{int(m[2]) + 1}", "\n".join(lines) + "\n")
    assert gpu == 1
    rubric.write_text(text)


@pytest.mark.slow
def test_a_new_point_split_is_one_file(tmp_path: Path) -> None:
    """The recipe: tests/rubric.json alone. Then dev check (test_dev_check.py runs it) and the tests that read
    points pass in the copy; the next release writes the course's and the workflow's points (outside the tree)."""
    copy = copy_of_repository(tmp_path / "copy")
    change_the_split(copy / "tests" / "rubric.json")
    changed, before = json.loads((copy / "tests" / "rubric.json").read_text()), load_rubric()
    assert all(ex["kinds"][kind] != before.exercises[ex_id].kind_points[kind]
               for ex_id, ex in changed["exercises"].items() for kind in ex["kinds"])
    assert changed["gpu_check"]["points"] != before.gpu_points
    ran = run_in(copy, "-m", "pytest", "-q", *READ_POINTS)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert_within_the_guide(copy, "Change the rubric's point split", {"tests/rubric.json"})


# The names a score, a test's or an exercise's points or a maximum goes by in the tests.
POINTS_NAMES = {"points", "max_points", "score", "max_score", "gpu_points", "auto_score"}


def _says_points(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in POINTS_NAMES
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in POINTS_NAMES
    if isinstance(node, ast.Call) and len(node.args) == 1 and getattr(node.func, "id", "") == "float":
        return _says_points(node.args[0])
    return False


def _a_number(node: ast.AST) -> bool:
    """A number written by hand (0 is not a point value: nothing earned), or ``pytest.approx`` of one."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "approx" and node.args:
        return _a_number(node.args[0])
    return (isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value != 0)


def test_no_test_compares_points_with_a_number_written_by_hand() -> None:
    """The cheap half of the proof above, over every test: a score, points or a maximum is never compared
    with a literal (``max_points == 8``); it is read from the rubric, or computed from what it reads."""
    found = []
    for path in sorted((REPO_ROOT / "grader" / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(map(_says_points, sides)) and any(map(_a_number, sides)):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


# ---- Add an isolation mode -------------------------------------------------------------------------

# A mode that only sets flags: none's, under another name.
NEW_MODE = '''
PLAIN = Mode("plain", "plain (a plain process, as none)", "plain", lambda: None, isolates=False, launcher=None,
             namespaces=False, own_uid=False, seccomp=None, warning=NO_SANDBOX_WARNING + "{why}")
'''
NEW_MODE_ROW = "| `plain` | anywhere | nothing, as `none` |\n"
# Loaded into the copy's pytest (-p): every test collected, written down before -k deselects any.
COLLECTED = '''
import json, os, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    with open(os.environ["KATA_COLLECTED"], "w") as f:
        json.dump([item.nodeid for item in items], f)
'''


def _as_mode(nodeid: str, old: str, new: str) -> str:
    """``nodeid`` with its parameter ``old`` (a mode's name) read as ``new``."""
    name, bracket, params = nodeid.partition("[")
    return name + bracket + "-".join(new if p == old else p for p in params.rstrip("]").split("-")) + (
        "]" if bracket else "")


@pytest.mark.slow
def test_a_new_isolation_mode_that_sets_flags_is_two_files(tmp_path: Path) -> None:
    """The recipe: one more Mode in MODES, its row in docs/isolation.md (no launcher: it only sets flags).
    --sandbox offers it, every test of the mode it copies is collected for it too (test_isolation.py, the
    attack matrix of test_engine.py), and an attack is graded in it as in that mode."""
    copy = copy_of_repository(tmp_path / "copy")
    modes = copy / "grader" / "sandbox" / "modes.py"
    edit(modes, "# The modes, the best first:", NEW_MODE.lstrip("\n") + "# The modes, the best first:")
    edit(modes, "for mode in (BWRAP, UID, NONE)}", "for mode in (BWRAP, UID, NONE, PLAIN)}")
    edit(copy / "docs" / "isolation.md", "| `none` | anywhere |", NEW_MODE_ROW + "| `none` | anywhere |")
    offered = run_in(copy, "-m", "grader", "isolation", "--sandbox", "plain")
    assert (offered.returncode, offered.stdout) == (0, "plain\n"), offered.stderr
    assert "plain (a plain process, as none)" in " ".join(run_in(copy, "-m", "grader", "score", "--help").stdout.split())

    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "kata_collected.py").write_text(COLLECTED)
    collected = tmp_path / "collected.json"
    ran = run_in(copy, "-m", "pytest", "-q", "-p", "kata_collected", "grader/tests/test_isolation.py",
                 "grader/tests/test_engine.py", "-k", "test_reference_on_disk_is_unreadable and plain",
                 KATA_COLLECTED=str(collected), PYTHONPATH=str(tmp_path / "plugin"))
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout[-4000:] + ran.stderr[-2000:]
    ids = set(json.loads(collected.read_text()))
    as_none = {nodeid for nodeid in ids if "none" in nodeid}
    assert as_none and {_as_mode(i, "none", "plain") for i in as_none} == {i for i in ids if "plain" in i}
    assert_within_the_guide(copy, "Add an isolation mode", {"grader/sandbox/modes.py", "docs/isolation.md"})


# ---- Add a report format ---------------------------------------------------------------------------

NEW_FORMAT = '''"""One line per exercise, its score over its points (the recipe test's format)."""

from __future__ import annotations

from typing import Any

from grader.safe_text import escape_line


def render(report: dict[str, Any], visibility: str, colour: bool) -> str:
    return "".join(f"{escape_line(ex_id)} {ex['score']:g}/{ex['max_score']:g}\\n" for ex_id, ex in report["exercises"].items())
'''
# ``python -m grader score ...`` with the grading replaced by a stored JSON report (the first argument): what a
# new format changes is how a report is printed, and a grading would cost a template and the hidden tests.
SCORE_A_STORED_REPORT = ("import json, sys; import grader.reports.commands as score; "
                         "stored = json.loads(open(sys.argv[1]).read()); "
                         "score.grade = lambda submission, options: None; score.to_json = lambda graded: stored; "
                         "from grader.cli import main; sys.exit(main(sys.argv[2:]))")


@pytest.mark.slow
def test_a_new_report_format_is_two_files(tmp_path: Path) -> None:
    """The recipe: grader/reports/<name>.py with its ``render``, and one line in FORMATS (with its import).
    Then ``score --format <name>`` prints a report in it."""
    copy = copy_of_repository(tmp_path / "copy")
    (copy / "grader" / "reports" / "tally.py").write_text(NEW_FORMAT)
    formats = copy / "grader" / "reports" / "formats.py"
    edit(formats, "from grader.reports import gradescope, json_report, text",
         "from grader.reports import gradescope, json_report, tally, text")
    edit(formats, '    "gradescope": gradescope.render,\n', '    "gradescope": gradescope.render,\n    "tally": tally.render,\n')
    report = fake_report(fraction=0.5)
    (tmp_path / "report.json").write_text(json.dumps(report))
    printed = run_in(copy, "-c", SCORE_A_STORED_REPORT, str(tmp_path / "report.json"), "score", "--format", "tally")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.splitlines() == [f"{ex_id} {ex['score']:g}/{ex['max_score']:g}"
                                           for ex_id, ex in report["exercises"].items()]
    assert_within_the_guide(copy, "Add a report format", {"grader/reports/tally.py", "grader/reports/formats.py"})


# ---- Add a class-level output ----------------------------------------------------------------------

NEW_OUTPUT = '''"""A grade-upload file: each student's score (the recipe test's class-level output)."""

from __future__ import annotations

from pathlib import Path

from grader.classroom.grades_sheet import ClassSheet, spreadsheet_text


def write(sheet: ClassSheet) -> list[Path]:
    path = sheet.csv_path.with_name(f"{sheet.csv_path.stem}-upload.csv")
    path.write_text(spreadsheet_text(["student", "score"], [{"student": name, "score": row["score"]}
                                                             for name, row in sorted(sheet.rows.items())]))
    return [path]
'''


@pytest.mark.slow
def test_a_new_class_level_output_is_two_files(tmp_path: Path) -> None:
    """The recipe: grader/classroom/<name>.py with its ``write``, and one line in CLASS_OUTPUTS (with its
    import). Then ``merge`` (no grading) writes it beside the grades CSV, a student's name escaped once."""
    copy = copy_of_repository(tmp_path / "copy")
    (copy / "grader" / "classroom" / "upload.py").write_text(NEW_OUTPUT)
    outputs = copy / "grader" / "classroom" / "class_outputs.py"
    edit(outputs, "from grader.classroom import class_summary", "from grader.classroom import upload\nfrom grader.classroom import class_summary")
    edit(outputs, '    "the class summary": class_summary.write_summary,\n',
         '    "the class summary": class_summary.write_summary,\n    "the upload file": upload.write,\n')
    students = {"ann": fake_report(fraction=1.0), "=cmd": fake_report(fraction=0.5)}
    write_grades(tmp_path / "shard.csv", [csv_row(name, {"report": report}, "0" * 64) for name, report in students.items()])
    merged = run_in(copy, "-m", "grader", "merge", str(tmp_path / "class.csv"), str(tmp_path / "shard.csv"),
                    MPLBACKEND="Agg")
    assert merged.returncode == 0, merged.stderr
    upload = (tmp_path / "class-upload.csv").read_text().splitlines()
    assert upload == ["student,score", *sorted(f"{csv_cell(name)},{report['score']}" for name, report in students.items())]
    assert f"written: {tmp_path / 'class-upload.csv'}" in merged.stderr.splitlines()
    assert_within_the_guide(copy, "Add a class-level output", {"grader/classroom/upload.py",
                                                              "grader/classroom/class_outputs.py"})
