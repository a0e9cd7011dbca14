"""Submission intake, scoring with the dependency re-grade, and the report formats (no worker needed)."""

from __future__ import annotations

import os
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.classroom.grades_sheet import csv_row
from grader.cli import build_parser
from grader.grading.intake import SubmissionError, locate_submission
from grader.grading.results import ExerciseResult, GpuCheckResult, GradeReport, TestOutcome
from grader.grading.scoring import dependencies, score_with_regrade
from grader.reports.formats import FORMATS, render
from grader.reports.gradescope import to_gradescope
from grader.reports.json_report import dumps, to_json
from grader.reports.text import to_text
from grader.rubric import GROUPS, REPO_ROOT, load_rubric
from support import fake_job, fake_report

GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}


def make_submission(root: Path) -> Path:
    for group in GROUPS:
        (root / group).mkdir(parents=True)
        (root / group / "placeholder.py").write_text("x = 1\n")
    return root


def test_locate_plain_dir_repo_root_and_wrapped_zip(tmp_path: Path) -> None:
    plain = make_submission(tmp_path / "plain")
    assert locate_submission(plain, tmp_path / "s1") == plain
    repo = tmp_path / "repo"
    make_submission(repo / "exercises")
    assert locate_submission(repo, tmp_path / "s2") == repo / "exercises"
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice-hw3/exercises/03_causal/causal_mask.py", "x = 1\n")
    found = locate_submission(archive, tmp_path / "s3")
    assert found.name == "exercises" and (found / "03_causal" / "causal_mask.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    "setup, expected",
    [
        (lambda p: p / "missing", "no such file or directory"),
        (lambda p: (p / "notes.txt").write_text("hi") and p / "notes.txt", "not a directory and not a zip"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "nothing that looks like a submission"),
    ],
    ids=["missing", "not-a-zip", "empty-folder"],
)
def test_unusable_input_is_one_clear_error(tmp_path: Path, setup, expected: str) -> None:
    with pytest.raises(SubmissionError, match=expected):
        locate_submission(setup(tmp_path), tmp_path / "scratch")


def test_zip_with_path_traversal_is_rejected(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    with pytest.raises(SubmissionError, match="unsafe path"):
        locate_submission(archive, tmp_path / "scratch")
    assert not (tmp_path.parent / "escaped.py").exists()


@pytest.mark.timeout(120)  # six command lines, each a Python that imports the grader: 0.2 s here, 2 s and more under load
def test_cli_unusable_input_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    cases = [["score", str(tmp_path / "nope")], ["score", str(tmp_path / "broken.zip")], ["score", str(tmp_path)],
             ["score", "--timeout", "-1"], ["frobnicate"], ["score", str(tmp_path), "--json", str(tmp_path / "no/dir/x.json")]]
    for args in cases:
        proc = subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=REPO_ROOT)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def _outcomes(failing: set[str]) -> list[TestOutcome]:
    rubric = load_rubric()
    return [
        TestOutcome(f"tests/{ex_id}::test_{i}", ex_id, ex.points / 2, ex_id not in failing,
                "" if ex_id not in failing else "boom", 0.0)
        for ex_id, ex in rubric.exercises.items()
        for i in range(2)
    ]


def test_broken_dependency_costs_points_once() -> None:
    rubric = load_rubric()
    calls = []

    def regrade(ids, substitutes):
        calls.append((set(ids), dict(substitutes)))
        return [o for o in _outcomes(set()) if o.exercise in ids]

    broken = {"03_causal/causal_attention", "04_multihead/multihead_wrapper"}
    results = score_with_regrade(rubric, _outcomes(broken), regrade)
    assert results["03_causal/causal_attention"].score == 0
    wrapper = results["04_multihead/multihead_wrapper"]
    assert wrapper.score == wrapper.max_score and "stand-in causal_attention" in wrapper.message
    standin = rubric.exercises["03_causal/causal_attention"].standin_file
    assert calls == [({"04_multihead/multihead_wrapper"}, {"causal_attention": standin})]
    assert standin.parent.name == "standins" and standin.read_bytes() != rubric.exercises["03_causal/causal_attention"].reference_file.read_bytes()


def test_a_grading_scoped_to_some_exercises_scores_and_regrades_those_alone(tmp_path: Path) -> None:
    """grader nbgrader grades 04's notebook on 04's exercises: the broken CausalAttention it builds on is
    run (it decides the wrapper's re-grade) but not scored, and no other exercise is re-graded."""
    rubric = load_rubric()
    calls = []

    def regrade(ids, substitutes):
        calls.append(set(ids))
        return [o for o in _outcomes(set()) if o.exercise in ids]

    scope = [ex.id for ex in rubric.in_group("04_multihead")]
    broken = {"03_causal/causal_attention", "04_multihead/multihead_wrapper",
              "02_trainable_weights/self_attention", "02_trainable_weights/weight_transfer"}
    results = score_with_regrade(rubric, _outcomes(broken), regrade, scope)
    assert list(results) == scope
    assert results["04_multihead/multihead_wrapper"].score == rubric.exercises["04_multihead/multihead_wrapper"].points
    assert calls == [{"04_multihead/multihead_wrapper"}]  # not weight_transfer, though self_attention fails
    calls.clear()
    score_with_regrade(rubric, _outcomes(broken), regrade)  # the whole rubric: both
    assert calls == [{"02_trainable_weights/weight_transfer"}, {"04_multihead/multihead_wrapper"}]
    assert dependencies(rubric, "04_multihead/multihead_wrapper") == {"03_causal/causal_attention"}


def test_own_mistake_is_not_forgiven_by_the_regrade(tmp_path: Path) -> None:
    rubric = load_rubric()
    broken = {"03_causal/causal_attention", "04_multihead/multihead_wrapper"}
    results = score_with_regrade(rubric, _outcomes(broken),
                                 lambda ids, subs: [o for o in _outcomes(broken) if o.exercise in ids])
    assert results["04_multihead/multihead_wrapper"].score == 0
    assert "stand-in" not in results["04_multihead/multihead_wrapper"].message


def test_what_the_student_s_modules_imported_as_they_ran_is_built_on() -> None:
    """An import the worker saw (grader/sandbox/kata_worker/imports.py) is an edge as ``depends_on`` is,
    followed through the student's own modules (a helpers.py); a module without a stand-in is never
    replaced; a module that passes over stand-ins of its own is kept in what is built on it, and only
    what it builds on is replaced; imports in a loop end."""
    rubric = load_rubric()
    module = {ex_id: ex.module for ex_id, ex in rubric.exercises.items()}
    mask, causal = "03_causal/causal_mask", "03_causal/causal_attention"
    head_split, mha = "04_multihead/head_split", "04_multihead/multihead_attention"
    imports = {(module[causal], module[mask]), (module[mha], "helpers"), ("helpers", module[head_split]),
               (module[mha], module["02_trainable_weights/weight_transfer"]), (module[mask], module[causal])}
    assert dependencies(rubric, mha, imports) == {head_split}  # weight_transfer has no stand-in
    assert dependencies(rubric, WRAPPER, imports) == {causal, mask}  # through its depends_on's imports
    assert dependencies(rubric, mask, imports) == {causal}  # a loop ends
    calls = []

    def regrade(ids, substitutes):  # over a stand-in causal_mask, the student's CausalAttention passes
        calls.append((set(ids), set(substitutes)))
        fixed = set() if module[mask] in substitutes else {causal, WRAPPER}
        return [o for o in _outcomes(fixed) if o.exercise in ids]

    broken = {mask, causal, WRAPPER, head_split, mha}
    results = score_with_regrade(rubric, _outcomes(broken), regrade, imports=imports)
    assert (results[causal].score, results[WRAPPER].score, results[mha].score) == tuple(
        rubric.exercises[e].points for e in (causal, WRAPPER, mha))
    assert results[mask].score == 0 and results[head_split].score == 0
    assert calls.index(({causal}, {module[mask]})) < calls.index(({WRAPPER}, {module[mask]}))  # CausalAttention first
    # causal_mask's own importer (the loop) passes once re-graded: nothing of causal_mask's is replaced
    assert ({mha}, {module[head_split]}) in calls and len(calls) == 3
    assert results[WRAPPER].regraded_with == (mask,)  # the student's CausalAttention kept: it passes over it


MASK, WRAPPER = "03_causal/causal_mask", "04_multihead/multihead_wrapper"


def _report(failing: set[str] = frozenset({MASK})) -> GradeReport:
    """A grading's report, scored by grader.grading.scoring from made-up outcomes (``failing``'s tests
    fail with "boom"; a re-grade over stand-ins passes), the GPU-run check skipped."""
    rubric = load_rubric()
    results = score_with_regrade(rubric, _outcomes(failing),
                                 lambda ids, subs: [o for o in _outcomes(set()) if o.exercise in ids])
    return GradeReport("sub", results, GpuCheckResult.skipped("not run"), "process", 1.25, ["graded without a sandbox"])


def test_json_report_contract() -> None:
    rubric = load_rubric()
    data = json.loads(dumps(to_json(_report())))
    assert {"score", "max_score", "execution_time", "isolation", "tests", "exercises", "gpu_check"} <= set(data)
    assert set(data["exercises"]) == set(rubric.exercises)
    without_gpu = rubric.max_score - rubric.gpu_points
    assert data["score"] == without_gpu - rubric.exercises[MASK].points and data["max_score"] == without_gpu
    assert data["exercises"][MASK] == {"score": 0, "max_score": rubric.exercises[MASK].points, "status": "failed",
                                       "message": "2 of 2 tests failed; first: boom"}
    assert data["gpu_check"]["status"] == "skipped" and data["gpu_check"]["max_score"] == 0
    assert all({"name", "score", "max_score", "status", "output"} <= set(t) for t in data["tests"])
    assert data["tests"][-1]["name"] == "gpu_check"
    assert sum(t["score"] for t in data["tests"]) == pytest.approx(data["score"])


def _shape(value: object) -> object:
    """The keys of a JSON value and the kinds of its leaves (a list of objects: the set of their shapes)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(_shape(item), sort_keys=True) for item in value if isinstance(item, dict)}) or "list"
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def test_the_fake_reports_of_the_tests_have_the_json_reports_shape(tmp_path: Path) -> None:
    """grader/tests/support.py's fake_report, and the reports its FAKE_JOB prints, are shaped as to_json's:
    the tests of the renderers and of score-all run on what a grading writes."""
    real = _shape(to_json(_report()))
    assert _shape(fake_report()) == real
    assert _shape(fake_report({MASK: 0.0}, [(f"{MASK}: test_x", 0.0, 4.0, "boom")], gpu=None, warnings=["w"])) == real
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "score.txt").write_text("0.5")
    task = json.dumps({"student": "ann", "path": str(tmp_path / "ann")}) + "\n"
    job = subprocess.run(fake_job(tmp_path), input=task, capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert job.returncode == 0, job.stderr
    assert _shape(json.loads(job.stdout)["report"]) == real


def _boom() -> dict:
    """A JSON report whose causal_mask fails both its tests with "boom", the GPU-run check skipped."""
    return fake_report({MASK: 0.0}, [(f"{MASK}: test_{i}", 0.0, 4.0, "boom") for i in range(2)], gpu=None,
                       warnings=["graded without a sandbox"])


def test_gradescope_report_has_only_accepted_keys() -> None:
    data = to_gradescope(_boom())
    assert set(data) <= GRADESCOPE_TOP
    assert all(set(t) <= GRADESCOPE_TEST and t["status"] in ("passed", "failed") for t in data["tests"])
    assert data["score"] == _boom()["score"] and "warning: graded without a sandbox" in data["output"]


def test_text_report_names_the_first_failure_and_uses_no_colour_off_a_terminal() -> None:
    data = _boom()
    text = to_text(data, colour=False)
    assert "✗ causal_mask" in text and "boom" in text and f"Total: {data['score']:g} / {data['max_score']:g}" in text
    assert "\033[" not in text and "warning: graded without a sandbox" in text
    assert "\033[" in to_text(data, colour=True)


def test_text_report_indents_every_line_of_the_gpu_check() -> None:
    """The GPU-run check's message has one line per module: each sits under the check's row."""
    report = _report(set())
    points = load_rubric().gpu_points
    report.gpu_check = GpuCheckResult(points * 2 / 3, points, "simulated_failed", "cuda:0 (simulated)",
                                      "CausalAttention fails on the GPU\nMultiHeadAttentionWrapper: runs on the device")
    lines = to_text(to_json(report), colour=False).splitlines()
    row = next(i for i, line in enumerate(lines) if "GPU-run check" in line)
    assert lines[row + 1:row + 3] == ["      CausalAttention fails on the GPU", "      MultiHeadAttentionWrapper: runs on the device"]


@pytest.mark.parametrize("name", list(FORMATS))
def test_score_offers_every_format_of_the_table(name: str) -> None:
    """A new report format is its module and one line of grader/reports/formats.py: ``score --format``
    offers what the table holds, and each renders the JSON report as text."""
    assert build_parser().parse_args(["score", "--format", name]).format == name
    assert render(name, _boom(), "messages").endswith("\n")


def test_the_text_report_says_why_a_passing_exercise_was_regraded() -> None:
    """The table shows the message of an exercise that did not pass, and of one that passed over a
    stand-in (the JSON report says so only in its message), not of one that just passed."""
    text = to_text(to_json(_report({"03_causal/causal_attention", WRAPPER})), colour=False)
    rows = text.split("multihead_wrapper", 1)[1].splitlines()
    assert "stand-in causal_attention" in rows[1], text
    assert not any(line.strip().startswith("all ") for line in text.splitlines())  # just passed: no message


def test_a_flat_submission_is_regrouped_by_module_name(tmp_path: Path) -> None:
    from grader.rubric import SOLUTIONS_DIR

    flat = tmp_path / "upload"
    flat.mkdir()
    for ex in load_rubric().exercises.values():
        (flat / f"{ex.module}.py").write_bytes(ex.reference_file.read_bytes())
    (flat / "notes.py").write_text("raise SystemExit('never run')\n")
    (flat / "conftest.py").write_text("raise SystemExit('never run')\n")
    os.symlink("/etc/passwd", flat / "stolen.py")
    root = locate_submission(flat, tmp_path / "s1")
    assert root != flat and root.is_relative_to(tmp_path / "s1")
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    assert found == sorted(ex.id + ".py" for ex in load_rubric().exercises.values())
    assert (root / "03_causal" / "causal_mask.py").read_bytes() == (SOLUTIONS_DIR / "03_causal" / "causal_mask.py").read_bytes()

    archive = tmp_path / "flat.zip"  # zipped flat, in one top folder, with a symlinked module left out
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("hw/causal_mask.py", "x = 1\n")
    root = locate_submission(archive, tmp_path / "s2")
    assert [p.relative_to(root).as_posix() for p in root.rglob("*.py")] == ["03_causal/causal_mask.py"]

    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(SOLUTIONS_DIR / "03_causal" / "causal_mask.py", linked / "causal_mask.py")
    with pytest.raises(SubmissionError, match="nothing that looks like a submission"):
        locate_submission(linked, tmp_path / "s3")  # a link is not a module file


def test_reading_and_formatting_reports_imports_neither_torch_nor_the_worker_client() -> None:
    """grader/grading/results.py keeps the result types apart from the code that runs the tests."""
    code = ("import sys, grader.reports.formats, grader.reports.feedback, grader.classroom.class_summary, grader.grading.results; "
            "print(sorted(m for m in ('torch', 'grader.sandbox.client', 'grader.grading.engine') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_a_grades_sheet_row_s_cells_add_up_to_its_score() -> None:
    """Scores in thirds: the cells (4 places) and the total agree, as a spreadsheet's SUM of the row would.
    (A third of a point each: whatever the rubric's points, the 4th place of the total is not 0.)"""
    rubric = load_rubric()
    exercises = {ex_id: ExerciseResult(ex_id, round(1 / 3, 4), ex.points, "partial", "")
                 for ex_id, ex in rubric.exercises.items()}
    report = GradeReport("sub", exercises, GpuCheckResult(round(rubric.gpu_points / 3, 2), rubric.gpu_points,
                                                          "failed", "cpu", ""), "process", 1.0)
    row = csv_row("alice", {"report": to_json(report)})
    cells = [float(row[ex_id]) for ex_id in rubric.exercises] + [float(row["gpu_check"])]
    assert float(row["score"]) == round(sum(cells), 4) and float(row["score"]) != round(sum(cells), 2)


SCRIPT = '''"""My chapter 3, in one file."""
import torch
import torch.nn as nn
from causal_attention import CausalAttention

SCALE_FLOOR = 1e-6


def _scale(d):
    return max(d, SCALE_FLOOR) ** 0.5


def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens)


def causal_mask(num_tokens):  # fixed: the one that runs
    return torch.tril(torch.ones(num_tokens, num_tokens))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.scale = _scale(d_out)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)])


torch.manual_seed(123)
print(MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2))
'''


def test_one_script_is_split_by_its_top_level_definitions(tmp_path: Path) -> None:
    """Each module gets the script's imports, its own definitions and the helpers they reach, on the
    script's own lines; another module's name it uses is imported from that module; the demo is left out."""
    (tmp_path / "upload").mkdir()
    (tmp_path / "upload" / "chapter3.py").write_text(SCRIPT)
    notes: list[str] = []
    root = locate_submission(tmp_path / "upload", tmp_path / "scratch", notes)
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    assert found == ["03_causal/causal_attention.py", "03_causal/causal_mask.py", "04_multihead/multihead_wrapper.py"]
    script = SCRIPT.splitlines()
    for rel in found:
        lines = (root / rel).read_text().splitlines()
        assert len(lines) == len(script)
        assert all(line in ("", script[i]) or line.startswith(script[i] + "; from ") for i, line in enumerate(lines))
    kept = {rel: {line.split("(")[0] for line in (root / rel).read_text().splitlines() if line.startswith(("def", "class"))}
            for rel in found}
    assert kept == {"03_causal/causal_attention.py": {"def _scale", "class CausalAttention"},
                    "03_causal/causal_mask.py": {"def causal_mask"},  # once: the later one
                    "04_multihead/multihead_wrapper.py": {"class MultiHeadAttentionWrapper"}}
    wrapper = (root / "04_multihead" / "multihead_wrapper.py").read_text()
    assert "\nimport torch; from causal_attention import CausalAttention\n" in wrapper
    assert "SCALE_FLOOR = 1e-6" in (root / "03_causal" / "causal_attention.py").read_text()
    mask = (root / "03_causal" / "causal_mask.py").read_text()
    assert mask.count("def causal_mask") == 1 and "torch.tril" in mask
    assert "from causal_attention import" not in (root / "03_causal" / "causal_attention.py").read_text()
    assert not any("print(" in (root / rel).read_text() for rel in found)
    assert any("split by its top-level definitions into causal_mask, causal_attention, multihead_wrapper" in n for n in notes)
    assert any("top-level code that defines nothing left out (lines 33, 34)" in n for n in notes), notes


@pytest.mark.parametrize("files, says", [
    ({"hw.py": "def causal_mask(n:\n"}, "hw.py: a syntax error at line 1: it cannot be split into modules"),
    ({"model.py": "def mask(n):\n    return n\n", "notes.txt": "x"},
     "found model.py (defines none of the kata's names); notes.txt"),
    ({}, "found no file at all"),
])
def test_what_is_no_submission_is_refused_with_what_was_found(tmp_path: Path, files: dict, says: str) -> None:
    (tmp_path / "upload").mkdir()
    for name, text in files.items():
        (tmp_path / "upload" / name).write_text(text)
    with pytest.raises(SubmissionError, match="nothing that looks like a submission") as err:
        locate_submission(tmp_path / "upload", tmp_path / "scratch")
    assert says in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_script_nested_deeper_than_python_recurses_is_split_or_refused_in_one_line(tmp_path: Path) -> None:
    """An attack on the splitter's walk: an expression nested ~1000 deep parses, then broke a recursive walk
    (RecursionError, a traceback); deeper, the parser refuses it: one line."""
    for depth, splits in ((990, True), (20000, False)):
        upload = tmp_path / f"up{depth}"
        upload.mkdir()
        (upload / "chapter.py").write_text("import torch\n\ndef causal_mask(n):\n    return " + "+".join(["n"] * depth) + "\n")
        if splits:
            root = locate_submission(upload, tmp_path / f"s{depth}")
            assert (root / "03_causal" / "causal_mask.py").is_file()
        else:
            with pytest.raises(SubmissionError, match="chapter.py: not Python that can be read"):
                locate_submission(upload, tmp_path / f"s{depth}")
