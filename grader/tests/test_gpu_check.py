"""The GPU-run check, on the meta device (no CUDA here) and with CUDA faked (the real branch on cpu).

The submissions are the reference solutions with CausalAttention changed in one way each.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from grader.grading.gpu_check import GpuUnavailable
from grader.grading.remote_impl import RemoteImpl
from grader.sandbox.client import WorkerClient
from grader.sandbox.domains import Domains
from grader.sandbox.modes import choose_isolation
from support import WHERE, build_submission, run_check, toy

pytestmark = pytest.mark.timeout(120)
CAUSAL = Path("03_causal") / "causal_attention.py"
REGISTERED = 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'


def submission(tmp_path: Path, old: str = "", new: str = "") -> Path:
    sub = build_submission("gpu", tmp_path)
    if old:
        source = (sub / CAUSAL).read_text()
        assert old in source
        (sub / CAUSAL).write_text(source.replace(old, new))
    return sub


def _works(**which: bool) -> dict[str, bool]:
    """What a grading tells the check: every module passes its own core tests but those named False."""
    return {name: which.get(name, True) for name in ("CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention")}


@pytest.fixture
def check(shared_domains):
    """``check(submission, mode, ...)``: the GPU-run check's result, the worker forked from the session's
    template (starting a template of its own would import torch again for every test)."""
    return functools.partial(run_check, domains=shared_domains)


def test_correct_modules_pass_the_simulation(tmp_path: Path, check) -> None:
    result = check(submission(tmp_path))
    assert (result.status, result.score, result.max_score) == ("simulated_passed", 10.0, 10.0)
    assert result.device.startswith("meta")


def test_plain_attribute_mask_fails_and_is_named(tmp_path: Path, check) -> None:
    plain = "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"
    result = check(submission(tmp_path, REGISTERED, plain))
    assert result.status == "simulated_failed"
    assert "'mask'" in result.message and "register_buffer" in result.message
    # CausalAttention fails; the wrapper built on it is left out (its heads fail: one mistake, one charge); MHA passes
    assert result.score == pytest.approx(5.0, abs=0.01)
    assert "MultiHeadAttentionWrapper: left out here, its heads are your CausalAttention" in result.message


def test_tensor_created_on_the_cpu_in_forward_fails(tmp_path: Path, check) -> None:
    result = check(submission(tmp_path, "self.mask.bool()[:num_tokens, :num_tokens]",
                              "torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()"))
    assert result.status == "simulated_failed" and "device=x.device" in result.message


def test_data_dependent_ops_are_inconclusive_not_failed(tmp_path: Path, check) -> None:
    result = check(submission(tmp_path, "        keys = self.W_key(x)\n",
                              "        assert not torch.isnan(x).any()\n        keys = self.W_key(x)\n"))
    assert result.status == "inconclusive" and "inconclusive" in result.message
    assert result.score == 10.0


def test_cuda_branch_passes_and_names_the_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check) -> None:
    result = check(submission(tmp_path), fake_cuda=True, monkeypatch=monkeypatch)
    assert (result.status, result.device, result.score) == ("passed", "cuda:0 (Fake GPU)", 10.0)


def test_cuda_branch_fails_when_the_device_output_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check) -> None:
    result = check(submission(tmp_path), fake_cuda=True, corrupt=True, monkeypatch=monkeypatch)
    assert result.status == "failed" and result.score == 0 and "differs from the reference output" in result.message


def test_require_without_cuda_and_skip(tmp_path: Path, check) -> None:
    sub = submission(tmp_path)
    with pytest.raises(GpuUnavailable, match="CUDA is not available"):
        check(sub, mode="require")
    skipped = check(sub, mode="skip")
    assert (skipped.status, skipped.max_score) == ("skipped", 0.0)


# ---- points lost once: a mistake unrelated to devices is its own exercise's, not this check's ----------

def test_a_mask_not_cut_to_tokens_is_judged_at_context_length(tmp_path: Path, check) -> None:
    """T = 5 < context_length fails on the CPU (its exercise charges that); T = context_length runs: full points."""
    result = check(submission(tmp_path, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()"))
    assert (result.status, result.score) == ("simulated_passed", 10.0), result.message


def test_the_wrapper_on_an_identity_causal_attention_is_judged_on_its_own_heads(tmp_path: Path, check) -> None:
    """CausalAttention returns its values (no attention): its exercise charges that; here it is left out
    (a numeric mistake is not the check's to charge). The wrapper built on it is judged on its own part
    (its heads' outputs concatenated); MultiHeadAttention on its own: full marks."""
    sub = submission(tmp_path, "        return attn_weights @ values\n", "        return values\n")
    result = check(sub, works=_works(CausalAttention=False, MultiHeadAttentionWrapper=False))
    assert result.score == pytest.approx(10.0), result.message
    assert result.message.splitlines() == ["CausalAttention: left out here, it fails its own exercise's core tests on "
                                           "the CPU (charged there, once); the check's points are split over the "
                                           "modules that work on the CPU"]
    unknown = check(sub)  # told nothing of its tests: the mismatch is found here, and charged
    assert unknown.score == pytest.approx(20 / 3, abs=0.01), unknown.message


def test_a_stub_is_left_out_as_a_missing_module_is(tmp_path: Path, check) -> None:
    """A CausalAttention whose forward raises (a stub) is left out, as a deleted file is, and so is the
    wrapper that cannot run over it: the check's points go to MultiHeadAttention. A stub and a deleted
    file score the same."""
    stub = submission(tmp_path / "stub", "        num_tokens = x.shape[-2]\n", "        raise NotImplementedError('not written yet')\n")
    result = check(stub, works=_works(CausalAttention=False, MultiHeadAttentionWrapper=False))
    assert result.score == pytest.approx(10.0), result.message
    lines = result.message.splitlines()
    assert len(lines) == 2 and lines[0].startswith("CausalAttention: left out here")
    assert lines[1].startswith("MultiHeadAttentionWrapper: left out here, it does not run on the CPU")
    deleted = submission(tmp_path / "deleted")
    (deleted / CAUSAL).unlink()
    assert check(deleted, works=_works(CausalAttention=False, MultiHeadAttentionWrapper=False)).score == result.score


def test_a_module_not_there_is_left_out(tmp_path: Path, check) -> None:
    """No multihead_attention.py: its exercise charges it; the check's points go to the two modules there."""
    sub = submission(tmp_path)
    (sub / "04_multihead" / "multihead_attention.py").unlink()
    result = check(sub)
    assert (result.status, result.score) == ("simulated_passed", 10.0), result.message
    assert result.message == ("MultiHeadAttention: not there (no multihead_attention.py); left out here (the check's "
                              "points are split over the modules that are), its own exercise counts it")


def test_a_module_whose_import_fails_when_run_is_there_and_fails(tmp_path: Path, check) -> None:
    """Whether a module is there is read from its files: one that fails its import only when run (here, or
    only in this check's worker) cannot make itself vanish from the check. The wrapper imports it: it fails too."""
    sub = submission(tmp_path)
    (sub / CAUSAL).write_text("raise ImportError('not in this worker')\n" + (sub / CAUSAL).read_text())
    result = check(sub)  # told nothing of its tests
    assert (result.status, result.score) == ("simulated_failed", pytest.approx(10 / 3, abs=0.01)), result.message
    lines = result.message.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["CausalAttention cannot be imported",
                                                       "MultiHeadAttentionWrapper cannot be imported"]


def test_with_nothing_there_the_check_earns_nothing(tmp_path: Path, check) -> None:
    """No causal_attention.py (so no wrapper either) and no multihead_attention.py: 0, not a free 10."""
    sub = submission(tmp_path)
    (sub / CAUSAL).unlink()
    (sub / "04_multihead" / "multihead_attention.py").unlink()
    result = check(sub)
    assert (result.status, result.score) == ("simulated_failed", 0.0), result.message
    assert result.message.splitlines()[0] == "none of the three modules is there: nothing to run on the device"
    assert len(result.message.splitlines()) == 4  # and one line per module


def test_the_template_readies_the_simulation_only_for_a_grading_with_a_gpu_check(tmp_path: Path):
    """The simulation's first use costs the template 1.5 s of CPU (torch._dynamo): a grading under
    ``--gpu skip`` must not pay it, and the forks after one that asked for it find it ready."""
    sub = toy(tmp_path, "def attention_scores():\n    import sys\n    return 'torch._dynamo' in sys.modules\n")
    with Domains(choose_isolation("none")) as domains:  # a template of its own: nothing has asked it yet
        seen = []
        for prepare in (False, False, True, False):
            with WorkerClient(sub, domains=domains, prepare_gpu_check=prepare) as client:
                seen.append((RemoteImpl(client, WHERE).attention_scores(), client.meta_warm))
    # the third fork asked for it after forking: only the fourth finds it ready, and knows it
    assert seen == [(False, False), (False, False), (False, False), (True, True)]
