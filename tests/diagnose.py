"""Assertion helpers whose failure messages teach: what was called, what was expected, what came back.

Every helper raises ``AssertionError`` with a message that stands alone (shapes first, values
rounded to 4 decimals and truncated, the largest absolute difference) and, where a known mistake
explains the result, names it. Tests pass ``diagnoses``: ``(alternative_value, message)`` pairs;
when the result matches an alternative (a known wrong computation), its message is shown.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import torch

MAX_SHOWN = 36  # values shown per tensor in a message


# --- formatting -------------------------------------------------------------------------------------


def describe(obj: Any) -> str:
    """A short description of any returned object: tensors by shape/dtype, others by type."""
    if isinstance(obj, torch.Tensor):
        return f"a {obj.dtype} tensor of shape {tuple(obj.shape)}"
    if isinstance(obj, (tuple, list)):
        return f"a {type(obj).__name__} of {len(obj)} item(s): ({', '.join(describe(o) for o in obj[:3])})"
    return f"{type(obj).__name__} {obj!r:.80}"


def _num(v: float) -> str:
    return "-inf" if v == -float("inf") else "inf" if v == float("inf") else "nan" if v != v else f"{v:.4f}"


def _nested(x: Any) -> str:
    return f"[{', '.join(_nested(v) for v in x)}]" if isinstance(x, list) else _num(x)


def fmt(t: torch.Tensor) -> str:
    """Shape first, then the values rounded to 4 decimals: nested when small, else the first rows."""
    t = t.detach().to("cpu", torch.float64)
    if t.numel() <= MAX_SHOWN:
        return f"shape {tuple(t.shape)}: {_nested(t.tolist())}"
    if t.dim() == 1:
        return f"shape {tuple(t.shape)}: first {MAX_SHOWN} values [{', '.join(_num(v) for v in t[:MAX_SHOWN].tolist())}, ...]"
    rows = t.reshape(-1, t.shape[-1])
    n = max(1, MAX_SHOWN // rows.shape[1])
    shown = [[_num(v) for v in r[:MAX_SHOWN]] for r in rows[:n].tolist()]
    body = ", ".join(f"[{', '.join(r)}{', ...' if rows.shape[1] > MAX_SHOWN else ''}]" for r in shown)
    return f"shape {tuple(t.shape)}: first {len(shown)} of {rows.shape[0]} rows (last dim): [{body}, ...]"


def max_abs_diff(got: torch.Tensor, expected: torch.Tensor) -> float:
    """Largest |got - expected|, where equal infinities count as 0 and NaN as inf."""
    g, e = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    same = (g == e) | (torch.isnan(g) & torch.isnan(e))
    diff = (g - e).abs().masked_fill(same, 0.0)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


def is_close(got: Any, expected: torch.Tensor, atol: float, rtol: float = 0.0) -> bool:
    """Same shape and all elements within atol + rtol*|expected| (equal infinities are close)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        return False
    g, e = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    return bool(torch.isclose(g, e, atol=atol, rtol=rtol).all())


# --- the core assertion -----------------------------------------------------------------------------


def fail(call: str, *lines: str) -> None:
    raise AssertionError("\n".join([f"{call}:"] + [f"  {line}" for line in lines if line]))


def check_tensor(got: Any, *, call: str, shape: Sequence[int] | None = None, dtype: torch.dtype | None = None) -> None:
    """The result is a tensor (of this shape and dtype)."""
    want = "a tensor" + (f" of shape {tuple(shape)}" if shape is not None else "")
    if not isinstance(got, torch.Tensor):
        fail(call, f"returned {describe(got)}; expected {want}")
    if shape is not None and tuple(got.shape) != tuple(shape):
        hint = ""
        if len(shape) >= 2 and tuple(got.shape) == tuple(shape[:-2]) + (shape[-1], shape[-2]):
            hint = "the last two dimensions are swapped: looks transposed"
        elif got.numel() == torch.Size(shape).numel():
            hint = "same number of elements: a reshape/view with the wrong layout, or a missing squeeze/transpose?"
        fail(call, f"returned a tensor of shape {tuple(got.shape)}; expected shape {tuple(shape)}", hint)
    if dtype is not None and got.dtype != dtype:
        fail(call, f"returned a {got.dtype} tensor; expected {dtype} (keep the input's dtype: no hard-coded float32)")


def assert_close(
    got: Any,
    expected: torch.Tensor,
    *,
    call: str,
    atol: float,
    rtol: float = 0.0,
    diagnoses: Iterable[tuple[torch.Tensor, str]] = (),
    check_dtype: bool = True,
    note: str = "",
) -> None:
    """``got`` equals ``expected`` within ``atol + rtol * |expected|``, else a teaching message.

    diagnoses: ``(alternative, message)``; the message is shown if ``got`` matches ``alternative``
    (at the same tolerance, or 1e-4 if larger), i.e. the result is a known mistake.
    """
    check_tensor(got, call=call, shape=expected.shape, dtype=expected.dtype if check_dtype else None)
    if is_close(got, expected, atol, rtol):
        return
    hints = []
    g = got.detach()
    if torch.isnan(g).any() and not torch.isnan(expected).any():
        hints.append("NaN in the output: 0 × -inf (multiplying a masked -inf by 0), or a whole row of -inf before softmax?")
    if torch.isinf(expected).any() or torch.isinf(g).any():
        if not torch.equal(torch.isinf(g) & (g < 0), torch.isinf(expected) & (expected < 0)):
            hints.append(f"the -inf entries are not where expected (expected -inf at {int((torch.isinf(expected) & (expected < 0)).sum())} positions, got {int((torch.isinf(g) & (g < 0)).sum())})")
    tol = max(atol, 1e-4)
    for alternative, message in diagnoses:
        if is_close(got, alternative.to(expected.dtype), tol, rtol):
            hints.append(message)
    if expected.dim() >= 2 and expected.shape[-1] == expected.shape[-2]:
        swapped = expected.transpose(-2, -1)
        if not is_close(swapped, expected, tol) and is_close(got, swapped, tol):
            hints.append("matches the expected value transposed: looks transposed (rows and columns swapped)")
    fail(
        call,
        f"expected {fmt(expected)}",
        f"got      {fmt(got)}",
        f"largest absolute difference {max_abs_diff(got, expected):.3g} (tolerance: atol {atol:g}, rtol {rtol:g})",
        note,
        *[f"likely cause: {h}" for h in hints],
    )


# --- properties ---------------------------------------------------------------------------------------


def assert_rows_sum_to_one(got: torch.Tensor, *, call: str, dim: int = -1, atol: float = 1e-5, hint: str = "") -> None:
    check_tensor(got, call=call)
    sums = got.detach().to(torch.float64).sum(dim=dim)
    if torch.isnan(sums).any():
        fail(call, f"rows along dim {dim} contain NaN: {fmt(sums)}",
             "likely cause: NaN in the output: 0 × -inf, or a whole row of -inf before softmax?")
    if not torch.allclose(sums, torch.ones_like(sums), atol=atol, rtol=0):
        fail(call, f"rows along dim {dim} do not sum to 1: sums {fmt(sums)}", hint or "renormalize after masking / softmax over the last dim")


def assert_exactly_zero_above_diagonal(got: torch.Tensor, *, call: str) -> None:
    t = got.shape[-1]
    above = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    vals = got.detach()[..., above]
    if not (vals == 0).all():
        fail(call, f"entries above the diagonal (future tokens) must be exactly 0; got {fmt(vals)}",
             "mask before the softmax with -inf (or multiply by the 0/1 mask), not after renormalizing")


def assert_raises(exc: type[BaseException], fn: Callable[..., Any], *args: Any, call: str, why: str, **kwargs: Any) -> None:
    """``fn(*args)`` raises ``exc``; else say what happened instead."""
    try:
        result = fn(*args, **kwargs)
    except exc:
        return
    except Exception as other:  # noqa: BLE001 - reported
        fail(call, f"raised {type(other).__name__}({other}); expected {exc.__name__}", why)
    fail(call, f"returned {describe(result)}; expected it to raise {exc.__name__}", why)


def assert_unchanged(before: Sequence[torch.Tensor], after: Sequence[Any], *, call: str, names: Sequence[str]) -> None:
    """The arguments after the call (``impl.call_and_inputs``) equal copies taken before it."""
    for name, b, a in zip(names, before, after):
        if isinstance(b, torch.Tensor) and not torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)):
            fail(call, f"modified its argument {name!r} in place", f"before {fmt(b)}", f"after  {fmt(a)}",
                 "work on a new tensor: masked_fill (no underscore), x * mask, ... instead of masked_fill_ / x[...] = / +=")


def scale_diagnoses(fn: Callable[[float], torch.Tensor], d_k: int) -> list[tuple[torch.Tensor, str]]:
    """Alternatives for a wrong 1/√d_k: ``fn(s)`` recomputes the result with the scores multiplied by s
    (the right s is 1/√d_k)."""
    root = d_k**0.5
    out = [(fn(1.0), "no scaling: off by a factor √d_k in the scores (divide Q Kᵀ by √d_k before the softmax)")]
    if d_k > 1:
        out.append((fn(1.0 / d_k), f"divided by d_k = {d_k} instead of √d_k"))
        out.append((fn(root), "multiplied by √d_k instead of dividing"))
    return out


def load_reference_parameters(student: Any, reference: torch.nn.Module, *, call: str) -> None:
    """Load the reference module's PARAMETERS into the student's module (same names required).

    Buffers (the causal mask) are left as the student made them: a mask that is not a registered
    buffer is judged by its own test, not by every forward test.
    """
    params = {k: v.detach() for k, v in reference.named_parameters()}
    try:
        result = student.load_state_dict(params, strict=False)
    except RuntimeError as err:  # shape mismatch
        fail(call, f"could not load the reference's parameters: {str(err).strip()[:600]}",
             "W_query/W_key/W_value are nn.Linear(d_in, d_out) (weight shape (d_out, d_in)); out_proj nn.Linear(d_out, d_out)")
    missing, unexpected = (list(result[0]), list(result[1])) if result is not None else ([], [])
    student_params = set(dict(student.named_parameters()))
    missing = [k for k in missing if k in student_params]
    if missing or unexpected:
        fail(call, f"parameter names differ from the documents' layout: reference has {sorted(params)}",
             f"yours lacks {sorted(unexpected)}" if unexpected else "", f"yours has extra {sorted(missing)}" if missing else "")
