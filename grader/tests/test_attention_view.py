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
    panels = view.compute_panels(view.load_modules(SOLUTIONS_DIR, NAMES))
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
    panels = view.compute_panels(view.load_modules(REPO_ROOT / "exercises", NAMES))
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
    yours = view.compute_panels(view.load_modules(tree, NAMES))
    reference = view.compute_panels(view.load_modules(SOLUTIONS_DIR, NAMES))
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
    panels = view.compute_panels(view.load_modules(tree, NAMES))
    assert panels["causal"].error and "returned shape (6,), expected (6, 6)" in panels["causal"].reason


@needs_matplotlib
@pytest.mark.timeout(120)
def test_view_draws_a_png_with_yours_next_to_the_reference(tmp_path: Path):
    tree = _tree(tmp_path, ("attention_scores", "normalization", "scaled_attention", "multihead_attention"))
    out = tmp_path / "attention.png"
    printed = io.StringIO()
    args = argparse.Namespace(exercises=tree, out=out)
    assert view.run_command(args, reference=SOLUTIONS_DIR, out=printed) == 0  # what `attention-kata view` runs
    assert printed.getvalue() == f"wrote {out} (4/6 of your panels drawn)\n"
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
