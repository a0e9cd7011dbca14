"""The from-scratch rule judges the operations that ran (exercises/kata_trace.py, the worker's
grader/sandbox/kata_worker/tracing.py, grader/grading/scoring.py ``charge_shortcuts``).

* every public route to a forbidden operation is seen, at the torch-function or the aten level, and
  honest idioms are not (the trace alone, in this process);
* graded: a submission built from the solutions with a route substituted in each name the rubric forbids
  operations in loses the tests that reach it, naming the operation and the route; the public check
  (``assert_does_its_own_work``) names them too; dead code and a local named like a helper cost nothing;
* code that hides operations from the trace is put up for review (the report, the text, the CSV, the
  class summary), never silently paid.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.classroom.grades_sheet import REVIEW_COLUMN, csv_row, read_class, write_grades
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.results import TestOutcome
from grader.grading.scoring import charge_shortcuts
from grader.classroom.class_numbers import summarize_class
from grader.classroom.class_summary import to_markdown
from grader.reports.json_report import to_json
from grader.reports.text import to_text
from grader.rubric import EXERCISES_DIR, GROUPS, STANDINS_DIR, load_rubric
from support import SOLUTIONS, build_submission, students_tool

pytestmark = pytest.mark.timeout(300)
RUBRIC = load_rubric()
F = torch.nn.functional
X, Q = torch.rand(2, 3, 4), torch.rand(1, 2, 3, 4)

# Every public route to a forbidden kind of operation, with what the trace must name.
ROUTES = {
    "torch.softmax": (lambda: torch.softmax(X, -1), "softmax"),
    "Tensor.softmax": (lambda: X.softmax(-1), "softmax"),
    "nn.Softmax": (lambda: torch.nn.Softmax(-1)(X), "softmax"),
    "F.softmin(-x)": (lambda: F.softmin(-X, -1), "softmax"),
    "log_softmax().exp()": (lambda: torch.special.log_softmax(X, -1).exp(), "softmax"),
    "torch.ops.aten._softmax": (lambda: torch.ops.aten._softmax(X, -1, False), "softmax"),
    "F.dropout(training=False)": (lambda: F.dropout(X, 0.5, training=False), "dropout"),
    "nn.Dropout": (lambda: torch.nn.Dropout(0.5)(X), "dropout"),
    "torch.ops.aten.native_dropout": (lambda: torch.ops.aten.native_dropout(X, 0.5, True), "dropout"),
    "F.scaled_dot_product_attention": (lambda: F.scaled_dot_product_attention(Q, Q, Q), "scaled_dot_product_attention"),
    "torch._C._nn.scaled_dot_product_attention": (lambda: torch._C._nn.scaled_dot_product_attention(Q, Q, Q),
                                                  "scaled_dot_product_attention"),
    "torch.ops.aten._scaled_dot_product_attention_math": (
        lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, Q, Q), "scaled_dot_product_attention"),
    "nn.MultiheadAttention": (lambda: torch.nn.MultiheadAttention(4, 2, batch_first=True)(X, X, X),
                              "multi_head_attention"),
}
HONEST = {
    "exp / sum": lambda: torch.exp(X) / torch.exp(X).sum(-1, keepdim=True),
    "bernoulli_ keep-mask": lambda: X * torch.empty_like(X).bernoulli_(0.5).div_(0.5),
    "masked scores": lambda: (Q @ Q.transpose(-2, -1)).masked_fill(torch.ones(3, 3).triu(1).bool(), -torch.inf),
}


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_to_a_forbidden_operation_is_traced(route):
    trace_module = students_tool("kata_trace")
    run, kind = ROUTES[route]
    with trace_module.Trace() as trace:
        run()
    assert kind in trace.ran, (route, trace.ran)
    assert not trace.left


@pytest.mark.parametrize("idiom", HONEST)
def test_honest_idioms_run_no_forbidden_operation(idiom):
    with students_tool("kata_trace").Trace() as trace:
        HONEST[idiom]()
    assert trace.ran == {} and not trace.left


def test_the_rubric_forbids_only_kinds_the_trace_knows():
    categories = students_tool("kata_trace").CATEGORIES
    assert {kind for ex in RUBRIC.exercises.values() for _, kinds in ex.forbidden for kind in kinds} <= set(categories)
    assert RUBRIC.shortcut_table == json.loads((EXERCISES_DIR / "shortcuts.json").read_text())


def test_hiding_from_the_trace_is_named():
    with students_tool("kata_trace").Trace() as trace:
        torch._C._pop_torch_function_stack()
        torch.softmax(X, -1)
    assert any("function mode stack" in sign for sign in trace.left), trace.left
    assert torch._C._len_torch_function_stack() == 0 and torch._C._len_torch_dispatch_stack() == 0


# ---- graded: submissions built from the solutions -------------------------------------------------

# (module file, the line a route goes in front of, the route: run, its result discarded, so that every
# test that reaches the name would pass but for the rule).
SUBSTITUTED = [
    ("01_simple_attention/normalization.py", "    exp = torch.exp(scores)\n",
     "    torch.special.log_softmax(scores, dim).exp()\n"),
    ("01_simple_attention/normalization.py", "    shifted = scores - scores.amax(dim=dim, keepdim=True)\n",
     "    nnf.softmin(-scores, dim)\n"),
    ("02_trainable_weights/scaled_attention.py", "    d_k = keys.shape[-1]\n",
     "    scaled_dot_product_attention(queries, keys, values)\n"),
    ("02_trainable_weights/self_attention.py", "        keys = x @ self.W_key\n",
     "        torch._C._nn.scaled_dot_product_attention(x, x, x)\n"),
    ("02_trainable_weights/self_attention.py", "        keys = self.W_key(x)\n",
     "        torch.ops.aten._scaled_dot_product_attention_math(x, x, x)\n"),
    ("03_causal/attention_dropout.py", "    if p == 1.0:\n", "    _drop_some(x, p, False)\n"),
    ("03_causal/causal_attention.py", "        keys = self.W_key(x)\n",
     "        getattr(torch.nn.functional, 'scaled_dot_' + 'product_attention')(x, x, x)\n"),
    ("04_multihead/multihead_wrapper.py", "        return torch.cat([head(x) for head in self.heads], dim=-1)\n",
     "        with torch.random.fork_rng():\n"
     "            torch.nn.MultiheadAttention(x.shape[-1], 1, batch_first=True)(x, x, x)\n"),
    ("04_multihead/multihead_attention.py", "        queries = self.W_query(x).view(",
     "        torch.ops.aten.scaled_dot_product_attention(x, x, x)\n"),
]
IMPORTS = {"01_simple_attention/normalization.py": "nnf = torch.nn.functional\n",
           "02_trainable_weights/scaled_attention.py": "from torch.nn.functional import *\n",
           "03_causal/attention_dropout.py": "from torch.nn.functional import dropout as _drop_some\n"}


def _substituted(tmp_path: Path) -> Path:
    sub = build_submission("from_scratch_routes", tmp_path)
    for file, anchor, route in SUBSTITUTED:
        path = sub / file
        text = path.read_text()
        assert text.count(anchor) == 1, (file, anchor)
        path.write_text(text.replace(anchor, route + anchor))
    for file, line in IMPORTS.items():
        path = sub / file
        path.write_text(path.read_text().replace("import torch\n", "import torch\n" + line, 1))
    return sub


def test_every_route_is_charged_where_the_rubric_forbids_it(shared_domains, tmp_path):
    """Each name the rubric forbids operations in runs one (renamed, aliased, star-imported, softmin,
    log_softmax().exp(), torch.ops, torch._C, a detour through getattr, nn.MultiheadAttention): every
    test that reaches it counts nothing, naming the operation and its route; the exercises with no
    forbidden name (weight_transfer builds SelfAttention modules) keep their points."""
    report = grade(_substituted(tmp_path), GradeOptions(), shared_domains)
    forbidding = {ex.id for ex in RUBRIC.exercises.values() if ex.forbidden}
    lost = {ex_id for ex_id, r in report.exercises.items() if r.score < r.max_score}
    assert lost == forbidding, lost
    messages = "\n".join(o.message for r in report.exercises.values() for o in r.outcomes)
    for name, _ in (n for ex in RUBRIC.exercises.values() for n in ex.forbidden):
        assert f"counts nothing: {name} ran " in messages, name
    for route in ("torch function special_log_softmax", "torch function softmin", "torch function dropout",
                  "torch function _scaled_dot_product_attention_math", "torch function multi_head_attention_forward"):
        assert route in messages, route
    assert report.review == []
    for ex_id in sorted(forbidding):
        reached = [o for o in report.exercises[ex_id].outcomes if set(o.reached) & {n for n, _ in RUBRIC.exercises[ex_id].forbidden}]
        assert reached and not any(o.passed for o in reached if o.kind == "core"), ex_id
    public = _public_checks(_substituted(tmp_path / "public"))
    for name, _ in (n for ex in RUBRIC.exercises.values() for n in ex.forbidden):
        assert f"likely cause: {name} ran " in public, (name, public)


DEAD_CODE = ("03_causal/causal_attention.py", "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n",
             "    def debug_forward(self, x):\n"
             "        return torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)\n\n")
HELPER_NAME = ("01_simple_attention/normalization.py", "    exp = torch.exp(scores)\n    return exp / exp.sum(",
               "    helper = torch.exp(scores)\n    return helper / helper.sum(")


@pytest.mark.slow  # whole gradings and torch subprocesses; the inner loop keeps the routes' proof
def test_dead_code_and_helper_names_cost_nothing(shared_domains, tmp_path):
    """A debugging method forward never calls, and a local variable named like a top-level helper that
    calls torch.softmax: nothing forbidden runs, so nothing is charged, and nothing is up for review."""
    sub = build_submission("from_scratch_honest", tmp_path)
    causal = sub / DEAD_CODE[0]
    causal.write_text(causal.read_text().replace(DEAD_CODE[1], DEAD_CODE[2] + DEAD_CODE[1], 1))
    norm = sub / HELPER_NAME[0]
    text = norm.read_text()
    assert HELPER_NAME[1] in text
    norm.write_text(text.replace(HELPER_NAME[1], HELPER_NAME[2], 1)
                    + "\n\ndef helper(scores):\n    return torch.softmax(scores, dim=-1)\n")
    report = grade(sub, GradeOptions(gpu="skip"), shared_domains)
    assert report.score == report.max_score, {k: r.message for k, r in report.exercises.items() if r.score < r.max_score}
    assert report.review == []
    assert _public_checks(sub) == ""


HIDDEN = {
    # dispatch internals named: the trace is switched off around the operation
    "01_simple_attention/normalization.py": ("    exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)\n",
        "    from torch.utils._python_dispatch import _disable_current_modes\n"
        "    with torch._C.DisableTorchFunction(), _disable_current_modes():\n"
        "        return torch.ops.aten._softmax(scores, dim, False)\n"),
    # a thread of its own (the trace's modes are the calling thread's), no suspect name in the file
    "02_trainable_weights/scaled_attention.py": ("    attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)\n",
        "    box = []\n"
        "    worker = __import__('thr' + 'eading').Thread(target=lambda: box.append(torch.softmax(attn_scores / d_k**0.5, dim=-1)))\n"
        "    worker.start()\n    worker.join()\n    attn_weights = box[0]\n"),
    # the trace's mode popped, by a name no scan reads: seen at run time, the mode no longer on the stack
    "03_causal/attention_dropout.py": ("    if p == 1.0:\n",
        "    getattr(torch._C, ''.join(reversed('kcats_noitcnuf_hcrot_pop_')))()\n"
        "    return torch.nn.functional.dropout(x, p, training)\n"),
}


@pytest.mark.slow  # whole gradings and torch subprocesses; the inner loop keeps the routes' proof
def test_hiding_from_the_trace_is_put_up_for_review(domains, tmp_path):
    """In every isolation mode: dispatch internals named in the code, a thread of its own, the trace's mode
    popped at run time. None is paid silently: the report, its text, the CSV row and the class summary say so."""
    sub = build_submission("from_scratch_hidden", tmp_path)
    for file, (anchor, route) in HIDDEN.items():
        path = sub / file
        text = path.read_text()
        assert text.count(anchor) == 1, file
        path.write_text(text.replace(anchor, route + anchor))
    report = grade(sub, GradeOptions(gpu="skip"), domains)
    review = "\n".join(report.review)
    assert "normalization.py names" in review and "DisableTorch" in review, review
    assert "started a thread" in review, review
    assert "function mode stack was changed" in review, review
    data = to_json(report)
    assert data["review"] == report.review
    assert "FOR REVIEW: " in to_text(data, colour=False)
    row = csv_row("mallory", {"report": data}, "0" * 64)
    assert "started a thread" in row[REVIEW_COLUMN]
    csv_path = tmp_path / "grades.csv"
    write_grades(csv_path, [row, csv_row("alice", {"report": {**data, "review": []}}, "1" * 64)])
    summary = summarize_class(read_class(csv_path))
    assert set(summary.review) == {"mallory"}
    assert "## For review" in to_markdown(summary)


def _public_checks(sub: Path) -> str:
    """What ``assert_does_its_own_work`` says of each module of ``sub`` that the rubric forbids operations
    in (a process of its own: the student's modules imported under their bare names)."""
    modules = sorted({ex.module for ex in RUBRIC.exercises.values() if ex.forbidden})
    program = ("import sys\n"
               f"sys.path[:0] = {[str(sub / g) for g in GROUPS] + [str(EXERCISES_DIR)]!r}\n"
               "import kata_checks\n"
               f"for module in {modules!r}:\n"
               "    try:\n        kata_checks.assert_does_its_own_work(module)\n"
               "    except AssertionError as e:\n        print(e)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow  # whole gradings and torch subprocesses; the inner loop keeps the routes' proof
def test_the_solutions_and_stand_ins_run_no_forbidden_operation(tmp_path):
    assert _public_checks(SOLUTIONS) == ""
    standins = tmp_path / "standins"
    for ex in RUBRIC.exercises.values():
        if (STANDINS_DIR / f"{ex.module}.py").is_file():
            (standins / ex.group).mkdir(parents=True, exist_ok=True)
            (standins / ex.group / f"{ex.module}.py").write_text((STANDINS_DIR / f"{ex.module}.py").read_text())
    program = ("import sys\n"
               f"sys.path[:0] = {[str(standins / g) for g in GROUPS] + [str(EXERCISES_DIR)]!r}\n"
               "import importlib, kata_trace\n"
               f"for module, names in {RUBRIC.shortcut_table!r}.items():\n"
               "    try:\n        mod = importlib.import_module(module)\n"
               "    except ImportError:\n        continue\n"
               "    print(kata_trace.forbidden_runs(mod, names) or '', end='')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and done.stdout == "", (done.stdout, done.stderr[-2000:])


def _outcome(ran: tuple[tuple[str, str, str], ...], passed: bool = True) -> TestOutcome:
    return TestOutcome("tests/01_simple_attention/test_normalization.py::t", "01_simple_attention/normalization",
                       1.0, passed, "", 0.0, ran=ran)


def test_a_test_is_charged_only_for_what_its_exercise_forbids_in_the_name_that_ran_it(monkeypatch):
    """softmax in softmax_naive is charged; in normalize_by_sum (no rule) or in a name of another exercise
    it is not, nor is an operation the name may use; the instructor's switch turns the charge off."""
    ran = ("softmax_naive", "softmax", "torch function softmin")
    [charged] = charge_shortcuts(RUBRIC, [_outcome((ran,))])
    assert not charged.passed and "softmax_naive ran softmax (torch function softmin)" in charged.message
    for other in [("normalize_by_sum", "softmax", "aten op _softmax"), ("CausalAttention", "softmax", "aten op _softmax"),
                  ("softmax_naive", "dropout", "torch function dropout")]:
        assert charge_shortcuts(RUBRIC, [_outcome((other,))])[0].passed, other
    assert not charge_shortcuts(RUBRIC, [_outcome((ran,), passed=False)])[0].passed
    monkeypatch.setattr(type(RUBRIC), "shortcuts_allowed", property(lambda self: True))
    assert charge_shortcuts(RUBRIC, [_outcome((ran,))])[0].passed
