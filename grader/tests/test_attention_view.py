"""grader.attention_view (``attention-kata view``): what each panel computes, where its numbers come from,
the picture, and the command line.

The panels are computed without matplotlib; only the tests that draw need it (``.[dev]`` and
``.[view]`` install it) and they say so when they skip.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader import attention_view as view
from grader.authoring.mutation import apply
from grader.rubric import REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, load_rubric
from public_runner import fill_in

NAMES = sorted({m for p in view.PANELS for m in p.modules})
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib is not installed: "
                                      "python -m pip install matplotlib (or -e '.[dev]') to test the picture")
# The platform on which the documents' seeded dropout mask reproduces (documents/README.md).
X86_CPU = platform.machine().lower() in ("x86_64", "amd64")


def _fixtures():
    """tests/fixtures/printed_tensors.py (a plain file of the hidden tests, loaded by path)."""
    spec = importlib.util.spec_from_file_location("printed_tensors_for_view", TESTS_DIR / "fixtures" / "printed_tensors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_printed_tensors_are_the_documents():
    """The view's copy of the input and the printed weights equal the hidden tests' oracle (tests/fixtures)."""
    fixtures = _fixtures()
    same_as = {"plain": "000/3.3.2/weight_matrix", "scaled": "001/In816/weights_789",
               "causal": "001/In820/renormalized", "dropout": "README/dropout_seed123"}
    assert set(view.PRINTED) == set(same_as)
    assert view.INPUTS == fixtures.JOURNEY
    for key, fixture in same_as.items():
        assert torch.equal(torch.tensor(view.PRINTED[key][1]), torch.tensor(fixtures.PRINTED[fixture]["value"])), key


def test_the_reference_reproduces_the_printed_weights():
    panels = view.panels_of(SOLUTIONS_DIR, NAMES)
    assert not [k for k, v in panels.items() if isinstance(v, view.Empty)], panels
    for key, (_, value) in view.PRINTED.items():
        if key == "dropout" and not X86_CPU:
            continue  # another random generator draws another mask
        assert torch.allclose(panels[key], torch.tensor(value), atol=1e-4, rtol=0), (key, panels[key])
    # the two heads: causal rows that sum to 1, and not the same weights
    for key in ("head1", "head2"):
        assert torch.allclose(panels[key].sum(-1), torch.ones(6), atol=1e-5)
        assert torch.all(panels[key].triu(1) == 0)
    assert not torch.allclose(panels["head1"], panels["head2"])


def test_the_stubs_give_empty_panels_saying_not_written_yet():
    panels = view.panels_of(REPO_ROOT / "exercises", NAMES)
    assert all(isinstance(v, view.Empty) and not v.error and v.reason.startswith("not written yet")
               for v in panels.values()), panels
    assert "(softmax_stable)" in panels["plain"].reason or "(attention_score_matrix)" in panels["plain"].reason


def _tree(tmp_path: Path, solved: tuple[str, ...]) -> Path:
    tree = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises", tree, ignore=shutil.ignore_patterns("__pycache__", "documents"))
    fill_in(tree, solved)
    return tree


def test_yours_and_the_reference_load_side_by_side_and_errors_show_in_their_panel(tmp_path: Path):
    tree = _tree(tmp_path, ("attention_scores", "normalization", "causal_mask"))
    group = load_rubric().by_module["scaled_attention"].group
    (tree / group / "scaled_attention.py").write_text(
        "def scaled_dot_product(queries, keys, values):\n    raise ValueError('my bug')\n")
    before = {name for name in sys.modules}
    yours = view.panels_of(tree, NAMES)
    reference = view.panels_of(SOLUTIONS_DIR, NAMES)
    assert not any(name in sys.modules and name not in before for name in NAMES), "modules leaked into sys.modules"
    assert torch.allclose(yours["plain"], reference["plain"]) and torch.allclose(yours["causal"], reference["causal"])
    assert isinstance(yours["scaled"], view.Empty) and yours["scaled"].error and "ValueError: my bug" in yours["scaled"].reason
    assert isinstance(yours["head1"], view.Empty) and yours["head1"].reason.startswith("not written yet")
    assert isinstance(reference["head1"], torch.Tensor)


def test_a_wrong_shape_is_said_in_the_panel(tmp_path: Path):
    tree = _tree(tmp_path, ())
    group = load_rubric().by_module["causal_mask"].group
    (tree / group / "causal_mask.py").write_text(
        "import torch\ndef causal_attention_weights(attn_scores, d_k):\n    return torch.softmax(attn_scores, -1)[0]\n")
    panels = view.panels_of(tree, NAMES)
    assert panels["causal"].error and "returned shape (6,), expected (6, 6)" in panels["causal"].reason


def _mha_tree(tmp_path: Path, *patches: dict, rename: tuple[str, str] | None = None) -> Path:
    """An exercises/ tree whose MultiHeadAttention is the reference's with ``patches`` applied (or one
    attribute renamed everywhere); the other modules are the stubs."""
    tree = _tree(tmp_path, ())
    path = tree / load_rubric().by_module["multihead_attention"].group / "multihead_attention.py"
    source = (SOLUTIONS_DIR / path.relative_to(tree)).read_text()
    for patch in patches:
        source = apply(source, {"name": "view test", "exercise": "04_multihead/multihead_attention", **patch})
    if rename:
        assert source.count(rename[0]) >= 2
        source = source.replace(*rename)
    path.write_text(source)
    return tree


SPLIT = "view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)"
QKV = "".join(f"        {n} = self.W_{q}(x).{SPLIT}\n" for n, q in (("queries", "query"), ("keys", "key"), ("values", "value")))
MASK = "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"
HEAD_CASES = {
    # W_query created after W_value: other random weights from the same seed, the same computation
    "created in another order": ({"replace": "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
                                  "with": ""},
                                 {"replace": "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n",
                                  "with": "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                                          "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"}),
    # a bare view: each head gets whole tokens (tokens 0-2 in head 1), not its features of every token
    "heads interleaved": ({"replace": QKV, "with": QKV.replace(SPLIT, "view(b, self.num_heads, num_tokens, self.head_dim)")},),
    # head h takes features h, h + 2 (stride num_heads) instead of 2h, 2h + 1
    "features with the wrong stride": ({"replace": QKV, "with": QKV.replace(
        SPLIT, "view(b, num_tokens, self.head_dim, self.num_heads).permute(0, 3, 1, 2)")},),
    # the causal mask on head 1 only: head 2 sees the future
    "mask on one head": ({"replace": MASK, "with": "attn_scores = torch.cat([attn_scores[:, :1].masked_fill("
                          "self.mask.bool()[:num_tokens, :num_tokens], -torch.inf), attn_scores[:, 1:]], dim=1)"},),
}


def _word(verdict: str) -> str:
    """ "matches", "differs" or "not compared": a verdict without its numbers or reason."""
    return verdict.split(":")[0].split(" (")[0]


@pytest.mark.parametrize("case, expected", [
    ("created in another order", ("matches", "matches")),
    ("heads interleaved", ("differs", "differs")),
    ("features with the wrong stride", ("differs", "differs")),
    ("mask on one head", ("matches", "differs")),
])
def test_each_head_is_compared_with_the_reference_run_with_your_weights(tmp_path: Path, case: str, expected):
    rows = view.panel_rows(_mha_tree(tmp_path, *HEAD_CASES[case]), SOLUTIONS_DIR)
    found = view.verdicts(rows)
    assert (_word(found["head1"]), _word(found["head2"])) == expected, found
    assert [row[0] for row in rows] == ["yours", view.REFERENCE]
    for key in ("head1", "head2"):  # both drawn: the reference's heads are not your panel again
        assert isinstance(rows[0][1][key], torch.Tensor) and isinstance(rows[1][1][key], torch.Tensor), key
    if case == "created in another order":  # the reference's own weights would not have matched
        own = view.panels_of(SOLUTIONS_DIR, ["multihead_attention"])
        assert not torch.allclose(own["head1"], rows[0][1]["head1"], atol=1e-3)
        assert found["head1"] == "matches (max diff 0)"


def test_a_sibling_imported_inside_a_function_is_found_as_under_the_tests(tmp_path: Path):
    """A forward that imports head_split only when it runs (pytest and the grader accept it) draws its heads."""
    split = "".join(f"        {n} = split_heads(self.W_{q}(x), self.num_heads)\n"
                    for n, q in (("queries", "query"), ("keys", "key"), ("values", "value")))
    tree = _mha_tree(tmp_path, {"replace": QKV, "with": "        from head_split import split_heads\n" + split})
    fill_in(tree, ("head_split",))
    found = view.verdicts(view.panel_rows(tree, SOLUTIONS_DIR))
    assert _word(found["head1"]) == _word(found["head2"]) == "matches", found


def test_a_module_the_reference_cannot_take_the_weights_of_is_not_compared(tmp_path: Path):
    rows = view.panel_rows(_mha_tree(tmp_path, rename=("W_query", "Wq")), SOLUTIONS_DIR)
    found = view.verdicts(rows)
    assert isinstance(rows[0][1]["head1"], torch.Tensor)  # yours is drawn
    assert rows[1][1]["head1"].error
    assert found["head1"] == found["head2"] == (
        "not compared: cannot run the reference with your weights: your MultiHeadAttention has no W_query.weight (4, 3)")


def test_the_other_panels_are_compared_with_the_reference_or_the_documents(tmp_path: Path):
    tree = _tree(tmp_path, ("attention_scores", "normalization", "causal_mask"))
    causal = tree / load_rubric().by_module["causal_mask"].group / "causal_mask.py"
    causal.write_text(apply(causal.read_text(), {  # lets each token see the next one
        "name": "view test", "exercise": "03_causal/causal_mask",
        "replace": "dtype=torch.bool, device=attn_scores.device), diagonal=1)",
        "with": "dtype=torch.bool, device=attn_scores.device), diagonal=2)"}))
    for against in (SOLUTIONS_DIR, None):
        found = view.verdicts(view.panel_rows(tree, against))
        assert found["plain"].startswith("matches (max diff ") and found["causal"].startswith("differs: max diff ")
        assert found["scaled"].startswith("not compared: yours: not written yet ("), found
    assert found["head1"] == "not compared: yours: not written yet (MultiHeadAttention.__init__)", found
    found = view.verdicts(view.panel_rows(_mha_tree(tmp_path / "mha"), None))
    assert found["head1"] == found["head2"] == "not compared: the documents print no weights for this"


def test_the_tolerance_is_the_rows():
    """1e-5 against the reference (same computation, float32 rounding), 1.5e-4 against the documents'
    four printed decimals; a NaN never matches."""
    ones = torch.ones(6, 6)

    def verdict(label, yours):
        rows = [("yours", {p.key: yours for p in view.PANELS}), (label, {p.key: ones for p in view.PANELS})]
        return _word(view.verdicts(rows)["plain"])
    assert verdict(view.REFERENCE, ones + 0.9e-5) == "matches" and verdict(view.REFERENCE, ones + 2e-5) == "differs"
    assert verdict(view.DOCUMENTS, ones + 1.4e-4) == "matches" and verdict(view.DOCUMENTS, ones + 2e-4) == "differs"
    assert verdict(view.REFERENCE, ones.clone().fill_diagonal_(float("nan"))) == "differs"


def test_a_panel_and_the_one_it_is_compared_with_share_one_colour_scale():
    weights = torch.softmax(torch.arange(36.0).reshape(6, 6), dim=-1)
    assert view.pair_scale(weights, 2 * weights) == (0.0, pytest.approx(2 * float(weights.max())))
    low, high = float(weights.min()) - 1, float(weights.max()) - 1
    assert view.pair_scale(weights - 1, view.Empty("not written yet")) == (pytest.approx(low), pytest.approx(high))
    assert view.pair_scale(torch.full((6, 6), float("nan")), weights) == (0.0, pytest.approx(float(weights.max())))


@needs_matplotlib
@pytest.mark.timeout(120)
def test_view_draws_a_png_with_yours_next_to_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tree = _mha_tree(tmp_path, *HEAD_CASES["mask on one head"])
    fill_in(tree, ("attention_scores", "normalization", "scaled_attention"))
    out = tmp_path / "attention.png"
    printed = io.StringIO()
    args = argparse.Namespace(exercises=tree, out=out)
    drawn, draw = {}, view.draw
    monkeypatch.setattr(view, "draw", lambda *a, **k: drawn.update(draw(*a, **k)))  # keep the scales it returns
    assert view.run_command(args, reference=SOLUTIONS_DIR, out=printed) == 0  # what `attention-kata view` runs
    lines = printed.getvalue().splitlines()
    assert lines[:2] == [f"wrote {out} (4/6 of your panels drawn)",
                         f"compared (atol 1e-05) with {view.AGAINST[view.REFERENCE]}:"], lines
    assert [line.split()[:2] for line in lines[2:]] == [
        ["plain", "matches"], ["scaled", "matches"], ["causal", "not"], ["dropout", "not"],
        ["head1", "matches"], ["head2", "differs:"]], lines
    # every pair drawn on one colour scale: your panel's and the reference's
    pairs = {key: scales for key, scales in drawn.items() if len(scales) == 2}
    assert sorted(pairs) == ["head1", "head2", "plain", "scaled"], drawn
    assert all(scales[0] == scales[1] for scales in pairs.values()), drawn
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 2 * height > 1000, (width, height)


@pytest.mark.parametrize("args, message", [
    (("view", "--out", "attention.jpg"), "name it *.png"),
    (("view", "--out", "/no/such/dir/a.png"), "does not exist"),
    (("view", "--exercises", "/no/such/folder"), "no such folder"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = subprocess.run([sys.executable, "-m", "grader", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_without_matplotlib_one_line_and_exit_2(tmp_path: Path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from grader.cli import main\n"
            f"sys.exit(main(['view', '--out', {str(tmp_path / 'a.png')!r}]))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result
    assert result.stderr == "attention-kata: error: matplotlib is not installed: python -m pip install matplotlib\n"
    assert not (tmp_path / "a.png").exists()
