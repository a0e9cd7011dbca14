"""The rubric rewards the work, not the edge cases around it, and a mistake costs its points once.

Each submission below is graded by the real grader (``grader.grading.grade.grade``, one template for the
module) and its score is checked against what the rubric promises:

* ``lazy_raising``: every function and forward raises ValueError, the classes build their layers and
  mask buffers: at most 1% of the rubric's points in all;
* ``lazy_identity``: the same, with forwards that return W_value(x) (or x): at most 3%;
* ``lazy_documents_only``: the reference code, answering only for inputs that look like the
  documents' (at most 4 decimals) and zeros otherwise (``gate.py.append``): at most 10%;
* the reference solutions: full marks;
* one mistake each, which must cost points in its own module only: its own exercise and, for a module
  the GPU-run check runs, that module's own share of the check (in proportion to the exercise's core
  points lost), never another module's points or the exercises built on it: a mask not cut to T x T
  (mutant 20), a missing ``multihead_attention.py``, a syntax error in ``causal_attention.py`` (none of
  whose tests passes, its device test included), a numeric mistake, a mask kept in a plain attribute (the
  same share whatever else is finished).

The lazy submissions live in ``grader/tests/submissions/lazy_*`` (``X.hostile`` replaces the reference
module ``X``; ``gate.py.append`` is appended to every reference module).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from grader.authoring import mutation
from grader.grading.results import TestOutcome
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.rubric import KINDS, SOLUTIONS_DIR, TESTS_DIR, load_rubric
from grader.grading.scoring import core_fraction, summarize
from grader.reports.feedback import feedback_text
from grader.reports.gradescope import to_gradescope
from grader.reports.json_report import to_json
from support import build_submission

pytestmark = pytest.mark.timeout(300)
RUBRIC = load_rubric()
TOTAL = RUBRIC.max_score
SHARE = RUBRIC.gpu_points / len(RUBRIC.gpu_modules)  # each module's fixed share of the GPU-run check
CHECKED = {m.module for m in RUBRIC.gpu_modules}
CHECKED_EXERCISES = tuple(m.exercise for m in RUBRIC.gpu_modules)


@pytest.fixture(scope="module")
def graded(shared_domains):
    """``graded(path, **options)``: the grader's report of the submission at ``path`` (the GPU-run check
    included), graded with ``GradeOptions(**options)``."""

    def run(path: Path, **options):
        return grade(path, GradeOptions(**options), shared_domains)

    return run


def _scores(report) -> dict[str, float]:
    return {**{ex_id: r.score for ex_id, r in report.exercises.items()}, "gpu_check": report.gpu_check.score}


def _lost(report) -> dict[str, float]:
    """Where the submission lost points: ``{exercise id or gpu_check: points lost}``."""
    maxima = {**{ex_id: ex.points for ex_id, ex in RUBRIC.exercises.items()}, "gpu_check": RUBRIC.gpu_points}
    return {k: round(maxima[k] - v, 4) for k, v in _scores(report).items() if maxima[k] - v > 1e-6}


# ---- the rubric itself ---------------------------------------------------------------------------

def test_every_exercise_splits_its_points_over_kinds():
    raw = json.loads((TESTS_DIR / "rubric.json").read_text())["exercises"]
    for ex_id, ex in RUBRIC.exercises.items():
        split = ex.kind_points
        assert set(split) <= set(KINDS) and split["core"] > 0, ex_id
        assert sum(split.values()) == pytest.approx(ex.points), ex_id
        assert split.get("printed", 0) <= split["core"], f"{ex_id}: printed tests worth more than core ones"
        assert "kinds" in raw[ex_id], f"{ex_id}: rubric.json names no kinds"
    printed = sum(ex.kind_points.get("printed", 0) for ex in RUBRIC.exercises.values())
    core = sum(ex.kind_points["core"] for ex in RUBRIC.exercises.values())
    assert printed <= core / 4, (printed, core)


def test_every_hidden_test_names_its_kind():
    """A test without a kind marker would count as core (tests/conftest.py): every one here names its kind."""
    import ast

    unmarked = []
    for path in sorted(TESTS_DIR.glob("*/test_*.py")):
        source = path.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                decorators = " ".join(ast.get_source_segment(source, d) or "" for d in node.decorator_list)
                if not any(f"pytest.mark.{kind}" in decorators for kind in KINDS):
                    unmarked.append(f"{path.relative_to(TESTS_DIR)}::{node.name}")
    assert not unmarked, unmarked


def test_the_test_side_knows_the_same_kinds():
    import sys

    sys.path.insert(0, str(TESTS_DIR))
    try:
        from kata_seam import TEST_KINDS
    finally:
        sys.path.remove(str(TESTS_DIR))
    assert tuple(TEST_KINDS) == KINDS


# An exercise whose split has every kind: the synthetic outcomes below are worth what its tests are.
SPLIT = next(ex for ex in RUBRIC.exercises.values() if set(ex.kind_points) == set(KINDS))


def _outcome(name: str, kind: str, passed: bool, points: float) -> TestOutcome:
    return TestOutcome(f"tests/{SPLIT.id}.py::{name}", SPLIT.id, points, passed, "" if passed else f"{name} failed",
                       0.0, kind)


def test_edge_tests_count_in_proportion_to_the_core_points_earned():
    """No cliffs: a passing edge test earns its points times the share of the core points earned, so
    failing one more core test costs its points and its share of the edge points, never more."""
    core, printed, edge = (SPLIT.kind_points[kind] for kind in ("core", "printed", "edge"))
    outcomes = [_outcome("core_a", "core", True, core / 2), _outcome("core_b", "core", False, core / 2),
                _outcome("printed", "printed", True, printed), _outcome("edge_a", "edge", True, edge / 2),
                _outcome("edge_b", "edge", False, edge / 2)]
    result = summarize(SPLIT, outcomes)
    assert result.score == pytest.approx(core / 2 + printed + edge / 4, abs=1e-4)  # core_a, printed, half of edge_a
    weighed = next(o for o in result.outcomes if o.nodeid.endswith("edge_a"))
    assert weighed.passed and weighed.points == pytest.approx(edge / 4, abs=1e-4)
    assert weighed.message.startswith("passed; counts 50% of its points") and "1 of 2 fail" in weighed.message
    # The exercise's message quotes a test that failed, not one that counted in part.
    assert "first: core_b failed" in result.message and "1 edge-case tests passed and count in proportion" in result.message
    # The tests' scores in a report add up to the exercise's score.
    assert sum(o.points for o in result.outcomes) == pytest.approx(result.score, abs=1e-4)

    fixed = summarize(SPLIT, [replace(o, passed=True) if o.kind == "core" else o for o in outcomes])
    assert fixed.score == pytest.approx(core + printed + edge / 2, abs=1e-4)
    assert sum(o.points == o.max_points for o in fixed.outcomes if o.passed) == 4
    no_core = summarize(SPLIT, [replace(o, passed=False) if o.kind == "core" else o for o in outcomes])
    assert no_core.score == pytest.approx(printed, abs=1e-4)  # printed only
    assert "passed, but not counted" in no_core.outcomes[3].message
    # One more failing core test never costs more than its own points and its share of the edge points.
    for failing in range(3):
        cores = [_outcome(f"c{i}", "core", i >= failing, core / 3) for i in range(3)]
        edges = [_outcome("e", "edge", True, edge)]
        before = summarize(SPLIT, cores + edges).score
        after = summarize(SPLIT, [replace(cores[failing], passed=False) if o is cores[failing] else o
                                  for o in cores] + edges).score
        assert before - after <= core / 3 + edge / 3 + 1e-4


# ---- whole gradings --------------------------------------------------------------------------------

def test_solutions_score_full_marks(graded):
    report = graded(SOLUTIONS_DIR)
    assert report.score == TOTAL, _lost(report)
    assert report.gpu_check.score == RUBRIC.gpu_points, report.gpu_check.message
    tests_sum = sum(o.max_points for r in report.exercises.values() for o in r.outcomes)
    assert tests_sum == pytest.approx(TOTAL - RUBRIC.gpu_points)


# The most each may earn, as a share of the rubric's total.
@pytest.mark.parametrize("name,most", [("lazy_raising", 0.01), ("lazy_identity", 0.03), ("lazy_documents_only", 0.10)])
def test_lazy_submissions_earn_almost_nothing(graded, tmp_path, name, most):
    report = graded(build_submission(name, tmp_path))
    earned = {k: v for k, v in _scores(report).items() if v}
    print(f"{name}: {report.score} of {TOTAL}: {earned}", report.gpu_check.message)
    assert report.score <= most * TOTAL, earned
    assert report.gpu_check.score == 0, report.gpu_check.message  # no module matches the reference on the CPU
    for result in report.exercises.values():  # edge tests earn in proportion to the core points earned
        core = [o for o in result.outcomes if o.kind == "core"]
        share = sum(o.points for o in core) / sum(o.max_points for o in core) if core else 1.0
        edge = [o for o in result.outcomes if o.kind == "edge"]
        assert sum(o.points for o in edge) <= share * sum(o.max_points for o in edge) + 1e-9, result.id


def _share_lost(report, ex_id: str) -> float:
    """What the GPU-run check takes for ``ex_id``'s module: its share, in proportion to the core points lost."""
    return SHARE * (1 - (core_fraction(report.exercises[ex_id].outcomes) or 0.0))


def test_mask_not_cut_to_tokens_costs_points_in_causal_attention_only(graded, tmp_path):
    """Some of CausalAttention's core tests fail (T < context_length): its exercise loses those points, and
    its share of the GPU-run check the same proportion, no more (no cliff); no other module loses any."""
    sub = build_submission("mask_not_cut", tmp_path)
    mutation.write_patched(mutation.mutant("20_causal_mask_not_cut_to_tokens"), sub)
    report = graded(sub)
    lost = _lost(report)
    ca = "03_causal/causal_attention"
    assert set(lost) == {ca, "gpu_check"}, (lost, report.gpu_check.message)
    assert 0 < lost[ca] < RUBRIC.exercises[ca].points
    assert 0 < lost["gpu_check"] < SHARE and lost["gpu_check"] == pytest.approx(_share_lost(report, ca), abs=0.01)
    assert report.gpu_check.status == "simulated_passed" or report.gpu_check.status == "passed"


def test_missing_multihead_attention_costs_its_exercise_only(graded, tmp_path):
    sub = build_submission("missing_mha", tmp_path)
    (sub / "04_multihead" / "multihead_attention.py").unlink()
    report = graded(sub)
    mha = "04_multihead/multihead_attention"
    assert _lost(report) == pytest.approx({mha: RUBRIC.exercises[mha].points, "gpu_check": SHARE}, abs=0.01), \
        report.gpu_check.message
    assert "MultiHeadAttention: not there (no multihead_attention.py)" in report.gpu_check.message


def test_a_syntax_error_in_causal_attention_costs_its_exercise_only_and_no_test_of_it_passes(graded, tmp_path):
    sub = build_submission("syntax_error_ca", tmp_path)
    path = sub / "03_causal" / "causal_attention.py"
    path.write_text(path.read_text().replace("def forward(self, x", "def forward(self x", 1))
    report = graded(sub)
    ca, wrapper_id = "03_causal/causal_attention", "04_multihead/multihead_wrapper"
    assert _lost(report) == pytest.approx({ca: RUBRIC.exercises[ca].points, "gpu_check": SHARE}, abs=0.01), \
        report.gpu_check.message
    wrapper = report.exercises[wrapper_id]
    assert wrapper.regraded_with == (ca,) and wrapper.score == RUBRIC.exercises[wrapper_id].points
    lines = report.gpu_check.message.splitlines()
    assert lines[0].startswith("CausalAttention: not there (causal_attention.py does not parse: SyntaxError")
    # The wrapper is judged over the stand-in in the GPU-run check too, as in its re-grade.
    assert lines[1].startswith("MultiHeadAttentionWrapper: runs on the device, judged over a stand-in CausalAttention")
    # No test of a file that does not parse "passes" (its device test is no GPU-run check's to charge here: the
    # check never ran it), and the students read the syntax error once, in words, with no path they lack.
    own = report.exercises[ca]
    assert own.outcomes and not [o.nodeid for o in own.outcomes if o.passed] and "tests passed" not in own.message
    data = to_json(report)
    text, gradescope = feedback_text("alice", data, "full"), json.dumps(to_gradescope(data, "full"))
    assert text.count("(raised at 03_causal/causal_attention.py:") == 1, text  # in its tests, once
    for words in ("tests/standins", "simulated_", "<unknown>"):
        assert words not in text and words not in gradescope, words


# ---- one mistake, one charge: a stub and a deleted file are the same ------------------------------

# The modules whose absence could cost points outside their own exercise: those others build on, those
# built on another, those the GPU-run check runs. Every other module is covered by "all" (every module
# stubbed against every one deleted): nothing builds on it, so its exercise is scored on its own.
AT_STAKE = sorted(CHECKED | {ex.module for ex in RUBRIC.exercises.values() if ex.depends_on}
                  | {RUBRIC.exercises[d].module for ex in RUBRIC.exercises.values() for d in ex.depends_on})


def _without(tmp_path: Path, modules: list[str], how: str) -> Path:
    """The solutions with ``modules`` left as the stubs of exercises/ (``how="stub"``) or deleted."""
    sub = build_submission(f"{how}-{'-'.join(modules)}", tmp_path)
    for module in modules:
        target = sub / RUBRIC.by_module[module].group / f"{module}.py"
        if how == "stub":
            target.write_text((SOLUTIONS_DIR.parent / "exercises" / RUBRIC.by_module[module].group / f"{module}.py").read_text())
        else:
            target.unlink()
    return sub


@pytest.mark.slow
@pytest.mark.parametrize("modules", [*([m] for m in AT_STAKE), [ex.module for ex in RUBRIC.exercises.values()]],
                         ids=[*AT_STAKE, "all"])
def test_a_stub_and_a_deleted_file_score_the_same(shared_domains, tmp_path, modules):
    """Whatever is left unwritten costs the same as what is not handed in, in its own exercise, in the
    exercises built on it (re-graded over stand-ins: nothing) and in the GPU-run check (its own module's
    share, when the check runs it; nothing of another module's)."""
    scope = None if len(modules) > 1 else tuple(  # the module's exercise, those built on it, the GPU-run check's
        ex.id for ex in RUBRIC.exercises.values()
        if ex.module in modules or ex.module in CHECKED or RUBRIC.by_module[modules[0]].id in ex.depends_on)
    stub, deleted = (grade(_without(tmp_path, modules, how), GradeOptions(exercises=scope), shared_domains)
                     for how in ("stub", "deleted"))
    assert _scores(stub) == _scores(deleted), (_lost(stub), _lost(deleted))
    unwritten = CHECKED & set(modules)  # their shares of the GPU-run check, and no other
    assert set(_lost(stub)) == {RUBRIC.by_module[m].id for m in modules} | ({"gpu_check"} if unwritten else set()), \
        (_lost(stub), stub.gpu_check.message)
    assert _lost(stub).get("gpu_check", 0) == pytest.approx(SHARE * len(unwritten), abs=0.01), stub.gpu_check.message


def test_a_numeric_mistake_costs_its_module_only(graded, tmp_path):
    """MultiHeadAttention scaled by sqrt(d_out) instead of sqrt(head_dim): wrong on the CPU, fine on any
    device. Its exercise charges it, and its share of the GPU-run check goes as its core points do."""
    sub = build_submission("mha_scale", tmp_path)
    path = sub / "04_multihead" / "multihead_attention.py"
    text = path.read_text()
    assert "attn_scores / self.head_dim**0.5" in text
    path.write_text(text.replace("attn_scores / self.head_dim**0.5", "attn_scores / self.d_out**0.5"))
    report = graded(sub)
    mha = "04_multihead/multihead_attention"
    assert set(_lost(report)) == {mha, "gpu_check"}, (_lost(report), report.gpu_check.message)
    assert _lost(report)["gpu_check"] == pytest.approx(_share_lost(report, mha), abs=0.01), report.gpu_check.message
    line = report.gpu_check.message.splitlines()[-1]
    assert line.startswith("MultiHeadAttention: runs on the GPU (simulated) [") and line.endswith(
        "% of its exercise's core points are earned, and its share counts as much]"), report.gpu_check.message


def test_a_numeric_mistake_in_causal_attention_costs_its_exercise_and_its_share_only(graded, tmp_path):
    """CausalAttention scaled by d_k instead of sqrt(d_k): its exercise and its own share of the GPU-run
    check pay, in proportion to its core points lost; the wrapper built on it (re-graded, and judged over
    the stand-in in the check) and MultiHeadAttention lose nothing."""
    sub = build_submission("ca_scale", tmp_path)
    path = sub / "03_causal" / "causal_attention.py"
    text = path.read_text()
    assert "attn_scores / keys.shape[-1] ** 0.5" in text
    path.write_text(text.replace("attn_scores / keys.shape[-1] ** 0.5", "attn_scores / keys.shape[-1]"))
    report = graded(sub, exercises=CHECKED_EXERCISES)
    ca = "03_causal/causal_attention"
    assert set(_lost(report)) == {ca, "gpu_check"}, (_lost(report), report.gpu_check.message)
    assert _lost(report)["gpu_check"] == pytest.approx(_share_lost(report, ca), abs=0.01), report.gpu_check.message
    assert "MultiHeadAttentionWrapper: runs on the device, judged over a stand-in" in report.gpu_check.message


def test_only_multihead_attention_done_earns_its_share_only(graded, tmp_path):
    """CausalAttention and the wrapper left as the stubs, MultiHeadAttention right: the check gives
    MultiHeadAttention's share, not the whole check (the points are never split over what is finished)."""
    sub = _without(tmp_path, ["causal_attention", "multihead_wrapper"], "stub")
    report = graded(sub, exercises=CHECKED_EXERCISES)
    assert report.gpu_check.score == pytest.approx(SHARE, abs=0.01), report.gpu_check.message
    assert report.exercises["04_multihead/multihead_attention"].status == "passed"


PLAIN_MASK = ('self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
              "self.mask = (torch.triu(torch.ones(context_length, context_length), diagonal=1))")


def test_a_mask_kept_as_a_plain_attribute_is_charged_once(shared_domains, tmp_path):
    """CausalAttention's mask in a plain attribute: right on the CPU, stays behind on a GPU. Both its
    buffer test and the GPU-run check see it: the check charges it, CausalAttention's share (and not again
    for the wrapper built on it); under --gpu skip the buffer test does."""
    sub = build_submission("plain_mask", tmp_path)
    path = sub / "03_causal" / "causal_attention.py"
    assert PLAIN_MASK[0] in path.read_text()
    path.write_text(path.read_text().replace(*PLAIN_MASK))
    report = grade(sub, GradeOptions(exercises=CHECKED_EXERCISES), shared_domains)
    assert _lost(report) == pytest.approx({"gpu_check": SHARE}, abs=0.01), (_lost(report), report.gpu_check.message)
    buffer_test = next(o for o in report.exercises["03_causal/causal_attention"].outcomes
                       if o.nodeid.endswith("test_mask_is_a_registered_buffer"))
    assert buffer_test.passed and "the GPU-run check charges it" in buffer_test.message
    skipped = grade(sub, GradeOptions(gpu="skip", exercises=CHECKED_EXERCISES), shared_domains)  # no check: no points at stake
    assert set(_lost(skipped)) - {"gpu_check"} == {"03_causal/causal_attention"}, _lost(skipped)


def test_a_device_bug_costs_the_same_share_whatever_else_is_finished(shared_domains, tmp_path):
    """The plain-attribute mask with only CausalAttention done (the wrapper and MultiHeadAttention the
    stubs) costs what it costs with everything done (the test above): CausalAttention's share, not the
    whole check. Finished alone and right, CausalAttention earns its share only."""
    only = _without(tmp_path / "right", ["multihead_wrapper", "multihead_attention"], "stub")
    right = grade(only, GradeOptions(exercises=CHECKED_EXERCISES), shared_domains)
    assert right.gpu_check.score == pytest.approx(SHARE, abs=0.01), right.gpu_check.message
    path = only / "03_causal" / "causal_attention.py"
    path.write_text(path.read_text().replace(*PLAIN_MASK))
    plain = grade(only, GradeOptions(exercises=CHECKED_EXERCISES), shared_domains)
    assert right.gpu_check.score - plain.gpu_check.score == pytest.approx(SHARE, abs=0.01), plain.gpu_check.message
    assert {k: v for k, v in _scores(plain).items() if k != "gpu_check"} == \
        {k: v for k, v in _scores(right).items() if k != "gpu_check"}


def test_in_an_nbgrader_assignment_its_own_modules_share_the_check(shared_domains, tmp_path):
    """04_multihead as an nbgrader assignment: only its own modules count, each with a fixed share of the
    check's points among them. The CausalAttention pasted into it left as the stub costs nothing here (the
    wrapper is judged over the stand-in); a plain-attribute mask in MultiHeadAttention costs its share."""
    group = RUBRIC.gpu_modules[-1].exercise.split("/")[0]
    own = [m for m in RUBRIC.gpu_modules if m.exercise.startswith(group + "/")]
    sub = _without(tmp_path, ["causal_attention"], "stub")
    path = sub / group / "multihead_attention.py"
    assert PLAIN_MASK[0] in path.read_text()
    path.write_text(path.read_text().replace(*PLAIN_MASK))
    report = grade(sub, GradeOptions(exercises=tuple(ex.id for ex in RUBRIC.in_group(group))), shared_domains)
    assert report.gpu_check.max_score == RUBRIC.gpu_points
    assert _lost(report) == pytest.approx({"gpu_check": RUBRIC.gpu_points / len(own)}, abs=0.01), report.gpu_check.message
    assert [line.split(":")[0].split(" ")[0] for line in report.gpu_check.message.splitlines()] == [m.name for m in own]
