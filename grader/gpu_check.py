"""The GPU-run check: do the student's attention modules run where their input lives?

The documents' CausalAttentionV1 keeps its mask in a plain attribute, which stays on the CPU when the
module moves to CUDA: the classic bug that only shows on a GPU. For CausalAttention,
MultiHeadAttentionWrapper and MultiHeadAttention the check builds the student's module (in the
worker), loads the reference weights, runs it on the CPU, then moves module and input to the device
and runs it again (dropout 0).

Every verdict is the grader's: the reference module runs here, in the grader, on the same weights
and input, and the student's outputs are compared with it.

* The CPU run must match the reference (an identity or unfinished module earns nothing here; its
  own exercise says why).
* With CUDA (``--gpu auto`` or ``require``, the grader's own torch decides): the output must be on
  the device and match the reference output.
* Without CUDA (``auto``): simulated on PyTorch's ``meta`` device, which follows every device rule but
  holds no data. Every parameter and buffer must follow ``.to(device)``, no tensor may be kept in a
  plain attribute, and no op in forward may mix a ``meta`` tensor with a CPU one (a tensor created
  without ``device=x.device``). Errors only the meta device raises (data-dependent ops: ``.item()``,
  boolean indexing) make the result inconclusive, not failed, and only for a module whose CPU run
  matched the reference. The simulation's observations come from the worker's ``device_run`` probe:
  code that rewrites the worker could forge them, which is why it is called simulated; on CUDA the
  output itself is compared.

The probe ``device_run`` runs inside the worker (grader/kata_worker/probes.py) and sends back plain
data only, so the device is a parameter that the tests of the grader exercise with ``meta`` and
``cpu``, and with a faked CUDA.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from grader.report import GpuCheckResult
from grader.rubric import TESTS_DIR

# (public name, reference module, constructor args): head_dim 2, T = 5 < context_length = 8.
MODULES_CHECKED = (
    ("CausalAttention", "causal_attention", (3, 4, 8, 0.0), {}),
    ("MultiHeadAttentionWrapper", "multihead_wrapper", (3, 2, 8, 0.0), {"num_heads": 2}),
    ("MultiHeadAttention", "multihead_attention", (3, 4, 8, 0.0), {"num_heads": 2}),
)
# Messages of errors that only the meta device raises (it holds no data to decide with).
META_ONLY_ERRORS = (
    "cannot be called on meta tensors",
    "data-dependent",
    "meta tensor",
    "aten::nonzero",
    "aten::_local_scalar_dense",
    "because it has no data",
)


if TYPE_CHECKING:
    import torch


class GpuUnavailable(Exception):
    """``--gpu require`` on a machine without CUDA."""


@dataclass(frozen=True)
class PartResult:
    name: str
    verdict: str  # passed | failed | inconclusive
    message: str


@cache
def _reference() -> ModuleType:
    """tests/reference.py, loaded under a private name (the reference never reaches the worker)."""
    spec = importlib.util.spec_from_file_location("kata_gpu_check_reference", TESTS_DIR / "reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check_module(impl: Any, name: str, ref_module: str, args: tuple, kwargs: dict, device: str) -> PartResult:
    """Run one module on the CPU and on ``device``; the verdict for it, against the reference."""
    import torch

    torch.manual_seed(0)
    reference = getattr(_reference().ref(ref_module), name)(*args, **kwargs).eval()
    x = torch.rand(2, 5, args[0], generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(x)
    try:
        student = getattr(impl, name)(*args, **kwargs)
        # Parameters only: a mask kept as a plain attribute is this check's to judge, not a key error.
        student.load_state_dict(dict(reference.named_parameters()), strict=False)
        student.eval()
        cpu_out = student(x)
    except Exception as err:  # the exercise's own tests judge this; here it only means "cannot check"
        return PartResult(name, "failed", f"{name} does not run on the CPU ({type(err).__name__}: {err}); fix it first")
    if not _matches(cpu_out, expected):
        return PartResult(name, "failed", f"{name} does not match the reference on the CPU (its own tests say why); "
                                          "the GPU-run check needs a module that works on the CPU first")
    try:
        run = impl.device_run(student, x, device)
    except Exception as err:  # the worker timed out or died while running it
        return PartResult(name, "failed", f"{name} on {device}: {type(err).__name__}: {err}")
    return judge(name, device, run, expected)


def _matches(out: Any, expected: "torch.Tensor") -> bool:
    import torch

    return (isinstance(out, torch.Tensor) and out.shape == expected.shape and out.dtype == expected.dtype
            and bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4)))


def judge(name: str, device: str, run: dict[str, Any], expected: "torch.Tensor") -> PartResult:
    """The verdict from the worker's ``device_run`` report (plain data only) and the reference output.

    Called only for a module whose CPU run matched the reference."""
    plain = run.get("plain_tensor_attributes") or []
    plain_hint = (
        f" Plain tensor attribute(s) {', '.join(map(repr, plain))} stay on the CPU when the module moves: "
        "register them with self.register_buffer(...)."
        if plain
        else ""
    )
    error = run.get("error")
    simulated = device == "meta"
    strays = run.get("stray_tensors") or []
    if plain or strays:  # judged before any error: an error must not hide a mask that stays behind
        left = ", ".join(map(str, (strays or plain)[:5]))
        return PartResult(name, "failed", f"{name}: after .to({device!r}) these stay behind: {left}.{plain_hint}")
    if error:
        text = f"{error.get('type')}: {error.get('message')}"
        if simulated and any(marker in text for marker in META_ONLY_ERRORS):
            return PartResult(name, "inconclusive", f"{name}: inconclusive, the meta device cannot run {text[:200]}")
        hint = plain_hint or (" Create tensors with device=x.device or register them as buffers."
                              if "device" in text else "")
        return PartResult(name, "failed", f"{name} fails on {device}: {text[:300]}.{hint}")
    mixed = run.get("mixed_device_ops") or []
    if mixed:
        return PartResult(
            name, "failed",
            f"{name}: forward mixes devices, which fails on a GPU: {'; '.join(mixed[:3])}.{plain_hint}"
            + ("" if plain else " Create tensors with device=x.device or register them as buffers."),
        )
    out_device = str(run.get("output_device"))
    if out_device.split(":")[0] != device.split(":")[0]:
        return PartResult(name, "failed", f"{name}: the output is on {out_device}, expected {device}")
    if not simulated and not _matches(run.get("output"), expected):
        return PartResult(name, "failed", f"{name}: the output on {device} differs from the reference output")
    return PartResult(name, "passed", f"{name}: runs on {device}")


def run_gpu_check(impl: Any, mode: str, points: float) -> GpuCheckResult:
    """The check's line in the report; ``mode`` is auto | require | skip."""
    if mode == "skip":
        return GpuCheckResult.skipped("skipped (--gpu skip)")
    import torch

    if not torch.cuda.is_available():  # the grader's torch decides, not the worker's word
        if mode == "require":
            raise GpuUnavailable("--gpu require: CUDA is not available on this machine")
        device, label = "meta", "meta (simulated: no CUDA here)"
    elif not impl.cuda_info().get("available"):
        if mode == "require":
            raise GpuUnavailable("--gpu require: CUDA is available here but not inside the sandbox")
        device, label = "meta", "meta (simulated: the sandbox cannot reach the GPU)"
    else:
        device, label = "cuda", f"cuda:0 ({torch.cuda.get_device_name(0)})"
    parts = [check_module(impl, name, module, args, kwargs, device) for name, module, args, kwargs in MODULES_CHECKED]
    good = [p for p in parts if p.verdict != "failed"]
    score = round(points * len(good) / len(parts), 2)
    failed = len(good) < len(parts)
    if device == "meta":
        status = "simulated_failed" if failed else (
            "inconclusive" if any(p.verdict == "inconclusive" for p in parts) else "simulated_passed")
    else:
        status = "failed" if failed else "passed"
    message = "\n".join(p.message for p in parts if p.verdict != "passed") or "all three modules run on the device"
    return GpuCheckResult(score, points, status, label, message)
