"""The GPU-run check, on the meta device (no CUDA here) and with CUDA faked (the real branch on cpu).

The submissions are the reference solutions with CausalAttention changed in one way each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.engine import start_worker
from grader.gpu_check import GpuUnavailable, run_gpu_check
from grader.remote_impl import RemoteImpl
from grader.rubric import load_rubric
from test_engine import build_submission

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


def check(sub: Path, mode: str = "auto", fake_cuda: bool = False, corrupt: bool = False, monkeypatch=None):
    if fake_cuda:  # the grader's own torch decides whether there is CUDA: say there is
        monkeypatch.setattr("torch.cuda.is_available", lambda: True)
        monkeypatch.setattr("torch.cuda.get_device_name", lambda *a: "Fake GPU")
    client = start_worker(sub)
    try:
        impl = RemoteImpl(client, load_rubric().owner_of)
        if fake_cuda:
            impl = FakeCuda(impl, corrupt)
        return run_gpu_check(impl, mode, 10.0)
    finally:
        client.close()


class FakeCuda:
    """Says CUDA is there, and runs the CUDA branch on the cpu (optionally corrupting the output)."""

    def __init__(self, impl: RemoteImpl, corrupt: bool):
        self.impl, self.corrupt = impl, corrupt

    def __getattr__(self, name: str):
        return getattr(self.impl, name)

    def cuda_info(self) -> dict:
        return {"available": True, "name": "Fake GPU"}

    def device_run(self, module, x, device):
        assert device == "cuda"
        run = self.impl.device_run(module, x, "cpu")
        run["output_device"] = "cuda:0"
        if self.corrupt and run["output"] is not None:
            run["output"] = run["output"] + 1.0
        return run


def test_correct_modules_pass_the_simulation(tmp_path: Path) -> None:
    result = check(submission(tmp_path))
    assert (result.status, result.score, result.max_score) == ("simulated_passed", 10.0, 10.0)
    assert result.device.startswith("meta")


def test_plain_attribute_mask_fails_and_is_named(tmp_path: Path) -> None:
    plain = "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"
    result = check(submission(tmp_path, REGISTERED, plain))
    assert result.status == "simulated_failed"
    assert "'mask'" in result.message and "register_buffer" in result.message
    assert result.score == pytest.approx(10 / 3, abs=0.01)  # CausalAttention and the wrapper built on it fail; MHA passes


def test_tensor_created_on_the_cpu_in_forward_fails(tmp_path: Path) -> None:
    result = check(submission(tmp_path, "self.mask.bool()[:num_tokens, :num_tokens]",
                              "torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()"))
    assert result.status == "simulated_failed" and "device=x.device" in result.message


def test_data_dependent_ops_are_inconclusive_not_failed(tmp_path: Path) -> None:
    result = check(submission(tmp_path, "        keys = self.W_key(x)\n",
                              "        assert not torch.isnan(x).any()\n        keys = self.W_key(x)\n"))
    assert result.status == "inconclusive" and "inconclusive" in result.message
    assert result.score == 10.0


def test_cuda_branch_passes_and_names_the_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = check(submission(tmp_path), fake_cuda=True, monkeypatch=monkeypatch)
    assert (result.status, result.device, result.score) == ("passed", "cuda:0 (Fake GPU)", 10.0)


def test_cuda_branch_fails_when_the_device_output_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = check(submission(tmp_path), fake_cuda=True, corrupt=True, monkeypatch=monkeypatch)
    assert result.status == "failed" and result.score == 0 and "differs from the reference output" in result.message


def test_require_without_cuda_and_skip(tmp_path: Path) -> None:
    sub = submission(tmp_path)
    with pytest.raises(GpuUnavailable, match="CUDA is not available"):
        check(sub, mode="require")
    skipped = check(sub, mode="skip")
    assert (skipped.status, skipped.max_score) == ("skipped", 0.0)
