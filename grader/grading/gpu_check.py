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
* The wrapper builds on CausalAttention. When the student's CausalAttention passes here, the wrapper
  runs with its own heads. Otherwise (it fails on the CPU or on the device, or is not there) the wrapper
  is judged as its re-grade is (grader/grading/scoring.py): in a domain of its own where the stand-in of
  tests/standins/causal_attention.py takes the student's CausalAttention's place, against the reference
  wrapper built over the same stand-in. A correct wrapper is graded whatever its CausalAttention is (one
  mistake, one charge), and the reference never enters a domain.
* A module that is not there (no file, a file that does not parse, or one importing a kata module
  that is not there: read from the submission's files, never from a run) is left out: the check's
  points are split over the modules that are, and its own exercise charges it. With none there the
  check earns nothing. A module that is there but does nothing (a stub, an identity, one that
  raises, one whose import fails when run) fails and earns none.
* The device run: the module and the input move to the device, and the module's output there must be
  on the device and equal the output the CPU run gave on that input (to 1e-4): what only a device run
  shows (a mask kept in a plain attribute, a tensor made in forward without ``device=x.device``).
  Verdicts are passed or failed, never inconclusive; a failure names the tensor that stayed on the
  CPU and the line that made it, where the run shows them.
* The device: CUDA when the grader's own torch and the sandbox have it (``--gpu auto`` or ``require``);
  else, or with ``--gpu simulate``, the simulated GPU of exercises/kata_gpu.py (the worker imports it): tensors
  that report ``cuda:0`` and hold real values, with CUDA's rules on devices (the same file runs the
  public tests' device checks). It runs in the student's process, so code that rewrites the worker
  could forge it, which is why the report calls it simulated.

The probe ``device_run`` runs inside the worker (grader/sandbox/kata_worker/probes.py) and sends back plain
data only (the output as a CPU tensor, an error as text): the comparison is made here. The tests of the
grader exercise it on the simulated GPU, and on a faked CUDA (the real branch on the CPU).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
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


if TYPE_CHECKING:
    import torch


class GpuUnavailable(Exception):
    """``--gpu require`` on a machine without CUDA."""


# --gpu: CUDA when there, else the simulated GPU; CUDA or exit 2; the simulated GPU even with CUDA; no check
GPU_CHOICES = ("auto", "require", "simulate", "skip")
SIMULATED = "simulated"  # the device_run probe's name for the simulated GPU
TOKENS_TRIED = (5, None)  # None: T = context_length
_MAX_SOURCE_BYTES = 2**20
WRAPPER, WRAPPED = "MultiHeadAttentionWrapper", "CausalAttention"
# ``over_standins(substitutes)``: a context that opens a domain of the same submission with the stand-ins
# ``substitutes`` (module name -> tests/standins/ file) in place of the student's modules, and gives its impl.
OverStandins = Callable[[Mapping[str, Path]], AbstractContextManager[Any]]


@dataclass(frozen=True)
class PartResult:
    name: str
    verdict: str  # passed | failed | absent (not there) | left out (fails on the CPU)
    message: str
    cpu_matched: bool = False  # its CPU run matched: a failure is the device's
    over_standin: bool = False  # the wrapper, judged over the stand-in CausalAttention (said even when passed)
    for_review: tuple[str, ...] = ()  # how its code told the simulated GPU from CUDA (said even when passed)


def check_module(impl: Any, name: str, ref_module: str, args: tuple, kwargs: dict, device: str,
                 standins: frozenset[str] = frozenset()) -> PartResult:
    """Run one module on the CPU and on ``device``; the verdict for it, against the reference.

    ``standins``: the modules that stand-ins replace in ``impl``'s domain (the wrapper's re-judging);
    the reference is then built over the same stand-ins, and they count as there."""
    import torch  # costly: the command line reads this module's choices without it

    torch.manual_seed(0)
    reference = getattr(tests_module("reference.py").ref(ref_module, standins), name)(*args, **kwargs).eval()
    d_in, context_length = args[0], args[2]
    inputs = [torch.rand(2, t or context_length, d_in, generator=torch.Generator().manual_seed(1))
              for t in TOKENS_TRIED]
    with torch.no_grad():
        expected = [reference(x) for x in inputs]
    absent = _absent(impl, name, ref_module, standins)
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
    errors = []
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
    if len(errors) == len(inputs):
        err = errors[0]
        return PartResult(name, "failed", f"{name} does not run on the CPU ({type(err).__name__}: {err}); fix it first")
    return PartResult(name, "failed", f"{name} does not match the reference on the CPU (its own tests say why); "
                                      "the GPU-run check needs a module that works on the CPU first")


def _absent(impl: Any, name: str, module: str, standins: frozenset[str] = frozenset()) -> PartResult | None:
    """The verdict for a module that is not there (read from the submission's files), or None."""
    root = getattr(getattr(impl, "_kata_client", None), "submission_dir", None)
    missing = None if root is None else not_there(Path(root), module, standins)
    if not missing:
        return None
    return PartResult(name, "absent", f"{name}: not there ({missing}); left out here (the check's points are "
                                      "split over the modules that are), its own exercise counts it")


def not_there(root: Path, module: str, there: frozenset[str] = frozenset()) -> str | None:
    """Why the submission's ``module`` is not there, read from its files (never run), or None.

    Not there: no regular ``<module>.py`` in any group folder, one that does not parse, or one that
    imports a kata module that is not there (``there``: modules that need no looking at, a stand-in's or
    one already looked at). Decided from the files, not from a run in the worker, so that code cannot
    make itself vanish from this check (by failing its import only here)."""
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
    for other in sorted(imported & set(kata_modules) - there - {module}):
        why = not_there(root, other, there | {module})
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

    Called only for a module whose CPU run matched the reference on this input (for the wrapper over the
    stand-in CausalAttention, the reference wrapper's over it); ``expected`` is that CPU output."""
    verdict = _verdict(name, device, run, expected)
    detections = tuple(str(d) for d in run.get("detections") or ())
    if not detections:
        return verdict
    return replace(verdict, for_review=detections, message=f"{verdict.message} [{FOR_REVIEW}: {name} told the simulated "
                                                             f"GPU from CUDA by {'; '.join(detections)}]")


FOR_REVIEW = "for review"  # the words that mark what a person should look at (kata_gpu.py's detections)


def _verdict(name: str, device: str, run: dict[str, Any], expected: "torch.Tensor") -> PartResult:
    plain = run.get("plain_tensor_attributes") or []
    strays = run.get("stray_tensors") or []
    shown = "the GPU (simulated)" if device == SIMULATED else device
    error = run.get("error")
    if error:
        text = " ".join(f"{error.get('type')}: {error.get('message')}".split())[:600]
        where = error.get("where")
        return PartResult(name, "failed", f"{name} fails on {shown}: {text}" + (f" [raised at {where}]" if where else "")
                          + _hint(text, plain, strays))
    out_device = str(run.get("output_device"))
    if not out_device.startswith("cuda"):
        return PartResult(name, "failed", f"{name}: its output on {shown} is on {out_device}, expected cuda:0")
    if not _matches(run.get("output"), expected):
        return PartResult(name, "failed", f"{name}: its output on {shown} differs from its output on the CPU "
                                          "for the same weights and input")
    return PartResult(name, "passed", f"{name}: runs on {shown}")


def _hint(error: str, plain: list[str], strays: list[str]) -> str:
    """What to do about a device error, from what the run showed."""
    if "device" not in error:
        return ""
    if plain:
        return (f" Plain tensor attribute(s) {', '.join(map(repr, plain[:5]))} stay on the CPU when the module "
                "moves: register them with self.register_buffer(...).")
    if strays:
        return f" These stayed on the CPU after .to(device): {', '.join(strays[:5])}."
    return " Create tensors in forward with device=x.device, or register them as buffers."


def run_gpu_check(impl: Any, mode: str, points: float, over_standins: OverStandins,
                  works_on_cpu: Mapping[str, bool] | None = None, scope: Collection[str] | None = None) -> GpuCheckResult:
    """The check's line in the report; ``mode`` is one of GPU_CHOICES.

    One mistake, one charge: ``works_on_cpu`` says, for each module checked, whether its own exercise's
    core tests all pass (grader/grading/grade.py); one that does not is left out of the check's share, as a
    missing one is (its exercise charges it). The wrapper on a CausalAttention that does not pass here is
    judged over the stand-in, in the domain ``over_standins(substitutes)`` opens (see OverStandins); it is
    checked last, so that the caller may end ``impl``'s domain first.
    ``scope``: the modules whose share counts (an nbgrader assignment's); the others may still be run,
    to tell whose mistake a failure is, and count nothing. The points are 0 only when no module counts.
    """
    if mode == "skip":
        return GpuCheckResult.skipped("skipped (--gpu skip)")
    device, label = _device(impl, mode)
    works = dict(works_on_cpu or {})
    parts: dict[str, PartResult] = {}
    for name, module, args, kwargs in sorted(MODULES_CHECKED, key=lambda m: m[0] == WRAPPER):
        if name == WRAPPER and scope is not None and name not in scope:
            continue  # it tells nothing of another module's mistake
        # The wrapper's own core tests ran over the student's CausalAttention: they say little when it fails.
        if name == WRAPPER and parts[WRAPPED].verdict != "passed" and (works.get(name, True) or not works.get(WRAPPED, True)):
            parts[name] = _wrapper_over_standin(over_standins, module, args, kwargs, device, works)
        elif not works.get(name, True):
            parts[name] = _absent(impl, name, module) or PartResult(name, "left out", LEFT_OUT.format(name=name))
        else:
            parts[name] = check_module(impl, name, module, args, kwargs, device)
    counted = [parts[name] for name, *_ in MODULES_CHECKED if scope is None or name in scope]
    there = [p for p in counted if p.verdict not in ("absent", "left out")]
    good = [p for p in there if p.verdict == "passed"]
    score = round(points * len(good) / len(there), 2) if there else 0.0
    failed = len(good) < len(there) or not there
    status = ("simulated_" if device == SIMULATED else "") + ("failed" if failed else "passed")
    # One line per module: an error's own line breaks (where it was raised) are folded into it.
    message = "\n".join(" ".join(p.message.split()) for p in counted
                        if p.verdict != "passed" or p.over_standin or p.for_review) or (
        "all three modules run on the device" if len(counted) == 3 else f"all {len(counted)} modules run on the device")
    if not there:
        message = ("none of the three modules is there: nothing to run on the device\n" if len(counted) == 3 and all(
            p.verdict == "absent" for p in counted) else "no module can be judged on the device here (none that is "
                                                         "there works on the CPU): nothing to run\n") + message
    review = tuple(f"{p.name}: {d}" for p in parts.values() for d in p.for_review)
    return GpuCheckResult(score, points, status, label, message, review)


def _device(impl: Any, mode: str) -> tuple[str, str]:
    """(the device the check runs on, its label in the report); GpuUnavailable for ``--gpu require``
    without CUDA in the grader or in the sandbox."""
    import torch  # costly (see check_module)

    if mode == "simulate":
        return SIMULATED, "cuda:0 (simulated: --gpu simulate)"
    if not torch.cuda.is_available():  # the grader's torch decides, not the worker's word
        if mode == "require":
            raise GpuUnavailable("--gpu require: CUDA is not available on this machine")
        return SIMULATED, "cuda:0 (simulated: no CUDA here)"
    if not impl.cuda_info().get("available"):
        if mode == "require":
            raise GpuUnavailable("--gpu require: CUDA is available here but not inside the sandbox")
        return SIMULATED, "cuda:0 (simulated: the sandbox cannot reach the GPU)"
    return "cuda", f"cuda:0 ({torch.cuda.get_device_name(0)})"


LEFT_OUT = ("{name}: left out here, it fails its own exercise's core tests on the CPU (charged there, once); "
            "the check's points are split over the modules that work on the CPU")


def _wrapper_over_standin(over_standins: OverStandins, module: str, args: tuple, kwargs: dict, device: str,
                          works: Mapping[str, bool]) -> PartResult:
    """The wrapper's verdict over the stand-in CausalAttention, in a domain of its own."""
    rubric = load_rubric()
    wrapped = rubric.exercises[rubric.owner_of[WRAPPED]]
    with over_standins({wrapped.module: wrapped.standin_file}) as standin_impl:
        part = check_module(standin_impl, WRAPPER, module, args, kwargs, device, frozenset({wrapped.module}))
    if part.verdict == "failed" and not part.cpu_matched and not works.get(WRAPPER, True):
        return PartResult(WRAPPER, "left out", LEFT_OUT.format(name=WRAPPER))
    over = "judged over a stand-in CausalAttention (tests/standins/) since yours does not pass this check"
    message = f"{WRAPPER}: runs on the device, {over}" if part.verdict == "passed" else f"{part.message} ({over})"
    return replace(part, message=message, over_standin=True)
