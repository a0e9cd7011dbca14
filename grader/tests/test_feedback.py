"""grader.reports.feedback and the --visibility levels (grader.visibility.redact), also in Gradescope's
results.json; the documents by their names (grader.reports.sources), the stubs' one line per module, an error
row's feedback, and ``python -m grader feedback`` (grader.reports.feedback_from_json)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from grader import cli
from grader.authoring import known_results
from grader.classroom import score_all as batch
from grader.classroom.overrides import read_overrides
from grader.files import private_files
from grader.grading.options import GradeOptions
from grader.reports.feedback import feedback_filename, feedback_text, sections, write_feedback
from grader.reports.gradescope import to_gradescope
from grader.reports.repeats import MAX_LINES, said_once
from grader.reports.sources import document_names, readable_sources
from grader.visibility import redact, wrap
from grader.rubric import EXERCISES_DIR, TESTS_DIR, load_rubric
from support import fake_class, fake_report

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
    assert f"GPU-run check: 0 / {data['gpu_check']['max_score']:g} (failed on a simulated GPU" in text
    assert "simulated_failed" not in text  # statuses in words
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
    assert "simulated_failed" not in json.dumps(messages) and "failed on a simulated GPU" in messages["output"]
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
def test_cli_score_writes_feedback_and_redacted_gradescope_results(tmp_path: Path, shared_domains, monkeypatch, capsys):
    """The ``score`` command run in this process, its grading in this session's template (a ``python -m
    grader`` process would import torch twice, itself and its template: 4 CPU-s; the command line in a
    process of its own is test_cli_bad_feedback_options_exit_2_with_one_line's, and test_intake_and_reports.py's)."""
    from grader.authoring import mutation
    from grader.grading.grade import grade

    mutant = tmp_path / "13_causal_mask_transposed"  # a submission of one module: the mutated causal_mask.py
    mutation.write_patched(mutation.mutant("13_causal_mask_transposed"), mutant)
    out = tmp_path / "feedback"
    out.mkdir()
    monkeypatch.setattr("grader.reports.commands.grade", lambda path, options: grade(path, options, shared_domains))
    rc = cli.main(["score", str(mutant), "--gpu", "skip", "--format", "gradescope", "--visibility", "messages",
                   "--feedback-dir", str(out), "--json", str(tmp_path / "r.json")])
    stdout, stderr = capsys.readouterr()
    assert rc == 0, stderr
    results, data = json.loads(stdout), json.loads((tmp_path / "r.json").read_text())
    text = (out / "13_causal_mask_transposed.md").read_text()
    for written in (tmp_path / "r.json", out / "13_causal_mask_transposed.md"):  # another student's grades
        assert written.stat().st_mode & 0o077 == 0, oct(written.stat().st_mode)
    failing = [t for t in data["tests"] if t["status"] == "failed" and t["name"].startswith(f"{MASK}: ")]
    assert len(failing) >= 2
    for test in failing:  # every failing test of an exercise, not just the first
        assert f"`{test['name'].split(': ', 1)[1]}`" in text
    # causal_attention.py is missing from the mutant: one line, not each of its tests
    assert "- causal_attention: not handed in (every test raised ModuleNotFoundError" in text
    assert "`test_printed_seed123`" not in text
    shown = [t["output"] for t in data["tests"] if "expected shape" in t.get("output", "") and "[" in t["output"]]
    assert shown, "the mutant's messages carry tensor values to hide"
    assert "expected shape" in text and "[…]" in text and "called " in text
    for test in results["tests"]:
        assert "[0." not in test.get("output", "") and "[-0." not in test.get("output", "")
    assert not any("[0." in line for line in text.splitlines())


# --- the documents by the names students know them by -------------------------------------------------


def test_the_documents_table_names_every_document_the_hidden_tests_cite():
    """grader.reports.sources reads the names from exercises/documents/README.md: all of the oracle's
    documents, each a file students have."""
    cited = json.loads((TESTS_DIR / "fixtures" / "printed_tensors.json").read_text())["documents"]
    names = document_names()
    assert set(names) == set(cited) - {"README"}, names
    assert all(cited[number].startswith(number + "_") for number in names)
    assert all((EXERCISES_DIR / "documents" / name).is_file() for name in names.values()), names


def test_labels_and_test_ids_name_the_documents_as_students_know_them():
    names = document_names()
    assert readable_sources("called causal_mask(6)  [001 In[818]]:") == f"called causal_mask(6)  [{names['001']}, In [818]]:"
    assert readable_sources("x  [000 3.5.1, 001 In[820]]") == f"x  [{names['000']}, 3.5.1; {names['001']}, In [820]]"
    assert readable_sources("y  [003 In[14]-[15]; seed 123]") == f"y  [{names['003']}, In [14]-[15]; seed 123]"
    assert readable_sources("test_p[000-journey-query2]") == f"test_p[{names['000']}, journey-query2]"
    assert readable_sources("[004; all six queries]") == f"[{names['004']}; all six queries]"
    untouched = "[1000, 1001, 999] [0.000, -inf] [004_seeded.txt] test_r[float32] [007 x]"
    assert readable_sources(untouched) == untouched

    data = fake_report({MASK: 0.0}, [(f"{MASK}: test_values[001-seed789]", 0.0, 1.0,
                                      "called causal_mask(6)  [001 In[818]]:\n  expected shape (6, 6): [[1.0, 0.0]]")])
    for visibility in ("full", "scores"):
        text = feedback_text("alice", data, visibility)
        assert f"`test_values[{names['001']}, seed789]`" in text and "001" not in text, text
    assert f"called causal_mask(6)  [{names['001']}, In [818]]:" in feedback_text("alice", data, "full")
    gradescope = json.dumps(to_gradescope(data, "full"), ensure_ascii=False)  # Gradescope's output and names too
    assert f"[{names['001']}, In [818]]" in gradescope and "001 In[" not in gradescope and "[001-" not in gradescope


# --- the stubs: one line per module ------------------------------------------------------------------


def stub_error(ex_id: str) -> str:
    """The output of a hidden test whose call reached the stub of ``ex_id`` as handed out (its first
    ``raise NotImplementedError("...")`` in exercises/), as a grading reports it."""
    tree = ast.parse((EXERCISES_DIR / f"{ex_id}.py").read_text())
    message = next(node.exc.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Raise)
                   and isinstance(node.exc, ast.Call) and getattr(node.exc.func, "id", "") == "NotImplementedError")
    return f"NotImplementedError: {message}\n  (raised at {ex_id}.py:36 in f)"


# Whose stub a hidden test of an exercise reaches first, where it is not the exercise's own (as a grading of
# the stubs shows: weight_transfer's tests build a SelfAttention_v2 first).
STOPS_FIRST_IN = {"02_trainable_weights/weight_transfer": "02_trainable_weights/self_attention"}


def stubs_report() -> dict:
    """Every module a stub, as handed in."""
    rubric = load_rubric()
    tests = [(f"{ex_id}: test_{i}", 0.0, 1.0, stub_error(STOPS_FIRST_IN.get(ex_id, ex_id)))
             for ex_id in rubric.exercises for i in range(8)]
    return fake_report({ex_id: 0.0 for ex_id in rubric.exercises}, tests)


@pytest.mark.parametrize("visibility", ["full", "messages", "scores"])
def test_a_student_who_handed_in_the_stubs_reads_one_line_per_module(visibility):
    rubric = load_rubric()
    text = feedback_text("bob", stubs_report(), visibility)
    assert "not written yet" not in text and "Failing tests" not in text and len(text) < 4000, len(text)
    lines = text.splitlines()
    for ex_id in rubric.exercises:
        module = ex_id.split("/")[1]
        own = ([f"- {module}: waits for self_attention (every test raised NotImplementedError from its stub)"]
               if module == "weight_transfer" else
               [f"- {module}: not started (every test raised NotImplementedError from the stub)"])
        assert [line for line in lines if line.startswith(f"- {module}:")] == own, text
        assert f"| `{ex_id}` | 0 / {rubric.exercises[ex_id].points:g} | failed |" in lines
    assert "## Not started" in lines


def test_only_an_exercise_whose_every_test_hit_a_stub_or_a_missing_module_is_one_line():
    data = stubs_report()
    ours = [t for t in data["tests"] if t["name"].startswith(MASK + ": ")]
    ours[0]["output"] = "called causal_mask(6):\n  expected shape (6, 6), got (5, 5)"  # one test got past the stub
    attention = [t for t in data["tests"] if t["name"].startswith("03_causal/causal_attention: ")]
    for test in attention:
        test["output"] = "ModuleNotFoundError: No module named 'causal_attention'"  # not handed in
    dropout = [t for t in data["tests"] if t["name"].startswith("03_causal/attention_dropout: ")]
    for test in dropout:
        test["output"] = "ModuleNotFoundError: No module named 'numpyy'"  # the student's own import: theirs to read
    found = {s.exercise: s for s in sections(data, "full")}
    assert not found[MASK].not_started and len(found[MASK].failing) == len(ours)
    assert not found["03_causal/attention_dropout"].not_started and len(found["03_causal/attention_dropout"].failing) == len(dropout)
    assert found["03_causal/causal_attention"].not_started and found["03_causal/causal_attention"].failing == []
    assert found["03_causal/causal_attention"].summary == ("causal_attention: not handed in (every test raised "
                                                            "ModuleNotFoundError: No module named 'causal_attention')")
    passed = fake_report(tests=[(f"{MASK}: test_ok", 1.0, 1.0, "")])
    assert not any(s.not_started for s in sections(passed, "full"))


# --- score-all: an error row's feedback, and a run that writes none -----------------------------------


class _NoJob:
    """score-all's job, never started: score_all_here answers for it, in this process."""

    def __init__(self, *args):
        pass

    def stop(self):
        pass

    close = kill = stop


def score_all_here(monkeypatch, tmp_path: Path, answers: dict, **options) -> batch.BatchSummary:
    """score_all over a fake class of ``answers``' students (no job, no grading, no class summary): each
    student's result is ``answers[name](their submission's path)``."""
    folder = fake_class(tmp_path / "class", {name: None for name in answers})
    monkeypatch.setattr(batch, "Job", _NoJob)
    monkeypatch.setattr(batch, "_run", lambda jobs, queue, opts, record: [record(n, answers[n](p)) for n, p in queue])
    monkeypatch.setattr("grader.classroom.class_outputs.CLASS_OUTPUTS", {})
    return batch.score_all(folder, tmp_path / "grades.csv",
                           batch.BatchOptions(jobs=1, grading=GradeOptions(gpu="skip"), **options))


def test_an_error_row_gets_feedback_that_says_why(tmp_path: Path, monkeypatch):
    answers = {"ann": lambda path: {"report": fake_report()},
               "carol": lambda path: {"error": f"{path}: nothing that looks like a submission (expected group folders)"}}
    summary = score_all_here(monkeypatch, tmp_path, answers, feedback_dir=tmp_path / "feedback", visibility="scores")
    assert summary.errors == ["carol"] and sorted(p.name for p in summary.feedback) == ["ann.md", "carol.md"]
    text = (tmp_path / "feedback" / "carol.md").read_text()
    assert "could not be graded" in text and "carol: nothing that looks like a submission (expected group folders)" in text
    assert str(tmp_path) not in text, "the instructor's folders are not the student's business"
    assert not any("feedback" in warning for warning in summary.warnings), summary.warnings


def test_a_resume_that_writes_no_feedback_says_so_in_one_line(tmp_path: Path, monkeypatch):
    answers = {"ann": lambda path: {"report": fake_report()}, "bea": lambda path: {"report": fake_report(fraction=0.5)}}
    first = score_all_here(monkeypatch, tmp_path, answers, json_dir=tmp_path / "json", feedback_dir=tmp_path / "fb1")
    assert len(first.feedback) == 2 and not any("feedback" in w for w in first.warnings)
    again = score_all_here(monkeypatch, tmp_path, answers, json_dir=tmp_path / "json", feedback_dir=tmp_path / "fb2")
    assert again.skipped == ["ann", "bea"] and again.feedback == [] and list((tmp_path / "fb2").iterdir()) == []
    said = [w for w in again.warnings if "feedback" in w]
    assert said == [f"no feedback file written to {tmp_path / 'fb2'}: all 2 rows were kept from an earlier run "
                    f"(python -m grader feedback {tmp_path / 'json'} --feedback-dir {tmp_path / 'fb2'} writes theirs)"]

    # an override given on a resume writes that student's feedback again: counted, and no warning
    (tmp_path / "overrides.csv").write_text("student,exercise,points,reason,who\nbea,total,+1,regrade request,TA\n")
    third = score_all_here(monkeypatch, tmp_path, answers, json_dir=tmp_path / "json", feedback_dir=tmp_path / "fb2",
                           overrides=read_overrides(tmp_path / "overrides.csv"))
    assert [p.name for p in third.feedback] == ["bea.md"] and not any("feedback" in w for w in third.warnings)
    assert "overridden: +1 by TA: regrade request" in (tmp_path / "fb2" / "bea.md").read_text()
    # none changed (the override dropped, then kept dropped): the way on is the rescore, whose feedback shows the
    # final grades (`feedback` would not)
    (tmp_path / "overrides.csv").write_text("student,exercise,points,reason,who\n")
    for _ in range(2):
        fourth = score_all_here(monkeypatch, tmp_path, answers, json_dir=tmp_path / "json",
                                feedback_dir=tmp_path / "fb3", overrides=read_overrides(tmp_path / "overrides.csv"))
    assert [w for w in fourth.warnings if "feedback" in w] == [
        f"no feedback file written to {tmp_path / 'fb3'}: all 2 rows were kept from an earlier run (python -m grader "
        f"rescore {tmp_path / 'json'} --csv {tmp_path / 'grades.csv'} --feedback-dir {tmp_path / 'fb3'}, with the same "
        "--overrides and --late-policy, writes theirs with the final grades)"]


# --- python -m grader feedback JSON_DIR --feedback-dir DIR ----------------------------------------------


def test_the_feedback_command_writes_every_report_again_at_any_visibility(tmp_path: Path, capsys):
    reports = {"ann": report(), "bob": stubs_report()}
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    for name, data in reports.items():
        (json_dir / f"{name}.json").write_text(json.dumps(data))
    (json_dir / "broken.json").write_text('{"score": 1')
    (json_dir / "notes.txt").write_text("not a report")
    for visibility in ("scores", "full"):
        out = tmp_path / visibility
        assert cli.main(["feedback", str(json_dir), "--feedback-dir", str(out), "--visibility", visibility]) == 0
        err = capsys.readouterr().err.splitlines()
        assert sorted(p.name for p in out.iterdir()) == ["ann.md", "bob.md"]
        for name, data in reports.items():
            assert (out / f"{name}.md").read_text() == feedback_text(name, data, visibility)
            assert (out / f"{name}.md").stat().st_mode & 0o077 == 0
        assert err[0].startswith("warning: broken.json: not JSON (") and err[0].endswith("no feedback for broken")
        assert err[1:] == [f"feedback ({visibility}): 2 files written to {out}; 1 JSON file gave none (above)"]
    assert "0.1000" in (tmp_path / "full" / "ann.md").read_text()
    assert "0.1000" not in (tmp_path / "scores" / "ann.md").read_text()


def test_the_feedback_command_refuses_bad_input_in_one_line(tmp_path: Path, capsys):
    (tmp_path / "a-file").write_text("{}")
    (tmp_path / "empty").mkdir()
    (tmp_path / "others").mkdir()
    (tmp_path / "others" / "alice.json").write_text(json.dumps({"student": "alice", "grades": [1, 2]}))
    (tmp_path / "others" / "bob.json").write_text(json.dumps(["not", "a", "report"]))
    cases = {"missing": "no such directory", "a-file": "not a directory", "empty": "holds no JSON reports",
             "others": "no feedback file written"}
    for folder, why in cases.items():
        out = tmp_path / f"out-{folder}"
        assert cli.main(["feedback", str(tmp_path / folder), "--feedback-dir", str(out)]) == 2, folder
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err and "Traceback" not in err, (folder, err)
        assert not out.exists() or list(out.iterdir()) == []
    assert "not a JSON report" in err


CAUSAL = "03_causal/causal_attention"
UNPARSED = "SyntaxError: expected ':' (causal_attention.py, line 52)\n  (raised at 03_causal/causal_attention.py:52)"


def raised_at_one_line(size: int) -> str:
    return (f"RuntimeError: shape '[2, {size}, 2, 2]' is invalid for input of size {size * 4}\n"
            "  (raised at 03_causal/causal_attention.py:66 in forward)")


def repeats_report() -> dict:
    """causal_attention fails five tests on a file that does not parse, causal_mask three on one line of
    the student's (other sizes in each test), and once with a message of 45 lines."""
    tall = "called causal_mask(4):\n" + "\n".join(f"  line {i}" for i in range(44))
    tests = [*((f"{CAUSAL}: test_{i}", 0.0, 1.0, UNPARSED) for i in range(5)),
             *((f"{MASK}: test_sizes_{n}", 0.0, 1.0, raised_at_one_line(n)) for n in (3, 5, 7)),
             (f"{MASK}: test_tall", 0.0, 1.0, tall), (f"{MASK}: test_ok", 1.0, 1.0, "")]
    return fake_report({CAUSAL: 0.0, MASK: 1.0}, tests)


@pytest.mark.parametrize("visibility", ["full", "messages"])
def test_the_same_failure_in_several_tests_is_said_once_in_at_most_20_lines(visibility):
    text = feedback_text("alice", repeats_report(), visibility)
    assert text.count("SyntaxError") == 1 and "(and in 4 more tests: test_1, test_2, test_3, ...)" in text
    assert text.count("- `test_4`: 0 / 1: the same failure as test_0 (said there)") == 1
    assert text.count("RuntimeError") == 1 and "(and in 2 more tests: test_sizes_5, test_sizes_7)" in text
    blocks = text.split("```")[1::2]
    assert blocks and max(len([line for line in b.splitlines() if line.strip()]) for b in blocks) <= MAX_LINES
    assert "line 43" not in text and "more lines)" in text
    gradescope = [t.get("output", "") for t in to_gradescope(repeats_report(), visibility)["tests"]]
    assert sum("SyntaxError" in o for o in gradescope) == 1 and sum("RuntimeError" in o for o in gradescope) == 1
    assert max(len(o.splitlines()) for o in gradescope) <= MAX_LINES


def test_different_failures_are_each_said_and_one_alone_is_left_as_it_is():
    said = said_once([("a", raised_at_one_line(3)), ("b", UNPARSED), ("c", SECOND), ("d", "")])
    assert said == [raised_at_one_line(3), UNPARSED, SECOND, ""]


def test_messages_never_edit_the_kata_s_likely_cause_lines_and_a_forged_one_is_redacted():
    causes = load_kata_mistakes()
    for name in ("SCALED_BY_D_IN", "DROPOUT_NOT_APPLIED", "MASK_NOT_CUT"):
        assert any(c in causes[name] for c in ("[-1]", "0.5", "[1]")), name  # numbers and subscripts among them
    library = [known_results.cause_text(p) for p in known_results.library()]  # those written out in a patch too
    edited = [text for text in [*causes.values(), *library] if redact(f"  likely cause: {text}", "messages")
              != f"  likely cause: {text}"]
    assert len(causes) > 50 and not edited, edited
    forged = "RuntimeError: boom\n  likely cause: the hidden input is 0.4921 [0.1, 0.2]"
    assert "0.4921" not in redact(forged, "messages") and "0.1" not in redact(forged, "messages")
    assert redact("  got x[0] = 0.25, keys.shape[-1] = 3", "messages") == "  got x[0] = …, keys.shape[-1] = 3"


def load_kata_mistakes() -> dict[str, str]:
    """The kata's messages of known mistakes, read from the file the grader reads them from."""
    names: dict[str, str] = {}
    for node in ast.parse((TESTS_DIR / "kata_mistakes.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            names[node.targets[0].id] = node.value.value
    return names
