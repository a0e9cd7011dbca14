"""What the hidden tests share when they compare a student's result with the reference's.

For the attention modules (CausalAttention, MultiHeadAttention, the wrapper): the student's module
built next to the reference's with the reference's parameters loaded (``pair``, ``load_reference_parameters``), a forward pass that
names a mask not cut to T x T (``forward``), the tolerances of those comparisons (``TOLERANCE``), the
documents' seed-123 output, the gradients and the dropout compared with the reference's, and a shorter
input before a longer one through one module (``assert_forwards_leave_the_mask``). For the
simple-attention functions: the tolerance of a result the documents' own loops compute in float32.

Like ``kata_seam`` and ``reference``, imported by its bare name from the hidden tests (pytest puts
``tests/`` on ``sys.path``); it runs in the test process only, never in a student's.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from kata_checks import (DROPOUT_NOT_APPLIED, MASK_CHANGED_BY_FORWARD, creation_order, mask_errors, assert_close, assert_qkv_biases,
                      call_checked, describe, fail)
from kata_seam import backward_with
from reference import printed, seed_reference

# float64: float32 precision (rtol 1e-7 plus atol 1e-7), not 1e-10: the documents' notebook scales by
# torch.sqrt(torch.tensor(d_k)), √d_k rounded to float32; a result that is not float64 fails the dtype check.
TOLERANCE = {torch.float32: {"atol": 1e-5}, torch.float64: {"atol": 1e-7, "rtol": 1e-7}}
# PyTorch's errors when the student's mask meets T x T scores uncut or cut to the batch size, as call_checked's
# errors: asked only when the module raised, and named only when its own mask's shape gives that very error.
MASK_NOT_CUT_ERRORS = [mask_errors]
Diagnoses = Callable[[torch.nn.Module, torch.Tensor], list]  # (reference, x) -> [(alternative, message), ...]


def float32_loop_tolerance(got, dtype) -> dict:
    """float32 tolerance for a float32 result, even of a float64 input: the documents' loops fill a
    ``torch.empty`` / ``torch.zeros``, float32 whatever the input; a float64 result is held to 1e-10."""
    if dtype == torch.float64 and not (isinstance(got, torch.Tensor) and got.dtype == torch.float32):
        return {"atol": 1e-10}
    return {"atol": 1e-5, "check_dtype": False}


def load_reference_parameters(student: Any, reference: torch.nn.Module, *, call: str) -> None:
    """Load the reference module's PARAMETERS into the student's module (same names required).

    Buffers (the causal mask) are left as the student made them: a mask that is not a registered
    buffer is judged by its own test, not by every forward test.
    """
    __tracebackhide__ = True
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


def pair(impl, ref_module, name: str, *args, seed: int = 0, call: str = "", **kwargs):
    """(student, reference): ``name(*args, **kwargs)`` built by the implementation and, after
    ``seed_reference(seed)``, by the reference, whose parameters are loaded into the student's module
    (buffers stay the student's: the mask is judged by its own test). With ``qkv_bias=True`` the
    student's biases are checked first, so that a module ignoring the keyword is named as such."""
    call = call or f"{name}{args}"
    student = getattr(impl, name)(*args, **kwargs)
    if kwargs.get("qkv_bias"):
        assert_qkv_biases(student, True, call=call + ".named_parameters()")
    seed_reference(seed)
    reference = getattr(ref_module, name)(*args, **kwargs)
    load_reference_parameters(student, reference, call=call)
    return student, reference


def forward(student, x: torch.Tensor, call: str):
    """student(x); PyTorch's size-mismatch error of a mask not cut to T x T is named."""
    return call_checked(student, x, call=call, errors=MASK_NOT_CUT_ERRORS)


def assert_forward_matches(student, reference, x: torch.Tensor, call: str, diagnoses: Diagnoses,
                           dtype: torch.dtype = torch.float32) -> None:
    """student(x) is reference(x) at ``TOLERANCE[dtype]``; the mistakes ``diagnoses`` recomputes are named."""
    with torch.no_grad():
        expected = reference(x)
        diag = diagnoses(reference, x)
    assert_close(forward(student, x, call), expected, **TOLERANCE[dtype], diagnoses=diag, call=call)


def _mask_values(module) -> torch.Tensor | None:
    """A copy of the module's ``mask`` as float values (None when it keeps none: nothing a forward could change)."""
    mask = getattr(module, "mask", None)
    return mask.detach().clone().float() if isinstance(mask, torch.Tensor) else None


def assert_forwards_leave_the_mask(student, reference, x: torch.Tensor, lengths: tuple[int, ...], call: str,
                                   diagnoses: Diagnoses) -> None:
    """One module called on ``x[:, :t]`` for each t of ``lengths`` in turn (a shorter input before a longer one):
    each output is the reference's, and each forward leaves the student's mask as it was built (its shape and
    values; a module that keeps no ``mask`` is judged by its outputs), so that a forward that cuts or changes the
    buffer itself is named before the longer input fails on what it left."""
    built = _mask_values(student)
    for t in lengths:
        step = f"{call}(x[:, :{t}])" + (f" after (x[:, :{lengths[0]}])" if t != lengths[0] else "")
        assert_forward_matches(student, reference, x[:, :t], step, diagnoses)
        after = _mask_values(student)
        if built is not None and (after is None or after.shape != built.shape or not torch.equal(after, built)):
            same_shape = after is not None and after.shape == built.shape
            fail(step + "; then .mask", f"is {describe(getattr(student, 'mask', None))}; before the forward it had shape "
                 f"{tuple(built.shape)}" + (" and other values" if same_shape else ""), f"likely cause: {MASK_CHANGED_BY_FORWARD}")


def assert_printed_seed123(impl, ref_module, build: Callable, key: str, call: str, diagnoses: Diagnoses) -> None:
    """``torch.manual_seed(123); build(...)(batch)``: each batch row is the printed ``key`` (atol 1e-4).
    The mistakes ``diagnoses`` recomputes from the reference built the same way are named, and the order
    in which the student's module registers its layers when it is not the documents'."""
    P = printed()
    impl.manual_seed(123)
    expected = P.value(key)
    student = build(impl)
    got = forward(student, P.journey_batch(), call)
    seed_reference(123)
    reference = build(ref_module)
    with torch.no_grad():
        diag = diagnoses(reference, P.journey_batch())
    assert_close(got, torch.stack([expected, expected]), atol=1e-4, call=call, diagnoses=diag, shown=creation_order(student))


def assert_gradients_match(impl, student, reference, shape: tuple[int, ...], seed: int, call: str) -> None:
    """forward + backward of both modules on an input of ``shape`` and a gradient of the output's shape, both
    drawn from ``seed``: every parameter of the student's gets the reference's gradient (atol 1e-5)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    out = reference(x)
    grad_out = torch.randn(*out.shape, generator=g)
    backward_with(out, grad_out)
    _, grads = impl.forward_backward(student, x, grad_out)
    for name, p in reference.named_parameters():
        if grads.get(name) is None:
            fail(call, f"parameter {name!r} got no gradient", "no gradient reached it: forward does not use it, or uses it through torch.no_grad(), .detach() or .data")
        assert_close(grads[name], p.grad, atol=1e-5, call=call + f" -> grad of {name}")


def assert_dropout_as_reference(impl, student, reference, x: torch.Tensor, seed: int, call: str, note: str) -> None:
    """In training mode, with ``seed`` set before the forward pass, the student's output is the reference's
    (dropout applied once, to the attention weights); the output without dropout is named."""
    seed_reference(seed)
    with torch.no_grad():
        expected = reference(x)
        without_dropout = reference.eval()(x)
    reference.train()
    impl.manual_seed(seed)
    assert_close(student(x), expected, atol=1e-5, diagnoses=[(without_dropout, DROPOUT_NOT_APPLIED)], call=call,
                 note=note)
