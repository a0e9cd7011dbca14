"""The checks behind every test of the kata, and the mistakes they recognise.

The public tests (``exercises/<group>/test_<module>.py``) and the grader's hidden tests use this one module, so a
mistake gets the same explanation in both. It holds no solution code and no expected values: those are in the
tests, taken from the documents (``exercises/documents/``) or computed there with plain torch ops. Every failed
check raises ``KataCheckFailed`` (an ``AssertionError``) with a message that stands alone::

    called causal_mask(4):
      expected shape (4, 4): [[1.0000, 0.0000, ...], ...]
      got      shape (4, 4): [[1.0000, 1.0000, ...], ...]
      largest absolute difference 1 (tolerance: atol 0.0001, rtol 0)
      differs: got is the expected value transposed (rows and columns swapped)

``assert_close(got, expected, diagnoses=[(alternative, message), ...])`` shows ``likely cause: message`` when
``got`` matches an alternative, a known wrong computation (``kata_mistakes.py``: written once, re-exported here).

(For the instructors: ``tests/kata_checks.py``, which the hidden tests import, is a symbolic link to
this file, so that the Gradescope bundle, which copies ``tests/`` but not ``exercises/``, carries it.)
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch

import kata_known
import kata_trace
from kata_known import creation_order  # noqa: F401 -- the tests import it from here
from kata_mistakes import (  # noqa: F401 -- every known mistake, re-exported: the tests import them from here
    BATCH_DOT_T, BIAS_NOT_REFUSED, BIAS_NOT_ZEROED, COPY_ALIASES, COPY_NOT_TRANSPOSED, COPY_REPLACES, CREATION_ORDER,
    DEVICE_MIX, DIM_IGNORED, DROPOUT_IN_EVAL, DROPOUT_NOT_APPLIED, GLOBAL_MAX, KEEP_PROB_SWAPPED, MASK_NOT_A_BUFFER,
    MASK_NOT_CUT, MASK_NOT_PERSISTENT, MERGE_BARE_RESHAPE, NAN_AT_P1, NOT_DIVISIBLE, NOT_RESCALED, NO_GRADIENT,
    NO_KEEPDIM, NO_MAX_SHIFT, NO_OUT_PROJ, NO_SOFTMAX, PARTIAL_COPY, P_NOT_CHECKED, QKV_BIAS_IGNORED, QKV_BIAS_NOT_USED,
    SHAPES_NOT_REFUSED, SIMPLE_NOT_SCALED, SPLIT_BARE_VIEW, TOO_MANY_TOKENS, UNMASKED, WHOLE_TENSOR,
    WRONG_DIM, no_scale, scale_diagnoses, scaled_by_d_out, SCALED_BY_D_IN, MASK_TRANSPOSED,
    NOT_RENORMALIZED, MASKED_WITH_ZEROS, DROPOUT_IGNORES_TRAINING, MASK_AFTER_SOFTMAX, KEYS_RESHAPED, CONCAT_ON_TOKENS,
    KEYS_TIMES_QUERIES, DIVIDED_BY_P, RENORMALIZED_BY_COLUMNS, TRIL_DIAGONAL_1, SCALED_AFTER_SOFTMAX, HEADS_INTERLEAVED,
    MERGED_IN_WRONG_ORDER, RANDN_FOR_RAND, DROPOUT_BEFORE_SOFTMAX, ONE_HEAD_REPEATED, MASK_CHANGED_BY_FORWARD,
    P1_WHEN_NOT_TRAINING, GPT2_WITH_DROPOUT, AXES_0_1_SWAPPED, TOKENS_FROM_BATCH, differing, error_of, mask_errors, reshaped,
    too_many_tokens, transpose_errors, OUT_PROJ_WITHOUT_BIAS, not_divisible, GPT2_WITH_QKV_BIAS,
    MASK_COMPLEMENT, TENSOR_NOT_A_BUFFER, MODULES_IN_A_PLAIN_LIST, LAYERS_RENAMED, MASK_BUFFER_COMPLEMENT, gradient_causes, together)

MAX_SHOWN = 36  # values shown per tensor in a message


class KataCheckFailed(AssertionError):
    """A check failed; the message says what was called, what came back, what was expected."""


# --- the documents' input ---------------------------------------------------------------------------

# "Your journey starts with one step": exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1
# (paths in the kata are written relative to the repository root).
JOURNEY = [
    [0.43, 0.15, 0.89],  # Your
    [0.55, 0.87, 0.66],  # journey
    [0.57, 0.85, 0.64],  # starts
    [0.22, 0.58, 0.33],  # with
    [0.77, 0.25, 0.10],  # one
    [0.05, 0.80, 0.55],  # step
]


def journey_inputs() -> torch.Tensor:
    """A fresh (6, 3) tensor of the documents' six-token input."""
    return torch.tensor(JOURNEY)


def journey_batch() -> torch.Tensor:
    """The documents' ``torch.stack((inputs, inputs), dim=0)``: shape (2, 6, 3), two identical rows."""
    return torch.stack((journey_inputs(), journey_inputs()), dim=0)


# --- importing the module under test ---------------------------------------------------------------


def load(module: str):
    """``import <module>``; a module that cannot be imported fails only the tests that use it, in one line."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(module)
    except SyntaxError as err:
        where = f"{Path(err.filename).name}, line {err.lineno}" if err.filename else "unknown place"
        raise KataCheckFailed(f"cannot import {module}:\n  likely cause: SyntaxError in {where}: {err.msg}") from None
    except Exception as err:  # noqa: BLE001 - ImportError, NameError, ... raised while importing
        raise KataCheckFailed(f"cannot import {module}:\n  likely cause: {type(err).__name__} while importing it: {err}") from None


def assert_does_its_own_work(module: str) -> None:
    """None of the kinds of operation that would do the module's work for it (``exercises/shortcuts.json``) runs
    inside its functions and classes, run on small inputs under the trace the grader uses (``kata_trace``)."""
    __tracebackhide__ = True
    forbidden = kata_trace.table().get(module, {})
    found = kata_trace.forbidden_runs(load(module), forbidden)  # a stub's NotImplementedError: "not written yet"
    if found:
        fail(f"{', '.join(forbidden)} of {module} under the trace of the operations that ran", *found,
             "that operation does the work this exercise asks you to write yourself (the grader counts nothing for "
             "the tests in which it runs): write it with plain tensor operations")


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
    """Same shape and all elements within atol + rtol*|expected| (equal infinities are close, and NaN where the
    expected value, a result of the student's own, has NaN too: what differs is said where it is)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        return False
    g, e = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    return bool(torch.isclose(g, e, atol=atol, rtol=rtol, equal_nan=True).all())


# --- the core assertion -----------------------------------------------------------------------------


def fail(call: str, *lines: str) -> None:
    """Raise KataCheckFailed: ``called <call>:`` then one indented line per non-empty item."""
    __tracebackhide__ = True
    raise KataCheckFailed("\n".join([f"called {call}:"] + [f"  {line}" for line in lines if line]))


def check_tensor(got: Any, *, call: str, shape: Sequence[int] | None = None, dtype: torch.dtype | None = None,
                 hint: str = "", causes: Sequence[str] = ()) -> None:
    """The result is a tensor (of this shape and dtype). ``hint``: a cause the caller has shown; ``causes``:
    known mistakes reproduced (kata_known); without either, what differs is described, no cause named."""
    __tracebackhide__ = True
    want = "a tensor" + (f" of shape {tuple(shape)}" if shape is not None else "")
    shown = [f"likely cause: {c}" for c in [*causes, hint] if c]
    if not isinstance(got, torch.Tensor):
        fail(call, f"returned {describe(got)}; expected {want}", *shown)
    if shape is not None and tuple(got.shape) != tuple(shape):
        differs = ""
        if len(shape) >= 2 and tuple(got.shape) == tuple(shape[:-2]) + (shape[-1], shape[-2]):
            differs = "differs: the last two dimensions are swapped"
        elif got.numel() == torch.Size(shape).numel():
            differs = "differs: the same number of elements in another layout"
        fail(call, f"returned a tensor of shape {tuple(got.shape)}; expected shape {tuple(shape)}",
             *(shown or [differs]))
    if dtype is not None and got.dtype != dtype:
        fail(call, f"returned a {got.dtype} tensor; expected {dtype}",
             "likely cause: it did not keep the input's dtype (keep the input's dtype: no hard-coded float32, no tensor "
             "made without dtype=)")


def assert_close(got: Any, expected: torch.Tensor, *, call: str, atol: float, rtol: float = 0.0,
                 diagnoses: Iterable[tuple[torch.Tensor, str]] = (), check_dtype: bool = True, note: str = "",
                 shown: str | None = None) -> None:
    """``got`` equals ``expected`` within ``atol + rtol * |expected|``, else a teaching message.

    diagnoses: ``(alternative, message)``; the message is shown if ``got`` matches ``alternative``
    (at the same tolerance, or 1e-4 if larger), i.e. the result is a known mistake.
    note: always shown on failure. shown: a cause an exact check of the student's objects showed
    (``creation_order``), named on failure. Known mistakes reproduced are named too (kata_known.py); with
    no cause at all, what differs is said instead.
    """
    __tracebackhide__ = True
    kata_known.record(call, got)
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        check_tensor(got, call=call, shape=expected.shape, causes=[*kata_known.causes(call, got, atol, rtol), *reshaped(got, diagnoses)])
    check_tensor(got, call=call, shape=expected.shape, dtype=expected.dtype if check_dtype else None)
    if is_close(got, expected, atol, rtol):
        return  # known mistakes are looked for only now: most results are right
    tol = max(atol, 1e-4)
    causes = kata_known.causes(call, got, atol, rtol)  # said together: each reproduces got (kata_mistakes.together)
    for alternative, message in diagnoses:  # an alternative that equals the expected value shows nothing
        if (alternative is not None and message not in causes and is_close(got, alternative.to(expected.dtype), tol, rtol)
                and not is_close(alternative.to(expected.dtype), expected, atol, rtol)):
            causes.append(message)
    transposed = expected.dim() >= 2 and expected.shape[-1] == expected.shape[-2] and not is_close(
        expected.transpose(-2, -1), expected, tol) and is_close(got, expected.transpose(-2, -1), tol)
    fail(
        call,
        f"expected {fmt(expected)}",
        f"got      {fmt(got)}",
        f"largest absolute difference {max_abs_diff(got, expected):.3g} (tolerance: atol {atol:g}, rtol {rtol:g})",
        note,
        *[f"likely cause: {c}" for c in [*together(causes), *([shown] if shown else [])]],
        *("differs: got is the expected value transposed (rows and columns swapped)" for _ in range(transposed)),
        *([] if causes or shown or transposed else [f"differs: {d}" for d in kata_known.differences(got.detach(), expected)]),
    )


def call_checked(fn: Callable[..., Any], *args: Any, call: str, errors: Sequence[Any] = (), **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; an exception whose text contains one of ``errors``' patterns fails the
    check, naming the likely cause: ``(pattern, message)`` pairs (the pattern: the very error text a known
    mistake raises on the same shapes, ``error_of``), or a function ``(fn, *args) -> pairs``, asked only on an
    error, that reads the student's objects (``mask_errors``). Any other exception (among them the stubs'
    NotImplementedError) passes through unchanged."""
    __tracebackhide__ = True
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - matched below, else re-raised
        kata_known.record(call, err)
        kata_known.mark_recorded(err, call)
        text = f"{type(err).__name__}: {err}"
        pairs = [pair for e in errors for pair in (e(fn, *args) if callable(e) else [e])]
        causes = kata_known.causes(call, err) or list(dict.fromkeys(m for pattern, m in pairs if pattern and pattern in text))
        if not causes:
            raise
        fail(call, f"raised {text.strip()[:400]}", *[f"likely cause: {c}" for c in causes])


def call_on_any_device(fn: Callable[..., Any], *args: Any, call: str, errors: Sequence[tuple[str, str]] = ()) -> Any:
    """``fn(*args)`` on the CPU, then again on a GPU, simulated (``kata_gpu.py``: tensors that say
    ``cuda:0``, hold real values and follow CUDA's rules on devices), with ``fn`` (when it is a module) and
    the tensors among ``args`` moved there. Fails where the GPU run raises, or where its result is not on
    the GPU or differs from the CPU's; the message names the tensor that stayed on the CPU and the line
    that made it. Returns the CPU's result.
    """
    __tracebackhide__ = True
    import kata_gpu  # the simulated GPU, the same file the grader's worker runs

    got = call_checked(fn, *args, call=call, errors=errors)
    where = f"{call} on a GPU (simulated)"
    with torch.no_grad(), kata_gpu.simulated_gpu() as gpu:
        module = fn if isinstance(fn, torch.nn.Module) else None
        if module is not None:
            for prefix, sub in module.named_modules():
                for name, value in vars(sub).items():
                    attribute = f"self.{prefix + '.' if prefix else ''}{name}"
                    if isinstance(value, torch.Tensor):
                        gpu.name(value, f"{attribute}, a plain attribute (not a buffer)")
                    for i, item in enumerate(value if isinstance(value, (list, tuple)) else []):  # .to() misses them
                        for param_name, param in (item.named_parameters() if isinstance(item, torch.nn.Module) else []):
                            gpu.name(param, f"{attribute}[{i}].{param_name}, in a plain list (not an nn.ModuleList)")
            module.to(kata_gpu.DEVICE)
        try:
            out = fn(*[a.to(kata_gpu.DEVICE) if isinstance(a, torch.Tensor) else a for a in args])
        except Exception as err:  # noqa: BLE001 - explained below
            text = f"{type(err).__name__}: {err}"
            plain = re.search(r"self\.([\w.]*), a plain attribute", text)  # the mask is blamed only by its name
            cause = (((MASK_NOT_A_BUFFER if "mask" in plain.group(1) else TENSOR_NOT_A_BUFFER) if plain else "")
                     or (MODULES_IN_A_PLAIN_LIST if "in a plain list" in text else "")  # a tensor made in the run:
                     or (DEVICE_MIX if "same device" in text and "made at" in text else ""))  # without device=
            fail(where, f"raised {text.strip()[:600]}", *([f"likely cause: {cause}"] if cause else []))
        finally:
            if module is not None:
                module.to("cpu")
        device = out.device if isinstance(out, torch.Tensor) else None
        out = kata_gpu.plain(out)
    if device is not None and device.type != "cuda":
        fail(where, f"returned a tensor on {device}; expected it on cuda:0, where its input is")
    if isinstance(got, torch.Tensor):  # the same kernels compute both: equal, but for the order of sums
        assert_close(out, got, atol=1e-6, call=where + ", compared with the CPU's result")
    return got


# --- properties ---------------------------------------------------------------------------------------


def assert_rows_sum_to_one(got: torch.Tensor, *, call: str, dim: int = -1, atol: float = 1e-5) -> None:
    """Every row along ``dim`` sums to 1; a known mistake that gives this result is named (kata_known)."""
    __tracebackhide__ = True
    where = f"{call} [sums along dim {dim}]"
    kata_known.record(where, got)
    if not isinstance(got, torch.Tensor):
        check_tensor(got, call=call, causes=kata_known.causes(where, got, atol))
    sums = got.detach().to(torch.float64).sum(dim=dim)
    if torch.isnan(sums).any() or not torch.allclose(sums, torch.ones_like(sums), atol=atol, rtol=0):
        causes = kata_known.causes(where, got, atol)
        fail(call, f"rows along dim {dim} do not sum to 1: sums {fmt(sums)}", *[f"likely cause: {c}" for c in causes],
             "" if causes or not torch.isnan(sums).any() else "differs: NaN in the rows (0 × -inf, or a row all -inf "
             "before a softmax, gives NaN)")


def assert_softmax_has_no_nan(got: Any, scores: torch.Tensor, *, dim: int, call: str) -> None:
    """A softmax of ``scores`` (no row all -inf) along ``dim`` has no NaN; else name the cause where the NaN
    are exactly where a known mistake puts them: the maximum of the whole tensor subtracted (GLOBAL_MAX), or
    no maximum subtracted (NO_MAX_SHIFT), or the max along dim without keepdim (NO_KEEPDIM)."""
    __tracebackhide__ = True
    if not isinstance(got, torch.Tensor) or not torch.isnan(got).any():
        return
    causes = []
    if tuple(got.shape) == tuple(scores.shape):
        for shift, cause in ((scores.max(), GLOBAL_MAX), (0.0, NO_MAX_SHIFT), (scores.amax(dim), NO_KEEPDIM)):
            exp = torch.exp(scores - shift)
            if torch.equal(torch.isnan(got), torch.isnan(exp / exp.sum(dim=dim, keepdim=True))):
                causes.append(cause)
    fail(call, f"returned NaN in {int(torch.isnan(got).sum())} of {got.numel()} places: {fmt(got)}",
         *[f"likely cause: {c}" for c in causes[:1]])


def assert_exactly_zero_above_diagonal(got: torch.Tensor, *, call: str) -> None:
    __tracebackhide__ = True
    t = got.shape[-1]
    above = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    vals = got.detach()[..., above]
    if not (vals == 0).all():
        fail(call, f"entries above the diagonal (future tokens) must be exactly 0; got {fmt(vals)}",
             "mask before the softmax with -inf (or multiply by the 0/1 mask), not after renormalizing")


def assert_raises(exc: type[BaseException], fn: Callable[..., Any], *args: Any, call: str,
                  why: str | Callable[[BaseException | None], str], **kwargs: Any) -> None:
    """``fn(*args)`` raises ``exc``; else say what happened instead, and why: ``why``, or ``why(the error raised
    instead, or None)`` when the cause is read from the student's error and objects (asked only then; "" names none)."""
    __tracebackhide__ = True
    try:
        result = fn(*args, **kwargs)
    except exc:
        return
    except NotImplementedError:
        raise
    except Exception as other:  # noqa: BLE001 - reported
        fail(call, f"raised {type(other).__name__}({str(other)[:300]}); expected {exc.__name__}", _likely(why, other))
    fail(call, f"returned {describe(result)}; expected it to raise {exc.__name__}", _likely(why, None))


def _likely(why: str | Callable[[BaseException | None], str], raised: BaseException | None) -> str:
    cause = why(raised) if callable(why) else why
    return f"likely cause: {cause}" if cause else ""


def assert_unchanged(before: Sequence[torch.Tensor], after: Sequence[Any], *, call: str, names: Sequence[str]) -> None:
    """The arguments after the call equal copies taken before it."""
    __tracebackhide__ = True
    for name, b, a in zip(names, before, after):
        if isinstance(b, torch.Tensor) and not torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)):
            fail(call, f"modified its argument {name!r} in place", f"before {fmt(b)}", f"after  {fmt(a)}",
                 f"likely cause: an in-place operation on {name!r}: work on a new tensor: masked_fill (no underscore), "
                 "x * mask, ... instead of masked_fill_ / x[...] = / +=")


def call_in_float64(fn: Callable[..., Any], *args: Any, call: str, shapes: Sequence[Sequence[int]],
                    unchanged: Sequence[str] = (), any_float: bool = False) -> Any:
    """``fn(*args)`` with float64 tensors: every tensor it returns (one per entry of ``shapes``; a tuple for
    several) has its shape and is float64 (float32 too with ``any_float``); the arguments named in
    ``unchanged`` (the first ``len(unchanged)`` of ``args``) are not modified in place."""
    __tracebackhide__ = True
    before = [a.clone() for a in args[:len(unchanged)]]
    got = fn(*args)
    assert_unchanged(before, args[:len(unchanged)], call=call, names=unchanged)
    results = tuple(got) if len(shapes) > 1 and isinstance(got, (tuple, list)) else (got,)
    if len(results) != len(shapes):
        fail(call, f"returned {describe(got)}; expected {len(shapes)} tensors")
    for result, shape in zip(results, shapes):
        check_tensor(result, call=call, shape=shape, dtype=None if any_float else torch.float64)
        if any_float and result.dtype not in (torch.float32, torch.float64):
            fail(call, f"returned a {result.dtype} tensor; expected torch.float64 (or float32)")
    return got


def assert_gradients_reach_every_parameter(module: Any, x: torch.Tensor, *, call: str,
                                           errors: Sequence[tuple[str, str]] = ()) -> None:
    """``module(x).sum().backward()`` gives every parameter of ``module`` a gradient (``errors``: as call_checked's)."""
    __tracebackhide__ = True
    module.zero_grad(set_to_none=True)
    out = call_checked(module, x, call=call, errors=errors)  # no graph: the student's parameters say why (premises)
    call_checked(lambda: out.sum().backward(), call=call, errors=[("not require grad", c) for c in gradient_causes(module, out)])
    missing = sorted(name for name, p in module.named_parameters() if p.grad is None)
    if missing:
        unused = [name for name in missing if not kata_known.output_depends_on(module, x, name)]
        fail(call, f"no gradient reached {missing}", f"likely cause: forward does not use {unused} (changing them changes "
             "nothing): apply every layer you create" if unused else "",
             *[f"likely cause: {c}" for c in gradient_causes(module, None, [n for n in missing if n not in unused])])


def assert_mask_buffer(module: Any, expected: torch.Tensor | None, *, call: str,
                       diagnoses: Iterable[tuple[torch.Tensor, str]] = ()) -> None:
    """``module`` keeps its causal mask as a registered, persistent buffer named 'mask' (equal to
    ``expected``, unless None: then only where it lives is checked, what a device run shows).

    Works on a real module and on the grader's remote one (only ``state_dict``, ``named_buffers``,
    ``named_parameters`` and ``.to`` are used)."""
    __tracebackhide__ = True
    sd = module.state_dict()
    if "mask" in dict(module.named_parameters()):
        fail(call, "mask is an nn.Parameter: it is not trained; register it with self.register_buffer('mask', ...)")
    if "mask" not in sd:
        if "mask" in dict(module.named_buffers()):
            fail(call, f"state_dict has no 'mask' (keys: {sorted(sd)}), but named_buffers() has one",
                 f"likely cause: {MASK_NOT_PERSISTENT}")
        fail(call, f"state_dict has no 'mask' (keys: {sorted(sd)})", f"likely cause: {MASK_NOT_A_BUFFER}")
    if expected is not None:
        assert_close(sd["mask"], expected, atol=0, check_dtype=False, call=call + ".state_dict()['mask']",
                     diagnoses=diagnoses)
    moved = module.to(torch.float64)
    if moved.mask.is_floating_point() and moved.mask.dtype != torch.float64:  # .to(dtype) leaves a bool mask bool
        fail(call + ".to(torch.float64).mask.dtype", f"is {moved.mask.dtype}; a registered buffer follows .to()",
             f"likely cause: {MASK_NOT_A_BUFFER}")


def assert_qkv_biases(module: Any, qkv_bias: bool, *, call: str) -> None:
    """``module.W_query``, ``W_key`` and ``W_value`` have a bias exactly when ``qkv_bias`` (QKV_BIAS_NOT_USED otherwise)."""
    __tracebackhide__ = True
    names = sorted(name for name, _ in module.named_parameters())
    wanted = [f"{n}.bias" for n in ("W_query", "W_key", "W_value")]
    wrong = [b for b in wanted if (b in names) != qkv_bias]
    if wrong and not all(f"{n}.weight" in names for n in ("W_query", "W_key", "W_value")):  # qkv_bias not blamed
        fail(call, f"returned {names}", "expected the nn.Linear layers W_query, W_key and W_value",
             f"likely cause: {LAYERS_RENAMED}")
    if wrong:
        fail(call, f"returned {names}", f"expected {'a bias' if qkv_bias else 'no bias'} for W_query, W_key and W_value "
             f"({'missing' if qkv_bias else 'unexpected'}: {wrong})", f"likely cause: {QKV_BIAS_NOT_USED}")
