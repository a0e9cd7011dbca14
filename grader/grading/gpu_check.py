"""The GPU-run check: do the student's attention modules run where their input lives?

The documents' CausalAttentionV1 keeps its mask in a plain attribute, which stays on the CPU when the
module moves to CUDA: the classic bug that only shows on a GPU. For CausalAttention,
MultiHeadAttentionWrapper and MultiHeadAttention the check builds the student's module (in the
worker), loads the reference weights, runs it on the CPU, then moves module and input to the device
and runs it again (dropout 0).

Every verdict is the grader's: the reference module runs here, in the grader, on the same weights
and input, and the student's outputs are compared with it.

* The CPU run must match the reference (an identity or unfinished module earns nothing here; its
  own exercise says why). It is tried on T = 5 < context_length, then on T = context_length, and
  the device run uses the first input the CPU run gets right: a mistake unrelated to devices (a mask
  not cut to T x T) is charged by the module's own exercise, once, not again here.
* The wrapper builds on CausalAttention: when the student's CausalAttention does not match the
  reference, the wrapper is judged on its own part, with its own heads standing in for the reference
  (its output must be its heads' outputs concatenated, in the reference's shape); the reference never
  enters the worker.
* A module that is not there (no file, a file that does not parse, or one importing a kata module
  that is not there: read from the submission's files, never from a run) is left out: the check's
  points are split over the modules that are, and its own exercise charges it. With none there the
  check earns nothing. A module that is there but does nothing (a stub, an identity, one that
  raises, one whose import fails when run) fails and earns none.
* With CUDA (``--gpu auto`` or ``require``, the grader's own torch decides): the output must be on
  the device and match the reference output (for the wrapper judged on its own heads: that output).
* Without CUDA (``auto``): simulated on PyTorch's ``meta`` device, which follows every device rule but
  holds no data. Every parameter and buffer must follow ``.to(device)``, no tensor may be kept in a
  plain attribute, and no op in forward may mix a ``meta`` tensor with a CPU one (a tensor created
  without ``device=x.device``). Errors only the meta device raises (data-dependent ops: ``.item()``,
  boolean indexing) make the result inconclusive, not failed, and only for a module whose CPU run
  matched the reference (the wrapper on a broken CausalAttention: its own heads' outputs). The simulation's observations come from the worker's ``device_run`` probe:
  code that rewrites the worker could forge them, which is why it is called simulated; on CUDA the
  output itself is compared.

The probe ``device_run`` runs inside the worker (grader/sandbox/kata_worker/probes.py) and sends back plain
data only, so the device is a parameter that the tests of the grader exercise with ``meta`` and
``cpu``, and with a faked CUDA.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.grading.results import GpuCheckResult
from grader.grading.scoring import imported_modules
from grader.rubric import GROUPS, load_rubric, tests_module
from grader.sandbox.client import WorkerFailure

# (public name, reference module, constructor args): head_dim 2, T = 5 < context_length = 8, then T = 8.
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


GPU_CHOICES = ("auto", "require", "skip")  # --gpu: CUDA when there, else simulated; CUDA or exit 2; no check
TOKENS_TRIED = (5, None)  # None: T = context_length
_MAX_SOURCE_BYTES = 2**20
WRAPPER, WRAPPED = "MultiHeadAttentionWrapper", "CausalAttention"


@dataclass(frozen=True)
class PartResult:
    name: str
    verdict: str  # passed | failed | inconclusive | absent (not there) | left out (fails on the CPU)
    message: str
    cpu_matched: bool = False  # its CPU run matched: a failure is the device's


def check_module(impl: Any, name: str, ref_module: str, args: tuple, kwargs: dict, device: str,
                 own_heads: bool = False) -> PartResult:
    """Run one module on the CPU and on ``device``; the verdict for it, against the reference.

    ``own_heads`` (the wrapper, when the student's CausalAttention fails): a wrapper whose output is
    not the reference's may still be right about its own part, its heads' outputs concatenated."""
    import torch  # costly: the command line reads this module's choices without it

    torch.manual_seed(0)
    reference = getattr(tests_module("reference.py").ref(ref_module), name)(*args, **kwargs).eval()
    d_in, context_length = args[0], args[2]
    inputs = [torch.rand(2, t or context_length, d_in, generator=torch.Generator().manual_seed(1))
              for t in TOKENS_TRIED]
    with torch.no_grad():
        expected = [reference(x) for x in inputs]
    absent = _absent(impl, name, ref_module)
    if absent is not None:
        return absent
    try:
        cls = getattr(impl, name)
    except Exception as err:  # its file is there: an import that fails at run time is a failure, not absence
        return PartResult(name, "failed", f"{name} cannot be imported ({type(err).__name__}: {err}); fix it first")
    try:
        student = cls(*args, **kwargs)
        # Parameters only: a mask kept as a plain attribute is this check's to judge, not a key error.
        student.load_state_dict(dict(reference.named_parameters()), strict=False)
        student.eval()
    except Exception as err:  # the exercise's own tests judge this; here it only means "cannot check"
        return PartResult(name, "failed", f"{name} does not run on the CPU ({type(err).__name__}: {err}); fix it first")
    cpu_outs, errors = [], []
    for x, want in zip(inputs, expected):
        try:
            out = student(x)
        except WorkerFailure as err:
            return PartResult(name, "failed", f"{name} on the CPU: {err}")
        except Exception as err:  # e.g. a mask not cut to T x T fails for T < context_length only
            errors.append(err)
            out = None
        if _matches(out, want):
            return _device_verdict(impl, name, student, x, want, device)
        cpu_outs.append(out)
    if own_heads:
        try:
            for x, out, want in zip(inputs, cpu_outs, expected):
                if out is None:
                    continue
                own = torch.cat([head(x) for head in student.heads], dim=-1)
                if own.shape == want.shape and _matches(out, own):
                    return _device_verdict(impl, name, student, x, own, device)
        except WorkerFailure as err:
            return PartResult(name, "failed", f"{name} on the CPU: {err}")
        except Exception:
            pass  # no heads, or heads that cannot run: judged as below
    if len(errors) == len(inputs):
        err = errors[0]
        return PartResult(name, "failed", f"{name} does not run on the CPU ({type(err).__name__}: {err}); fix it first")
    return PartResult(name, "failed", f"{name} does not match the reference on the CPU (its own tests say why); "
                                      "the GPU-run check needs a module that works on the CPU first")


def _absent(impl: Any, name: str, module: str) -> PartResult | None:
    """The verdict for a module that is not there (read from the submission's files), or None."""
    root = getattr(getattr(impl, "_kata_client", None), "submission_dir", None)
    missing = None if root is None else not_there(Path(root), module)
    if not missing:
        return None
    return PartResult(name, "absent", f"{name}: not there ({missing}); left out here (the check's points are "
                                      "split over the modules that are), its own exercise counts it")


def not_there(root: Path, module: str, _seen: frozenset[str] = frozenset()) -> str | None:
    """Why the submission's ``module`` is not there, read from its files (never run), or None.

    Not there: no regular ``<module>.py`` in any group folder, one that does not parse, or one that
    imports a kata module that is not there. Decided from the files, not from a run in the worker, so
    that code cannot make itself vanish from this check (by failing its import only here)."""
    candidates = [root / group / f"{module}.py" for group in GROUPS]
    found = [f for f in candidates if f.is_file() and not f.is_symlink()]
    if not found:
        return f"no {module}.py"
    try:
        if found[0].stat().st_size > _MAX_SOURCE_BYTES:
            return None  # there; the worker's intake says what it makes of it
        tree = ast.parse(found[0].read_bytes())
    except (SyntaxError, ValueError) as err:
        return f"{module}.py does not parse: {type(err).__name__}: {err}"
    except (OSError, RecursionError, MemoryError):
        return None
    kata_modules = load_rubric().module_groups
    imported = imported_modules(tree)
    for other in sorted(imported & set(kata_modules) - _seen - {module}):
        why = not_there(root, other, _seen | {module})
        if why:
            return f"it imports {other}: {why}"
    return None


def _device_verdict(impl: Any, name: str, student: Any, x: "torch.Tensor", expected: "torch.Tensor",
                    device: str) -> PartResult:
    try:
        run = impl.device_run(student, x, device)
    except Exception as err:  # the worker timed out or died while running it
        return PartResult(name, "failed", f"{name} on {device}: {type(err).__name__}: {err}", True)
    return replace(judge(name, device, run, expected), cpu_matched=True)


def _matches(out: Any, expected: "torch.Tensor") -> bool:
    import torch  # costly (see check_module)

    return (isinstance(out, torch.Tensor) and out.shape == expected.shape and out.dtype == expected.dtype
            and bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4)))


def judge(name: str, device: str, run: dict[str, Any], expected: "torch.Tensor") -> PartResult:
    """The verdict from the worker's ``device_run`` report (plain data only) and the expected output.

    Called only for a module whose CPU run matched the reference on this input (or, for the wrapper on a
    broken CausalAttention, its own heads' outputs concatenated), and ``expected`` is that output."""
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


def run_gpu_check(impl: Any, mode: str, points: float, works_on_cpu: Mapping[str, bool] | None = None,
                  scope: Collection[str] | None = None) -> GpuCheckResult:
    """The check's line in the report; ``mode`` is one of GPU_CHOICES.

    One mistake, one charge: ``works_on_cpu`` says, for each module checked, whether its own exercise's
    core tests all pass (grader/grading/grade.py); one that does not is left out of the check's share, as a
    missing one is (its exercise charges it), except the wrapper on a CausalAttention that fails: it is
    judged on its own part (its heads' outputs concatenated). A wrapper whose heads fail on the device
    because the student's CausalAttention does is left out too (CausalAttention is charged for it).
    ``scope``: the modules whose share counts (an nbgrader assignment's); the others may still be run,
    to tell whose mistake a failure is, and count nothing. The points are 0 only when no module counts.
    """
    if mode == "skip":
        return GpuCheckResult.skipped("skipped (--gpu skip)")
    import torch  # costly (see check_module)

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
    works = dict(works_on_cpu or {})
    parts: dict[str, PartResult] = {}
    for name, module, args, kwargs in MODULES_CHECKED:
        parts[name] = _check_part(impl, name, module, args, kwargs, device, works, parts)
    counted = [p for name, p in parts.items() if scope is None or name in scope]
    there = [p for p in counted if p.verdict not in ("absent", "left out")]
    good = [p for p in there if p.verdict in ("passed", "inconclusive")]
    score = round(points * len(good) / len(there), 2) if there else 0.0
    failed = len(good) < len(there) or not there
    if device == "meta":
        status = "simulated_failed" if failed else (
            "inconclusive" if any(p.verdict == "inconclusive" for p in counted) else "simulated_passed")
    else:
        status = "failed" if failed else "passed"
    # One line per module: an error's own line breaks (where it was raised) are folded into it.
    message = "\n".join(" ".join(p.message.split()) for p in counted if p.verdict != "passed") or (
        "all three modules run on the device" if len(counted) == 3 else f"all {len(counted)} modules run on the device")
    if not there:
        message = ("none of the three modules is there: nothing to run on the device\n" if len(counted) == 3 and all(
            p.verdict == "absent" for p in counted) else "no module can be judged on the device here (none that is "
                                                         "there works on the CPU): nothing to run\n") + message
    return GpuCheckResult(score, points, status, label, message)


LEFT_OUT = ("{name}: left out here, it fails its own exercise's core tests on the CPU (charged there, once); "
            "the check's points are split over the modules that work on the CPU")


def _check_part(impl: Any, name: str, module: str, args: tuple, kwargs: dict, device: str,
                works: Mapping[str, bool], parts: Mapping[str, PartResult]) -> PartResult:
    """One module's verdict: passed | failed | inconclusive | absent | left out (see run_gpu_check)."""
    wrapped = parts.get(WRAPPED)
    if name == WRAPPER and wrapped is not None and (wrapped.verdict in ("absent", "left out") or (
            wrapped.verdict == "failed" and not wrapped.cpu_matched)):
        part = check_module(impl, name, module, args, kwargs, device, own_heads=True)
        if part.verdict == "failed" and "on the CPU" in part.message and not works.get(name, True):
            return PartResult(name, "left out", f"{name}: left out here, it does not run on the CPU over your "
                                                f"CausalAttention (which its own exercise charges, once)")
        return part
    if not works.get(name, True):
        return _absent(impl, name, module) or PartResult(name, "left out", LEFT_OUT.format(name=name))
    part = check_module(impl, name, module, args, kwargs, device)
    if name == WRAPPER and part.verdict == "failed" and wrapped is not None and wrapped.cpu_matched \
            and wrapped.verdict == "failed":
        return PartResult(name, "left out", f"{name}: left out here, its heads are your CausalAttention, which "
                                            "fails on the device (charged there, once)")
    return part
