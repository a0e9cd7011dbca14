"""What a student reads when public tests fail (exercises/conftest.py, exercises/kata_report.py): ``pytest
exercises/04_multihead`` and three more test files, run as a student runs them, over the solutions with one slip
in each of six modules at once: raw errors students meet (the chapter's ``head_dim = d_out``, ``mat1 and mat2
shapes cannot be multiplied``, a ``.view`` without ``.contiguous()``, an IndexError), a syntax error and an
import that never ends.

* every failing test in at most 20 lines, none with a frame of torch, pytest or pluggy;
* an error the student's code raised: the call, the error's type and text, the student's own line;
* the same failure in several tests of a file said once ("and in N more tests"), the others pointing there;
* a file that does not import (a syntax error, an import that never ends): reported once, and no test of it
  passes.

(The library's mistakes, each alone, are said in the same format: test_public_tests.py; there the patched
module lies outside a group folder, so only here is the student's own line shown.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import shutil

import pytest

from grader.authoring import mutation
from grader.rubric import REPO_ROOT, load_rubric

try:
    from . import public_runner as pr
except ImportError:
    import public_runner as pr

GROUP = "04_multihead"
# The raw errors, as the library's mistakes write them: {name: the error its tests must say, with the student's line}.
RAW = {"multihead_attention_head_dim_d_out": ("multihead_attention", "RuntimeError: shape '["),
       "merge_heads_view_without_contiguous": ("head_split", "RuntimeError: view size is not compatible"),
       "self_attention_v2_linear_d_in_d_out_swapped": ("self_attention", "RuntimeError: mat1 and mat2 shapes cannot be multiplied")}
CRAFTED = [  # slips of no library: an unanticipated error, a file that does not parse, an import that never ends
    {"name": "index_error", "exercise": f"{GROUP}/multihead_wrapper",
     "replace": "for head in self.heads], dim=-1)", "with": "for head in self.heads], dim=3)"},
    {"name": "syntax_error", "exercise": "01_simple_attention/context_vectors",
     "replace": "def context_vectors(inputs: torch.Tensor)", "with": "def context_vectors(inputs: torch.Tensor"},
    {"name": "import_never_ends", "exercise": "03_causal/attention_dropout",
     "replace": "import torch\n", "with": "import torch\nimport time\n\nwhile True:\n    time.sleep(1)\n"},
]
RUN = ["exercises/03_causal/test_attention_dropout.py",  # first: the time limit stops its import in the first test
       f"exercises/{GROUP}", "exercises/02_trainable_weights/test_self_attention.py",
       "exercises/01_simple_attention/test_context_vectors.py"]
pytestmark = [pytest.mark.timeout(300),  # one pytest run, as a student runs it
              pytest.mark.slow]  # a pytest subprocess importing torch: CI runs it, the inner loop leaves it out
FRAMES = ("site-packages", "dist-packages", "_pytest", "pluggy", "torch/nn/", "torch/_", "Traceback (most recent call last)")


@pytest.fixture(scope="module")
def output(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("student")
    shutil.copytree(REPO_ROOT / "exercises", root / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "grader" / "authoring" / "templates" / "pytest.ini", root / "pytest.ini")
    pr.fill_in(root / "exercises", tuple(ex.module for ex in load_rubric().exercises.values()))
    library = {p["name"]: p for p in pr.library()}
    for patch in [*(library[name] for name in RAW), *CRAFTED]:
        mutation.write_patched(patch, root / "exercises")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", *RUN, "-rA", "-p", "no:randomly"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _blocks(output: str) -> dict[str, str]:
    """Each failing test's report, by test name (the FAILURES section's ``____ name ____`` blocks)."""
    section = output.split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    parts = re.split(r"^_+ (test\S*) _+$", section, flags=re.M)
    return {name: body.strip("\n=") for name, body in zip(parts[1::2], parts[2::2])}


def test_every_failing_test_in_at_most_20_lines_and_no_frame_of_torch_or_pytest(output):
    blocks = _blocks(output)
    assert len(blocks) >= 10, output[-3000:]
    long = {name: len(body.splitlines()) for name, body in blocks.items() if len(body.splitlines()) > 20}
    assert not long, long
    frames = [f for f in FRAMES if any(f in body for body in blocks.values())]
    assert not frames, f"{frames} in:\n{output[-5000:]}"


def test_an_error_of_the_students_code_shows_the_call_the_error_and_their_line_once(output):
    blocks = _blocks(output)
    said = [body for body in blocks.values() if "RuntimeError: shape" in body]
    assert len(said) == 1, said
    lines = said[0].splitlines()
    assert lines[0].startswith("test_multihead_attention.py:") and "called " in lines[0], lines
    assert lines[1].startswith("  raised RuntimeError: shape '["), lines
    assert re.match(r"  at multihead_attention\.py:\d+ \(forward\): queries = self\.W_query\(x\)\.view", lines[2]), lines
    others = [name for name, body in blocks.items() if body.startswith("the same failure as ")
              and name.startswith("test_multihead_attention_")]
    assert others and f"(and in {len(others)} more tests: " in said[0], (others, said[0])
    wrapper = [body for body in blocks.values() if "raised IndexError" in body]
    assert len(wrapper) == 1 and "at multihead_wrapper.py:" in wrapper[0] and "torch.cat(" in wrapper[0], wrapper


@pytest.mark.parametrize("mistake", RAW)
def test_a_raw_error_students_meet_is_said_with_its_text_and_their_own_line(output, mistake):
    module, error = RAW[mistake]
    said = [body for name, body in _blocks(output).items() if f"raised {error}" in body]
    assert said, output[-3000:]
    for body in said:
        lines = body.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  raised {error}")) + 1
        assert re.match(rf"  at {module}\.py:\d+ \(\w+\): \S", lines[at]), body


def test_a_file_that_does_not_import_is_reported_once_and_passes_no_test(output):
    blocks = _blocks(output)
    said = [name for name, body in blocks.items() if "cannot import context_vectors" in body]
    assert len(said) == 1 and "SyntaxError in context_vectors.py" in blocks[said[0]], said
    tests = [name for name in blocks if name.startswith("test_context_vectors_")]
    assert len(tests) >= 2 and all(blocks[n].startswith(f"the same failure as {said[0]}") for n in tests if n != said[0])
    passed = [line for line in output.splitlines() if line.startswith("PASSED") and "test_context_vectors.py" in line]
    assert not passed, passed


def test_a_module_whose_import_never_ends_is_stopped_once_said_once_and_passes_no_test(output):
    blocks = _blocks(output)
    tests = [name for name in blocks if name.startswith("test_attention_dropout_")]
    said = [name for name in tests if "did not finish importing" in blocks[name]]
    assert len(tests) >= 2 and len(said) == 1, {name: blocks[name] for name in tests}
    assert "(stopped at attention_dropout.py:" in blocks[said[0]] and f"(and in {len(tests) - 1} more tests" in blocks[said[0]]
    assert all(blocks[n].startswith(f"the same failure as {said[0]}") for n in tests if n != said[0])
    assert output.count("Timeout") <= 1, output[-3000:]  # stopped once, not once a test
    passed = [line for line in output.splitlines() if line.startswith("PASSED") and "test_attention_dropout.py" in line]
    assert not passed, passed
