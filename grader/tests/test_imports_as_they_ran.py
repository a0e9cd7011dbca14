"""Judged by what the code did when it ran: the student's imports, and modules imported before any seed.

* A helper the student reuses costs its points once: a kata module that fails its own tests, imported
  by another of the student's modules as the tests ran, is replaced by its stand-in in a re-grade of the
  importer (grader/grading/scoring.py, grader/sandbox/kata_worker/imports.py). Each reuse pattern is
  graded beside the same mistake left alone in its own module: the two must score the same.
* Module-level code (a notebook's last ``print`` and ``torch.rand``) runs when the domain starts, before
  any test seeds (grader/grading/preload.py), and before the public tests' seed (exercises/conftest.py).
* The attacks: an import nothing uses gains nothing; a module whose import hangs costs only itself, also
  where another module imports it; a recorder broken by the student's code costs only its edges.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.grading.engine import start_worker
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.scoring import dependencies
from grader.rubric import EXERCISES_DIR, load_rubric
from support import build_submission, solution_lines, venv_env

pytestmark = pytest.mark.timeout(300)
RUBRIC = load_rubric()
MASK, CAUSAL, SCALED, SELF = ("03_causal/causal_mask", "03_causal/causal_attention",
                              "02_trainable_weights/scaled_attention", "02_trainable_weights/self_attention")
SPLIT, MHA = "04_multihead/head_split", "04_multihead/multihead_attention"
NORM, SCORES = "01_simple_attention/normalization", "01_simple_attention/attention_scores"


def _patch(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) == count, (path, old)
    path.write_text(text.replace(old, new))


def _mistakes(sub: Path) -> Path:
    """The three helpers of the reuse patterns, each with its realistic mistake."""
    _patch(sub / "03_causal/causal_mask.py", "diagonal=1)\n    return attn_scores.masked_fill",
           "diagonal=2)\n    return attn_scores.masked_fill")  # mask_future_scores lets one future token through
    _patch(sub / "04_multihead/head_split.py", "x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
           "x.reshape(b, num_tokens, d_out // num_heads, num_heads).permute(0, 3, 1, 2)")  # interleaves the heads
    _patch(sub / "02_trainable_weights/scaled_attention.py", "attn_scores / d_k**0.5", "attn_scores / d_k")
    return sub


def _reuse(sub: Path) -> Path:
    """CausalAttention, MultiHeadAttention and SelfAttention_v1/v2 calling the student's own helpers."""
    _patch(sub / "03_causal/causal_attention.py",
           "        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n",
           "        from causal_mask import mask_future_scores  # a function-level import\n"
           "        attn_scores = mask_future_scores(attn_scores)\n")
    mha = sub / "04_multihead/multihead_attention.py"
    for name in ("query", "key", "value"):
        _patch(mha, f"self.W_{name}(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
               f"split_heads(self.W_{name}(x), self.num_heads)")
    (sub / "04_multihead/helpers.py").write_text("from head_split import split_heads\n")  # through a module of theirs
    _patch(mha, "import torch\n", "import torch\nfrom helpers import split_heads\n")
    own = sub / "02_trainable_weights/self_attention.py"
    _patch(own, "import torch\n", "import torch\nimport scaled_attention\n")
    _patch(own, "        attn_scores = queries @ keys.transpose(-2, -1)\n"
                "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                "        return attn_weights @ values\n",
           "        return scaled_attention.scaled_dot_product(queries, keys, values)[0]\n", count=2)
    return sub


def _scores(report) -> dict[str, float]:
    return {**{ex_id: r.score for ex_id, r in report.exercises.items()}, "gpu_check": report.gpu_check.score}


def _lost(report) -> dict[str, float]:
    top = {**{ex_id: ex.points for ex_id, ex in RUBRIC.exercises.items()}, "gpu_check": RUBRIC.gpu_points}
    return {k: round(top[k] - v, 4) for k, v in _scores(report).items() if top[k] - v > 1e-6}


def test_a_reused_helper_costs_its_own_points_once(shared_domains, tmp_path):
    """mask_future_scores with diagonal=2 in the student's CausalAttention, an interleaving split_heads in
    their MultiHeadAttention (through a helpers.py), scaled_dot_product dividing by d_k in their
    SelfAttention_v1/v2: each costs what the same mistake costs when nothing reuses it."""
    alone = grade(_mistakes(build_submission("alone", tmp_path)), GradeOptions(), shared_domains)
    reused = grade(_reuse(_mistakes(build_submission("reused", tmp_path))), GradeOptions(), shared_domains)
    assert set(_lost(alone)) == {MASK, SPLIT, SCALED}, _lost(alone)  # each mistake is caught where it is
    assert _scores(reused) == _scores(alone), (_lost(reused), _lost(alone))
    regraded = {ex_id: r.regraded_with for ex_id, r in reused.exercises.items() if r.regraded_with}
    assert regraded[CAUSAL] == (MASK,) and regraded[MHA] == (SPLIT,) and regraded[SELF] == (SCALED,), regraded
    assert "graded over a stand-in causal_mask in place of yours" in reused.exercises[CAUSAL].message


def test_an_import_nothing_uses_gains_nothing(shared_domains, tmp_path):
    """CausalAttention with a mistake of its own (the scale) that imports a stub causal_mask (a function
    stand-in, correct) and a stub self_attention (a class stand-in): re-graded over both, it scores what the
    mistake alone scores, never more."""
    mistake = ("attn_scores / keys.shape[-1] ** 0.5, dim=-1", "attn_scores / keys.shape[-1], dim=-1")
    alone = build_submission("scale_alone", tmp_path)
    _patch(alone / "03_causal/causal_attention.py", *mistake)
    faked = build_submission("scale_with_imports", tmp_path)
    _patch(faked / "03_causal/causal_attention.py", *mistake)
    _patch(faked / "03_causal/causal_attention.py", "import torch\n", "import torch\nimport causal_mask, self_attention\n")
    for module in (MASK, SELF):
        ex = RUBRIC.exercises[module]
        (faked / ex.group / f"{ex.module}.py").write_text((EXERCISES_DIR / ex.group / f"{ex.module}.py").read_text())
    options = GradeOptions(gpu="skip", exercises=(CAUSAL,))
    honest, attack = grade(alone, options, shared_domains), grade(faked, options, shared_domains)
    assert honest.exercises[CAUSAL].score < RUBRIC.exercises[CAUSAL].points
    assert attack.exercises[CAUSAL].score == honest.exercises[CAUSAL].score, attack.exercises[CAUSAL].message


def test_module_level_prints_and_draws_change_no_grade(shared_domains, tmp_path):
    """Every module ends with a print and a random draw (a notebook's flat upload): still full marks."""
    sub = build_submission("notebook_tails", tmp_path)
    for module in sub.rglob("*.py"):
        module.write_text(module.read_text() + "\nimport torch as _t\nprint('done', __name__)\n_x = _t.rand(2, 3)\n")
    report = grade(sub, GradeOptions(), shared_domains)
    assert report.score == RUBRIC.max_score, _lost(report)


@pytest.mark.slow  # it spins for its call timeouts, in every mode
def test_a_module_whose_import_hangs_costs_only_itself(domains, tmp_path):
    """head_split.py and normalization.py spin at import; MultiHeadAttention imports head_split (later in
    the rubric's order), attention_scores imports normalization (earlier: its own import is the one that
    hangs first). Each hanging module is refused once it hangs again with the other suspects refused; its
    importers then fail to import (an ImportError, an import the worker saw) and are re-graded over the
    stand-in: only the two hanging modules are lost."""
    sub = build_submission("hang_in_a_helper", tmp_path)
    (sub / "04_multihead/head_split.py").write_text("while True:\n    pass\n")
    _patch(sub / "04_multihead/multihead_attention.py", "import torch\n", "import torch\nimport head_split\n")
    (sub / "01_simple_attention/normalization.py").write_text("while True:\n    pass\n")
    _patch(sub / "01_simple_attention/attention_scores.py", "import torch\n", "import torch\nimport normalization\n")
    scope = (SPLIT, MHA, NORM, SCORES)
    report = grade(sub, GradeOptions(gpu="skip", call_timeout=1.0, exercises=scope), domains)
    assert _lost(report) == {ex: RUBRIC.exercises[ex].points for ex in (SPLIT, NORM)} | {"gpu_check": RUBRIC.gpu_points}
    assert report.exercises[MHA].regraded_with == (SPLIT,) and report.exercises[SCORES].regraded_with == (NORM,)
    assert "importing head_split broke the worker earlier (timed out after" in report.exercises[SPLIT].message


@pytest.mark.slow  # a pytest subprocess or a whole grading; the inner loop keeps the reuse patterns' proof
def test_a_recorder_broken_by_the_student_costs_only_its_edges(shared_domains, tmp_path):
    """A module that makes the worker's list of imports hang (the recorder is in its process): the list is
    asked for once, times out, and is not asked for again; the grading goes on, and the edges are lost."""
    sub = build_submission("broken_recorder", tmp_path)
    _patch(sub / "03_causal/causal_mask.py", "import torch\n",
           "import sys, time\nimport torch\n"
           "sys.modules['kata_worker.imports'].ImportRecorder.recorded = lambda self: time.sleep(60)\n")
    _patch(sub / "03_causal/causal_attention.py", "        attn_scores = queries @ keys.transpose(-2, -1)\n",
           "        attn_scores = queries @ keys.transpose(-2, -1)\n        import causal_mask\n")
    _mistakes(sub)
    report = grade(sub, GradeOptions(gpu="skip", call_timeout=1.0, exercises=(MASK, CAUSAL)), shared_domains)
    assert set(_lost(report)) == {MASK, "gpu_check"}, _lost(report)  # CausalAttention itself uses none of it


@pytest.mark.slow  # a pytest subprocess or a whole grading; the inner loop keeps the reuse patterns' proof
def test_the_public_tests_import_the_modules_before_their_seed(tmp_path):
    """exercises/conftest.py imports each module under test before the first test seeds: a module's own
    draw at import shifts no test's numbers, and a module that cannot be imported fails only its tests."""
    root = tmp_path / "exercises"
    group = root / "01_simple_attention"
    group.mkdir(parents=True)
    for shared in EXERCISES_DIR.glob("*.*"):  # conftest.py and the checks beside it
        (root / shared.name).write_bytes(shared.read_bytes())
    (group / "probe.py").write_text("import torch\n_x = torch.rand(3)\n")
    (group / "test_probe.py").write_text(
        "import importlib\nimport torch\n\n\ndef test_probe_draws_what_the_seed_gives():\n"
        "    importlib.import_module('probe')\n"
        "    assert torch.equal(torch.rand(3), torch.rand(3, generator=torch.Generator().manual_seed(0)))\n")
    (group / "broken.py").write_text("raise ValueError('broken at import')\n")
    (group / "test_broken.py").write_text(
        "import importlib\n\n\ndef test_broken_imports():\n    importlib.import_module('broken')\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "-c", "/dev/null", "--rootdir", str(tmp_path), str(root)],
                         capture_output=True, text=True, cwd=tmp_path, env=venv_env())
    assert "1 failed, 1 passed" in run.stdout and "ValueError: broken at import" in run.stdout, run.stdout
    assert "error" not in run.stdout.splitlines()[-1], run.stdout


def test_function_stand_ins_quote_no_solution_line():
    """A function's stand-in enters a student's domain in a re-grade: it computes the result with the
    library, in lines of its own (tests/standins/README.md), never a line of solutions/."""
    forbidden = {line for lines in solution_lines().values() for line in lines}
    function_standins = [ex for ex in RUBRIC.exercises.values() if ex.standin_file.is_file() and not ex.standin_is_a_class]
    assert {SCALED, MASK, SPLIT} <= {ex.id for ex in function_standins}  # the reuse patterns' helpers
    quoted = [f"{ex.standin_file.name}: {line.strip()}" for ex in function_standins
              for line in ex.standin_file.read_text().splitlines() if line.strip() in forbidden]
    assert not quoted, quoted


TOY = {"01_simple_attention/attention_scores.py": (
           "import importlib\n\n\ndef attention_scores(inputs, query):\n    importlib.import_module('normalization')\n"
           "    __import__('context_vectors')\n    return 1\n\n\ndef attention_score_matrix(inputs):\n"
           "    from helpers import twice\n    return twice(inputs)\n"),
       "01_simple_attention/helpers.py": "import causal_mask\n\n\ndef twice(x):\n    return 2 * x\n",
       "01_simple_attention/normalization.py": "", "01_simple_attention/context_vectors.py": "",
       "03_causal/causal_mask.py": "", "03_causal/causal_attention.py": ""}


def test_every_route_of_an_import_is_noted_where_it_runs(shared_domains, tmp_path):
    """Function-level imports of modules the domain imported already (every module is, at its start), by
    importlib.import_module, __import__ and from-import through a file of the student's: each noted with
    the module whose code ran it; what no code ran (causal_attention) is not."""
    from grader.grading.remote_impl import RemoteImpl  # imports torch: only when a test runs

    for rel, text in TOY.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    with start_worker(tmp_path, domains=shared_domains) as client:
        impl = RemoteImpl(client, RUBRIC.owner_of)
        assert impl.attention_scores(None, None) == 1 and impl.attention_score_matrix(3) == 6
        client.preload.fetch(client)
    assert client.preload.edges == {("attention_scores", "normalization"), ("attention_scores", "context_vectors"),
                                    ("attention_scores", "helpers"), ("helpers", "causal_mask")}
    assert dependencies(RUBRIC, "01_simple_attention/attention_scores", client.preload.edges) == {
        NORM, "01_simple_attention/context_vectors", MASK}
