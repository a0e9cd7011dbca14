"""The GPU-run check: do the student's attention modules run where their input lives?

The documents' CausalAttentionV1 keeps its mask in a plain attribute, which stays on the CPU when the
module moves to CUDA: the classic bug that only shows on a GPU. For each module the rubric names
(tests/rubric.json's ``gpu_check.modules``: CausalAttention, MultiHeadAttentionWrapper,
MultiHeadAttention, with the constructor arguments to build them with) the check builds the student's
module (in the worker), loads the reference weights, runs it on the CPU, then moves module and input to
the device and runs it again (dropout 0).

A mistake costs only the module it is in. Each module has a fixed share of the check's points: the
points over the number of modules counted (all the rubric names; in an nbgrader assignment, those of the
assignment's own exercises), whatever else the student finished. A module earns its share when its
device run gives what its CPU run gives, in proportion to its own exercise's core points earned (after
any re-grade over stand-ins: grader/grading/scoring.py), the rule edge tests follow. So a numeric mistake
costs its exercise and that same proportion of its module's share, never another module's points; a
module not written (a stub, a deleted file, one that does not parse) earns nothing of its share, and no
share moves to the modules that are finished. The device runs happen while the hidden tests' domain is
open (:func:`run_gpu_check` gives :class:`DeviceRuns`); the points come once the exercises' results
exist (:meth:`DeviceRuns.scored`).

* The CPU run: tried on T = 5 < context_length, then on T = context_length; the device run uses the
  first input on which the CPU run matches the reference module (run by the grader, on the same weights
  and input), else the first the CPU run gives an output for: a mistake unrelated to devices (a mask
  not cut to T x T) is charged by the module's own exercise, not here. A module whose exercise's core
  tests all pass must match the reference here too: one that does not is told so and earns nothing (it
  runs differently here than in its tests).
* A module built on another checked module (as its re-grade takes it, grader/grading/scoring.py's
  ``dependencies``: the wrapper on CausalAttention) runs with the student's one when that one passed
  here on the reference's output.
  Otherwise (wrong, failing on the device, not there) it is judged as its re-grade is: in a domain of its
  own where the stand-in of tests/standins/ takes the other module's place, against the reference built
  over the same stand-in (one mistake, one charge; the reference never enters a domain).
* A module that is not there (no file, a file that does not parse, or one importing a kata module that
  is not there: read from the submission's files, never from a run) is not run, nor is one that cannot
  earn (``may_earn``: its exercise's core tests all fail and no re-grade can change that): both earn
  nothing. A module that is there but does nothing (a stub, one that raises, one whose import fails
  when run) fails and earns nothing.
* The device run: the module and the input move to the device, and the module's output there must be on
  the device and equal the output the CPU run gave on that input (to 1e-4): what only a device run shows
  (a mask kept in a plain attribute, a tensor made in forward without ``device=x.device``). Verdicts are
  passed or failed, never inconclusive; a failure names the tensor that stayed on the CPU and the line
  that made it, where the run shows them. The report has one line per module, with the share it earned.
* The device: CUDA when the grader's own torch and the sandbox have it (``--gpu auto`` or ``require``);
  else, or with ``--gpu simulate``, the simulated GPU of exercises/kata_gpu.py (the worker imports it):
  tensors that report ``cuda:0`` and hold real values, with CUDA's rules on devices (the same file runs
  the public tests' device checks). It runs in the student's process, so code that rewrites the worker
  could forge it, which is why the report calls it simulated.

The probe ``device_run`` runs inside the worker (grader/sandbox/kata_worker/worker.py) and sends back plain
data only (the output as a CPU tensor, an error as text): the comparison is made here. The tests of the
grader exercise it on the simulated GPU, and on a faked CUDA (the real branch on the CPU).
"""

from __future__ import annotations

import ast
import secrets
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.grading.results import GpuCheckResult
from grader.grading.scoring import imported_modules
from grader.rubric import GROUPS, GpuModule, Rubric, load_rubric, tests_module
from grader.sandbox.client import WorkerFailure

if TYPE_CHECKING:
    import torch


class GpuUnavailable(Exception):
    """``--gpu require`` on a machine without CUDA."""


# --gpu: CUDA when there, else the simulated GPU; CUDA or exit 2; the simulated GPU even with CUDA; no check
GPU_CHOICES = ("auto", "require", "simulate", "skip")
SIMULATED = "simulated"  # the device_run probe's name for the simulated GPU
TOKENS_TRIED = (5, None)  # None: T = context_length
_MAX_SOURCE_BYTES = 2**20
# ``over_standins(substitutes)``: a context that opens a domain of the same submission with the stand-ins
# ``substitutes`` (module name -> tests/standins/ file) in place of the student's modules, and gives its impl.
OverStandins = Callable[[Mapping[str, Path]], AbstractContextManager[Any]]


@dataclass(frozen=True)
class PartResult:
    name: str
    verdict: str  # passed | failed | absent (not there) | left out (cannot earn: not run)
    message: str
    reference_matched: bool = False  # its CPU run matched the reference on the input its device run used
    for_review: tuple[str, ...] = ()  # how its code told the simulated GPU from CUDA (said even when passed)
    on_device: bool = False  # it ran on the device: what a device run shows of it is this check's to charge

    @property
    def good(self) -> bool:
        """Passed here on the reference's output: what a module built on it may run over."""
        return self.verdict == "passed" and self.reference_matched


_UNDECIDED = PartResult("", "undecided", "")  # a module not judged yet (built on one judged later)


def check_module(impl: Any, checked: GpuModule, device: str, standins: frozenset[str] = frozenset()) -> PartResult:
    """Run one module on the CPU and on ``device``; its verdict.

    ``standins``: the modules that stand-ins replace in ``impl``'s domain (a module built on one judged
    over it); the reference is then built over the same stand-ins, and they count as there."""
    import torch  # costly: the command line reads this module's choices without it

    name, args = checked.name, checked.args
    # Weights and inputs drawn afresh in every grading: code cannot tell the check's calls from others by
    # their values (and answer them apart); honest code gives the same verdict on any of them.
    seed = secrets.randbits(62)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        reference = getattr(tests_module("reference.py").ref(checked.module, standins), name)(
            *args, **checked.kwargs).eval()
    d_in, context_length = args[0], args[2]
    inputs = [torch.rand(2, t or context_length, d_in, generator=torch.Generator().manual_seed(seed + 1))
              for t in TOKENS_TRIED]
    with torch.no_grad():
        expected = [reference(x) for x in inputs]
    absent = _absent(impl, checked, standins)
    if absent is not None:
        return absent
    try:
        cls = getattr(impl, name)
    except Exception as err:  # its file is there: an import that fails at run time is a failure, not absence
        return PartResult(name, "failed", f"{name} cannot be imported ({type(err).__name__}: {err}); fix it first")
    try:
        student = cls(*args, **checked.kwargs)
        # Parameters only: a mask kept as a plain attribute is this check's to judge, not a key error.
        student.load_state_dict(dict(reference.named_parameters()), strict=False)
        student.eval()
    except Exception as err:  # the exercise's own tests judge this; here it only means "cannot check"
        return PartResult(name, "failed", f"{name} does not run on the CPU ({type(err).__name__}: {err}); fix it first")
    errors, first_output = [], None
    for x, want in zip(inputs, expected):
        try:
            out = student(x)
        except WorkerFailure as err:
            return PartResult(name, "failed", f"{name} on the CPU: {err}")
        except Exception as err:  # e.g. a mask not cut to T x T fails for T < context_length only
            errors.append(err)
            continue
        if _matches(out, want):
            return replace(_device_verdict(impl, name, student, x, out, device), reference_matched=True)
        if first_output is None and isinstance(out, torch.Tensor):
            first_output = (x, out)
    if first_output is not None:  # wrong on the CPU: its exercise charges that; the device run is judged here
        return _device_verdict(impl, name, student, *first_output, device)
    err = errors[0] if errors else None
    why = f"({type(err).__name__}: {err})" if err else "(no tensor comes out)"
    return PartResult(name, "failed", f"{name} does not run on the CPU {why}; fix it first")


def _absent(impl: Any, checked: GpuModule, standins: frozenset[str] = frozenset()) -> PartResult | None:
    """The verdict for a module that is not there (read from the submission's files), or None."""
    root = getattr(getattr(impl, "_kata_client", None), "submission_dir", None)
    missing = None if root is None else not_there(Path(root), checked.module, standins)
    if not missing:
        return None
    return PartResult(checked.name, "absent", f"{checked.name}: not there ({missing}); its own exercise counts it")


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
        tree = ast.parse(found[0].read_bytes(), filename=found[0].name)
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


def _device_verdict(impl: Any, name: str, student: Any, x: "torch.Tensor", cpu_output: "torch.Tensor",
                    device: str) -> PartResult:
    try:
        run = impl.device_run(student, x, device)
    except Exception as err:  # the worker timed out or died while running it
        return PartResult(name, "failed", f"{name} on {device}: {type(err).__name__}: {err}", on_device=True)
    return replace(judge(name, device, run, cpu_output), on_device=True)


def _matches(out: Any, expected: "torch.Tensor") -> bool:
    import torch  # costly (see check_module)

    return (isinstance(out, torch.Tensor) and out.shape == expected.shape and out.dtype == expected.dtype
            and bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4)))


def judge(name: str, device: str, run: dict[str, Any], expected: "torch.Tensor") -> PartResult:
    """The verdict from the worker's ``device_run`` report (plain data only) and ``expected``, the
    module's own CPU output on the same weights and input."""
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




def run_gpu_check(impl: Any, mode: str, points: float, over_standins: OverStandins,
                  may_earn: Mapping[str, bool] | None = None, scope: Collection[str] | None = None,
                  builds_on: Mapping[str, Collection[str]] | None = None, broken: Collection[str] = ()) -> DeviceRuns:
    """The device runs of the check (``mode`` is one of GPU_CHOICES); their points come later, from
    the exercises' results (:meth:`DeviceRuns.scored`).

    ``may_earn``: for each module checked, whether its exercise can earn core points (grader/grading/grade.py:
    some core test passes, or a re-grade over stand-ins may come); one that cannot is not run. ``scope``:
    the modules whose share counts (an nbgrader assignment's); a module another one counted builds on is
    still run, to tell whose mistake a failure is, and counts nothing. ``builds_on``: exercise id -> the
    exercises it builds on, as its re-grade takes them (default: the rubric's ``depends_on``); of those, the
    ones that are no module of the check are replaced by their stand-ins where ``broken`` (their exercises
    fail their own tests: a helper such as causal_mask that the student's CausalAttention calls). A module
    judged over stand-ins is run last, in a domain ``over_standins(substitutes)`` opens (see OverStandins),
    so that the caller may end ``impl``'s domain first.
    """
    rubric = load_rubric()
    counted = tuple(m for m in rubric.gpu_modules if scope is None or m.name in scope)
    if mode == "skip" or not counted:
        return DeviceRuns(0.0, skipped="skipped (--gpu skip)" if mode == "skip" else
                          "skipped: no module of the GPU-run check is graded here")
    device, label = _device(impl, mode)
    edges = builds_on if builds_on is not None else {ex.id: ex.depends_on for ex in rubric.exercises.values()}
    below = {m.name: _built_on(rubric, m, edges) for m in rubric.gpu_modules}
    needed = {m.name for m in counted} | {b.name for m in counted for b in below[m.name]}
    parts: dict[str, PartResult] = {}
    later: dict[str, list[tuple[str, str]]] = {}  # module -> (name, exercise) of those stand-ins replace there
    checked_ids = {m.exercise for m in rubric.gpu_modules}
    for checked in (m for m in rubric.gpu_modules if m.name in needed):
        replaced = [(b.name, b.exercise) for b in below[checked.name] if rubric.exercises[b.exercise].standin_file.is_file()
                    and (b.name in later or not parts.get(b.name, _UNDECIDED).good)]
        replaced += [(rubric.exercises[e].module, e) for e in sorted(_closure(edges, checked.exercise) & set(broken))
                     if e not in checked_ids and rubric.exercises[e].standin_file.is_file()]
        if may_earn is not None and not may_earn.get(checked.name, True):
            parts[checked.name] = _absent(impl, checked) or PartResult(checked.name, "left out", LEFT_OUT)
        elif replaced:
            later[checked.name] = replaced
        else:
            parts[checked.name] = check_module(impl, checked, device)
    for checked in (m for m in rubric.gpu_modules if m.name in later):
        parts[checked.name] = _over_standins(over_standins, checked, device, later[checked.name])
    return DeviceRuns(points, device, label, tuple(parts[m.name] for m in counted))


def _closure(edges: Mapping[str, Collection[str]], ex_id: str) -> set[str]:
    """The exercises ``ex_id`` builds on (``edges``, followed), itself left out."""
    found: set[str] = set()
    todo = list(edges.get(ex_id, ()))
    while todo:
        dep = todo.pop()
        if dep not in found:
            found.add(dep)
            todo.extend(edges.get(dep, ()))
    return found - {ex_id}


def _built_on(rubric: Rubric, checked: GpuModule, edges: Mapping[str, Collection[str]]) -> list[GpuModule]:
    """The checked modules that ``checked``'s exercise builds on (``edges``, followed), in the rubric's order."""
    found = _closure(edges, checked.exercise)
    return [m for m in rubric.gpu_modules if m.exercise in found]


LEFT_OUT = "not run here: its exercise's core tests all fail (charged there, once)"


def _over_standins(over_standins: OverStandins, checked: GpuModule, device: str,
                   replaced: list[tuple[str, str]]) -> PartResult:
    """``checked``'s verdict over the stand-ins of ``replaced`` ((name, exercise id) of modules it builds on
    that did not pass here or fail their own tests), in a domain of its own."""
    rubric = load_rubric()
    substitutes = {rubric.exercises[ex_id].module: rubric.exercises[ex_id].standin_file for _, ex_id in replaced}
    with over_standins(substitutes) as standin_impl:
        part = check_module(standin_impl, checked, device, frozenset(substitutes))
    names = ", ".join(name for name, _ in replaced)
    over = f"judged over a stand-in {names} (the grader's own) since yours does not pass this check"  # no path of ours
    message = f"{checked.name}: runs on the device, {over}" if part.verdict == "passed" else f"{part.message} ({over})"
    return replace(part, message=message)


@dataclass(frozen=True)
class DeviceRuns:
    """What the device runs showed, one part per module counted (in the rubric's order); scored once the
    exercises' results exist."""

    points: float
    device: str = ""  # SIMULATED or "cuda"
    label: str = "none"  # the device as the report names it
    parts: tuple[PartResult, ...] = ()
    skipped: str = ""  # why the check did not run (--gpu skip, no module in scope)
    failure: str = ""  # the worker failed while it ran

    @property
    def ran(self) -> bool:
        return not self.skipped

    @property
    def ran_on_the_device(self) -> frozenset[str]:
        """The public names of the modules that ran on the device: only their device tests are the check's to
        charge (one not there, left out or failing on the CPU first never reached what a device run shows). A
        worker that failed while the check ran: every module's, as the check then earns nothing."""
        if self.failure:
            return frozenset(m.name for m in load_rubric().gpu_modules)
        return frozenset(p.name for p in self.parts if p.on_device)

    def scored(self, fractions: Mapping[str, float]) -> GpuCheckResult:
        """The check's line in the report. ``fractions``: for each module, the share of its exercise's
        core points earned (after any re-grade); each module's share of the points is fixed (the points
        over the modules counted) and earned in that proportion by a module that passed its device run."""
        if self.skipped:
            return GpuCheckResult.skipped(self.skipped)
        if self.failure:
            return GpuCheckResult(0.0, self.points, "failed", "unknown", f"the worker failed: {self.failure}")
        share = self.points / len(self.parts)
        lines, earned, failed = [], 0.0, False
        for part in self.parts:
            fraction = min(max(float(fractions.get(part.name, 0.0)), 0.0), 1.0)
            part = _as_judged(part, fraction)
            gain = share * fraction if part.verdict == "passed" else 0.0
            failed |= part.verdict == "failed"
            earned += gain
            # One line per module: an error's own line breaks (where it was raised) are folded into it.
            lines.append(" ".join(part.message.split()) + _share_note(gain, share, fraction, part.verdict))
        if all(p.verdict in ("absent", "left out") for p in self.parts):
            failed = True
            lines.insert(0, "none of the modules is there: nothing to run on the device" if all(
                p.verdict == "absent" for p in self.parts) else "no module can earn on the device here (each is not "
                                                                "there or fails all its core tests): nothing to run")
        status = ("simulated_" if self.device == SIMULATED else "") + ("failed" if failed else "passed")
        review = tuple(f"{p.name}: {d}" for p in self.parts for d in p.for_review)
        return GpuCheckResult(round(earned, 2), self.points, status, self.label, "\n".join(lines), review)


def _as_judged(part: PartResult, fraction: float) -> PartResult:
    """A module whose exercise's core tests all pass but whose CPU run here differs from the reference runs
    differently here than in its tests: it fails (a module that is wrong in its tests too is charged there)."""
    if part.verdict == "passed" and not part.reference_matched and fraction >= 1.0:
        return replace(part, verdict="failed", message=f"{part.name} does not match the reference on the CPU here, "
                                                       "though its exercise's core tests pass: it earns nothing here")
    return part


def _share_note(gain: float, share: float, fraction: float, verdict: str) -> str:
    """`` [3.33 of 3.33]``: what the module earned of its share, and why not all of it."""
    why = "" if verdict != "passed" or fraction >= 1.0 else (
        ": its exercise earns none of its core points, so none of its share" if fraction <= 0.0 else
        f": {fraction:.0%} of its exercise's core points are earned, and its share counts as much")
    return f" [{round(gain, 2):g} of {round(share, 2):g}{why}]"
