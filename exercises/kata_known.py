"""What a failed check can say about a result: the known mistake it reproduces, else what differs.

Besides the known results, two exact checks of the student's objects: ``creation_order`` (the order the
layers are registered in, which a seeded test's weights depend on) and ``output_depends_on`` (whether a
parameter without a gradient is used at all).

The project keeps a library of realistic mistakes, each a small patch to the reference solution with
the cause a student should read (``tests/mutants/``: not in the students' repository, which holds no
answer). Every library mistake was run through these tests once, and what each check of a test was
given (``got``) is kept, for the mistakes that change it, in ``known_results.json`` beside this file
(written by ``python -m grader.authoring.known_results``; CI checks that it is current). When a check
fails, ``causes()`` looks for a known mistake whose result on this very call equals yours (to the
check's tolerance, never tighter than another CPU's float noise, same shape and dtype; for an error: the
same error text): that mistake is then the likely cause. No match, no cause: the check says what differs instead (``differences()``).

A result is found by its test and call (``test_causal_attention.py::test_...::CausalAttention(...)``), so
the inputs are the test's own: every test starts from the same seed (``exercises/conftest.py``).

``KATA_RECORD_RESULTS=FILE`` (set only by the library's runs) makes every check append what it was
given to FILE, one JSON line each.
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

import torch

import kata_mistakes

RECORD_ENV = "KATA_RECORD_RESULTS"
RAISED = "raised"  # the "call" under which an error that escaped a test is kept (tests/conftest.py)
DATA_FILE = Path(os.path.abspath(__file__)).parent / "known_results.json"  # beside the checks: exercises/ or tests/
MAX_VALUES = 4096  # larger results are not kept (nor matched)
# Float noise. Another CPU sums in another order (AMD's and Intel's vector units, MKL's code paths for each),
# which moves a float32 result by a few units in the last place of the values summed: up to 8e-7 times the
# typical size of a result's values, measured over the library with ATen's and MKL's portable code paths. So a
# known result is matched within the check's own tolerance widened by FLOAT_NOISE times its median size (and
# its own size), and by at least NOISE_ATOL: the same causes are named on every CPU. Known results are kept,
# and checked to be current, at this least tolerance (grader/authoring/known_results.py).
FLOAT_NOISE, NOISE_ATOL = 1e-5, 1e-6


def key(call: str) -> str | None:
    """``file.py::test_name::call`` for the test running now, or None outside pytest."""
    current = os.environ.get("PYTEST_CURRENT_TEST")
    if not current:
        return None
    test = current.rsplit(" (", 1)[0].split("/")[-1]
    return f"{test}::{call}"


def encode(value: Any) -> dict | None:
    """A result as plain JSON: a tensor by dtype, shape and values; an exception by its text; None if too big."""
    if isinstance(value, BaseException):  # its type and first line: the grader's copy adds where it was raised
        return {"error": f"{type(value).__name__}: {str(value).splitlines()[0] if str(value) else ''}"[:1000]}
    if not isinstance(value, torch.Tensor) or value.numel() > MAX_VALUES or value.is_complex():
        return None
    flat = value.detach().to("cpu").reshape(-1).tolist()
    values = [v if isinstance(v, (bool, int)) or math.isfinite(v) else str(v) for v in flat]
    return {"dtype": str(value.dtype), "shape": list(value.shape), "values": values}


def record(call: str, value: Any) -> None:
    """Append what a check was given, under its test and call (only in the library's runs)."""
    path, where = os.environ.get(RECORD_ENV), key(call)
    if not path or where is None:
        return
    encoded = encode(value)
    if encoded is not None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": where, "got": encoded}) + "\n")


@functools.lru_cache(maxsize=1)
def _known() -> dict[str, list[dict]]:
    try:
        return json.loads(DATA_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _values(result: dict) -> torch.Tensor:
    return torch.tensor([float(v) for v in result["values"]], dtype=torch.float64).reshape(result["shape"])


def same(got: Any, known: dict, atol: float = 0.0, rtol: float = 0.0) -> bool:
    """Whether ``got`` (a result, or one as :func:`encode` writes it) is the known result: the same error
    text, or a tensor of the same dtype and shape within ``atol + rtol * |known|`` widened by FLOAT_NOISE."""
    if isinstance(got, dict):  # two records compared (grader/authoring/known_results.py: one run with another)
        if "error" in got or "error" in known or (got["dtype"], got["shape"]) != (known["dtype"], known["shape"]):
            return got == known
        got = _values(got)
    elif "error" in known:
        return isinstance(got, BaseException) and encode(got) == known
    elif not isinstance(got, torch.Tensor) or str(got.dtype) != known["dtype"] or list(got.shape) != known["shape"]:
        return False
    values = _values(known)
    finite = values[torch.isfinite(values)].abs()
    scale = float(finite.median()) if finite.numel() else 0.0
    return bool(torch.isclose(got.detach().to("cpu", torch.float64), values, atol=max(atol, NOISE_ATOL) + FLOAT_NOISE * scale,
                              rtol=rtol + FLOAT_NOISE, equal_nan=True).all())


def mark_recorded(error: BaseException, call: str | None = None) -> None:
    """Mark an error a check has already recorded and looked up under its own call (``call_checked``): if it
    escapes the test, ``name_the_error`` leaves it alone, so that what is recorded never depends on the
    known results of the day; its report names the call (kata_report.py)."""
    try:
        error.kata_recorded = True  # type: ignore[attr-defined]
        error.kata_call = call  # type: ignore[attr-defined]
    except AttributeError:  # an exception type without a __dict__
        pass


def name_the_error(outcome: Any) -> None:
    """In a ``pytest_runtest_call`` hook wrapper (the conftest files): an error that escaped the test (the
    student's code raised it) is recorded and, where a known mistake raises the very same one in this test,
    replaced by an AssertionError with its text and the ``likely cause:`` line. A failed check, a stub and
    the grader's own errors (a timeout, a dead worker) are left as they are."""
    error = outcome.excinfo[1] if outcome.excinfo else None
    if (error is None or isinstance(error, (AssertionError, NotImplementedError)) or getattr(error, "kata_recorded", False)
            or type(error).__module__.startswith("grader")):
        return
    record(RAISED, error)
    found = causes(RAISED, error)
    if found:
        named = AssertionError("\n".join([f"{type(error).__name__}: {error}", *(f"  likely cause: {c}" for c in found)]))
        named.kata_error = error  # type: ignore[attr-defined]  # its report shows the student's line (kata_report.py)
        outcome.force_exception(named)


def causes(call: str, got: Any, atol: float = 1e-4, rtol: float = 0.0) -> list[str]:
    """The causes of the known mistakes whose result on this call equals ``got``; [] when none does."""
    where = key(call)
    found: list[str] = []
    for known in _known().get(where, []) if where else []:
        if known["cause"] not in found and same(got, known["got"], atol, rtol):
            found.append(known["cause"])
    return found


def differences(got: torch.Tensor, expected: torch.Tensor) -> list[str]:
    """What differs between two tensors of one shape, named without guessing a cause: NaN, where the -inf
    are, which rows differ, a constant ratio."""
    found = []
    g, e = got.to(torch.float64), expected.to(torch.float64)
    if torch.isnan(g).any() and not torch.isnan(e).any():
        found.append(f"NaN in {int(torch.isnan(g).sum())} of {g.numel()} places (0 × -inf, or a row all -inf before "
                     "a softmax, gives NaN)")
    neg_g, neg_e = torch.isinf(g) & (g < 0), torch.isinf(e) & (e < 0)
    if not torch.equal(neg_g, neg_e):
        found.append(f"the -inf entries: expected at {int(neg_e.sum())} positions, got at {int(neg_g.sum())}")
    if g.dim() >= 2 and not found:
        rows = ~torch.isclose(g, e, atol=1e-4, equal_nan=True).reshape(-1, g.shape[-1]).all(dim=-1)
        if 0 < int(rows.sum()) < rows.numel():
            found.append(f"rows (last dim) that differ: {int(rows.sum())} of {rows.numel()}, the first at row "
                         f"{int(rows.nonzero()[0])} (in the flattened leading dims)")
    both = torch.isfinite(g) & torch.isfinite(e)
    finite = both & (e.abs() > 1e-6)
    alike = torch.equal(g[~both].nan_to_num(), e[~both].nan_to_num())  # NaN and infinities where expected has them
    if not found and finite.any() and alike:  # a factor is said only where it holds on every element, zeros too
        ratio = float((g[finite] / e[finite])[0])
        if abs(ratio - 1) > 1e-3 and torch.allclose(g[both], ratio * e[both], rtol=1e-3, atol=1e-6):
            found.append(f"got = expected × {ratio:.4g} everywhere: a constant factor")
        elif torch.equal(g[both].abs() > 1e-6, ~(e[both].abs() > 1e-6)):
            found.append("got is non-zero exactly where expected is zero, and zero where it is not: the complement")
    return found


# The documents create W_query, W_key, W_value, then out_proj: a seeded module draws its weights in that order.
DOCUMENTS_ORDER = ("W_query", "W_key", "W_value", "out_proj")


def creation_order(module: Any) -> str | None:
    """CREATION_ORDER when ``module`` (or a submodule) registers its query/key/value/out_proj layers in another
    order than the documents (what a seeded test's weights depend on), else None. Read from the module's
    parameter names, in the order ``named_parameters`` gives them (the order of registration)."""
    try:
        names = [name for name, _ in module.named_parameters()]
    except Exception:  # noqa: BLE001 - a module that cannot say: no cause shown
        return None
    seen: dict[str, list[str]] = {}  # submodule path -> its layers in registration order
    for name in names:
        parts = name.split(".")  # "heads.0.W_query.weight", or "W_query" (a Parameter of its own)
        layer, prefix = (parts[-2], ".".join(parts[:-2])) if len(parts) >= 2 else (parts[0], "")
        if layer in DOCUMENTS_ORDER and layer not in seen.setdefault(prefix, []):
            seen[prefix].append(layer)
    wrong = any(order != [n for n in DOCUMENTS_ORDER if n in order] for order in seen.values())
    return kata_mistakes.CREATION_ORDER if wrong else None


def output_depends_on(module: Any, x: torch.Tensor, name: str) -> bool:
    """Whether changing the parameter ``name`` changes ``module(x)`` (an exact check: no gradient asked); a
    module that cannot be run twice so counts as depending on it (no cause is named then)."""
    param = dict(module.named_parameters())[name]
    with torch.no_grad():
        try:
            before = module(x).clone()
            param.add_(1.0)
            try:
                return not torch.equal(module(x), before)
            finally:
                param.sub_(1.0)
        except Exception:  # noqa: BLE001 - the student's code: its failure is another test's to report
            return True
