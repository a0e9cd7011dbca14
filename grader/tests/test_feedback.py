"""grader.reports.feedback and the --visibility levels (grader.reports.visibility.redact), also in Gradescope's results.json."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.files import private_files
from grader.reports.feedback import feedback_filename, feedback_text, write_feedback
from grader.reports.gradescope import to_gradescope
from grader.reports.visibility import redact, wrap
from grader.rubric import load_rubric
from grader.tests.support import fake_report

MASK = "03_causal/causal_mask"
VALUES = ", ".join(f"0.{1000 + i}" for i in range(36))
FIRST = ("called mask_future_scores(scores of shape (6, 6), seed 1234)  [004_seeded.txt]:\n"
         f"  expected shape (6, 6): first 6 of 6 rows (last dim): [[{VALUES}], ...]\n"
         "  got      shape (6, 6): [[0.5311, -inf, 1.25e-3], [nan, inf, 0.0]]\n"
         "  largest absolute difference 0.882 (tolerance: atol 0.0001, rtol 0)\n"
         "  likely cause: the -inf entries are not where expected (expected -inf at 15 positions, got 0)")
SECOND = "RuntimeError: The size of tensor a (4) must match the size of tensor b (6)"


def report() -> dict:
    """causal_mask half right (two of its tests fail, with FIRST and SECOND), the GPU-run check failed."""
    half = load_rubric().exercises[MASK].points / 2
    tests = [(f"{MASK}: test_printed", 0.0, half / 2, FIRST), (f"{MASK}: test_batched", 0.0, half / 2, SECOND),
             (f"{MASK}: test_ok", half, half, "")]
    return fake_report({MASK: half}, tests, gpu=0.0, gpu_status="simulated_failed",
                       gpu_message="CausalAttention: the mask is a plain attribute (self.mask = 0.25)",
                       warnings=["a note for the instructor only"])


def test_a_regraded_exercise_says_why_even_when_it_passed():
    data = report()
    wrapper = "04_multihead/multihead_wrapper"
    data["exercises"][wrapper]["message"] = ("graded with the reference causal_attention in place of yours, because "
                                            "yours fails its own tests (those points are lost there, once). "
                                            "all 6 tests passed")
    text = feedback_text("alice", data, "messages")
    points = data["exercises"][wrapper]["max_score"]
    assert f"## {wrapper}: {points:g} / {points:g} (passed)" in text and "graded with the reference causal_attention" in text
    assert "## 01_simple_attention/normalization" not in text  # passed, nothing to say


def test_messages_hides_inputs_and_values_and_keeps_the_diagnosis():
    text = redact(FIRST, "messages")
    assert text.splitlines()[0] == "called mask_future_scores(…):"
    assert "seed 1234" not in text and "004_seeded" not in text
    assert "0.1000" not in text and "0.5311" not in text and "1.25e-3" not in text and "[…]" in text
    assert "expected shape (6, 6)" in text and "largest absolute difference 0.882 (tolerance: atol 0.0001" in text
    assert "likely cause: the -inf entries are not where expected (expected -inf at 15 positions, got 0)" in text
    assert redact(SECOND, "messages") == SECOND
    assert redact(FIRST, "full") == FIRST and redact(FIRST, "scores") == ""
    with pytest.raises(ValueError):
        redact(FIRST, "everything")


@pytest.mark.parametrize("visibility", ["full", "messages", "scores"])
def test_feedback_lists_every_failing_test_at_each_visibility(visibility):
    data = report()
    text = feedback_text("alice", data, visibility)
    mask = data["exercises"][MASK]
    assert f"Total: {data['score']:g} / {data['max_score']:g}" in text
    assert f"| `{MASK}` | {mask['score']:g} / {mask['max_score']:g} | partly passed |" in text
    assert "`test_printed`" in text and "`test_batched`" in text and "`test_ok`" not in text
    assert f"GPU-run check: 0 / {data['gpu_check']['max_score']:g} (simulated_failed" in text
    assert "a note for the instructor only" not in text  # warnings are the instructor's
    if visibility == "full":
        assert "0.1000" in text and "seed 1234" in text and SECOND in text
        assert max(len(line) for line in text.splitlines()) <= 110, "long tensors are wrapped"
        assert "0.1035" in text  # ... and nothing of them is lost
    elif visibility == "messages":
        assert "0.1000" not in text and "seed 1234" not in text and "0.25" not in text and SECOND in text
        assert "likely cause:" in text and "called mask_future_scores(…):" in text
    else:
        assert "called" not in text and "RuntimeError" not in text and "plain attribute" not in text


def test_gradescope_results_follow_the_visibility():
    data = report()
    full = to_gradescope(data)
    messages = to_gradescope(data, "messages")
    scores = to_gradescope(data, "scores")
    failed = [t for t in full["tests"] if t["status"] == "failed" and t["name"] != "gpu_check"]
    assert [t["output"] for t in failed] == [wrap(FIRST), SECOND]
    assert "0.1000" not in str(messages["tests"]) and "likely cause:" in str(messages["tests"])
    assert all("output" not in t for t in scores["tests"] if t["name"] != "gpu_check")
    assert [t["score"] for t in scores["tests"]] == [t["score"] for t in full["tests"]]
    assert all(t["visibility"] == "visible" for t in messages["tests"]) and messages["score"] == full["score"]
    with pytest.raises(ValueError):
        to_gradescope(data, "secret")


@pytest.mark.parametrize("name", ["../../etc/passwd", "/abs/path", ".hidden", "a/b", "..", "", "x" * 300,
                                  "Jane Doe", "élève", "a\nb", "con.md"])
def test_untrusted_names_stay_in_the_folder(tmp_path: Path, name: str):
    out = tmp_path / "feedback"
    out.mkdir()
    path = write_feedback(name, report(), out, "scores")
    assert path.parent == out and path.is_file() and not path.name.startswith(".")
    assert len(path.name) < 120 and "/" not in path.name
    assert sorted(p.name for p in out.iterdir()) == [path.name]  # no temporary file left


def test_plain_names_are_kept_and_distinct_names_never_collide():
    assert feedback_filename("alice") == "alice.md" and feedback_filename("bob-2.x") == "bob-2.x.md"
    assert feedback_filename("a b") != feedback_filename("a_b") and feedback_filename("a_b") == "a_b.md"


def test_a_planted_symlink_is_replaced_not_followed(tmp_path: Path):
    out, victim = tmp_path / "feedback", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep me")
    os.symlink(victim, out / "alice.md")
    with private_files():  # the file replacing the link is as private as a new one
        write_feedback("alice", report(), out, "full")
    assert victim.read_text() == "keep me" and not (out / "alice.md").is_symlink()
    assert (out / "alice.md").stat().st_mode & 0o077 == 0, oct((out / "alice.md").stat().st_mode)


def _cli(*args: str, cwd: Path | None = None):
    import subprocess
    import sys

    from grader.rubric import REPO_ROOT

    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True,
                          cwd=cwd or REPO_ROOT, timeout=240)


def test_cli_bad_feedback_options_exit_2_with_one_line(tmp_path: Path):
    for args in (["score", "exercises", "--feedback-dir", str(tmp_path / "missing")],
                 ["score", "exercises", "--visibility", "everything"]):
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.timeout(240)
def test_cli_score_writes_feedback_and_redacted_gradescope_results(tmp_path: Path):
    import json

    from grader.authoring import mutation

    mutant = tmp_path / "13_causal_mask_transposed"  # a submission of one module: the mutated causal_mask.py
    mutation.write_patched(mutation.mutant("13_causal_mask_transposed"), mutant)
    out = tmp_path / "feedback"
    out.mkdir()
    proc = _cli("score", str(mutant), "--gpu", "skip", "--format", "gradescope", "--visibility", "messages",
                "--feedback-dir", str(out), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr
    results, data = json.loads(proc.stdout), json.loads((tmp_path / "r.json").read_text())
    text = (out / "13_causal_mask_transposed.md").read_text()
    for written in (tmp_path / "r.json", out / "13_causal_mask_transposed.md"):  # another student's grades
        assert written.stat().st_mode & 0o077 == 0, oct(written.stat().st_mode)
    failing = [t for t in data["tests"] if t["status"] == "failed" and t["name"].startswith("03_causal/causal_attention: ")]
    assert len(failing) >= 2  # (its module is missing from the mutant)
    for test in failing:  # every failing test of an exercise, not just the first
        assert f"`{test['name'].split(': ', 1)[1]}`" in text
    shown = [t["output"] for t in data["tests"] if "expected shape" in t.get("output", "") and "[" in t["output"]]
    assert shown, "the mutant's messages carry tensor values to hide"
    assert "expected shape" in text and "[…]" in text and "called " in text
    for test in results["tests"]:
        assert "[0." not in test.get("output", "") and "[-0." not in test.get("output", "")
    assert not any("[0." in line for line in text.splitlines())
