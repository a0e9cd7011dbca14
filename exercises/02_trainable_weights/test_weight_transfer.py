"""Public tests for weight_transfer (02_trainable_weights, section 3.4.2, the exercise after SelfAttention_v2).

Run ``pytest exercises/02_trainable_weights/test_weight_transfer.py`` or ``pytest exercises -k weight_transfer``.
The documents (exercises/documents/chapter_notes_3.1-3.6.txt; paths in the kata are relative to the
repository root) ask that both modules then compute the same output. These tests use your
self_attention.py: finish that module first.
"""

import torch
import torch.nn as nn

from kata_checks import (BIAS_NOT_REFUSED, BIAS_NOT_ZEROED, COPY_ALIASES, COPY_NOT_TRANSPOSED, COPY_REPLACES,
                         PARTIAL_COPY, SHAPES_NOT_REFUSED, assert_close, assert_qkv_biases, assert_raises, fail, journey_inputs,
                         load)
from kata_mistakes import COPIED_ANOTHER_LAYER

NAMES = ("W_query", "W_key", "W_value")


def _modules():
    return load("weight_transfer"), load("self_attention")


def _changed(module, before):
    return any(not torch.equal(v.detach(), before[k]) for k, v in module.named_parameters() if k in before)


def _with_biases(sa_v2, call):
    """The SelfAttention_v2(..., qkv_bias=True) of your self_attention.py, which the test copies from or to, has
    its biases: else that module's mistake is named (no test here blames weight_transfer for it)."""
    assert_qkv_biases(sa_v2, True, call=f"SelfAttention_v2(3, 4, qkv_bias=True).named_parameters() of your self_attention.py, "
                      f"which {call.split('(')[0]} is given")


def test_weight_transfer_v2_to_v1_makes_both_compute_the_same():
    wt, sa = _modules()
    # chapter_notes_3.1-3.6.txt, section 3.4.2: "print(torch.allclose(out1, out2, atol=1e-6))  # Should print: True"
    torch.manual_seed(789)
    sa_v2, sa_v1 = sa.SelfAttention_v2(3, 4), sa.SelfAttention_v1(3, 4)
    wt.copy_weights_v2_to_v1(sa_v2, sa_v1)
    call = "copy_weights_v2_to_v1(SelfAttention_v2(3, 4), SelfAttention_v1(3, 4))"
    for name in NAMES:
        weight = getattr(sa_v2, name).weight.detach()
        assert_close(getattr(sa_v1, name), weight.T, atol=0, call=call + f"; sa_v1.{name}",
                     diagnoses=[(weight.reshape(3, 4), COPY_NOT_TRANSPOSED)] + [
                         (getattr(sa_v2, other).weight.detach().T, COPIED_ANOTHER_LAYER) for other in NAMES if other != name])
    inputs = journey_inputs()
    assert_close(sa_v1(inputs), sa_v2(inputs).detach(), atol=1e-6, call=call + "; sa_v1(inputs) vs sa_v2(inputs)")


def test_weight_transfer_copies_values_into_the_existing_parameters():
    wt, sa = _modules()
    sa_v2, sa_v1 = sa.SelfAttention_v2(3, 4), sa.SelfAttention_v1(3, 4)
    before = {name: getattr(sa_v1, name) for name in NAMES}
    call = "copy_weights_v2_to_v1(sa_v2, sa_v1)"
    wt.copy_weights_v2_to_v1(sa_v2, sa_v1)
    for name in NAMES:
        if getattr(sa_v1, name) is not before[name]:
            fail(call, f"sa_v1.{name} is a new object after the copy", f"likely cause: {COPY_REPLACES}")
    copied = {name: getattr(sa_v1, name).detach().clone() for name in NAMES}
    with torch.no_grad():
        for name in NAMES:
            getattr(sa_v2, name).weight.add_(1.0)  # change the source afterwards
    for name in NAMES:
        assert_close(getattr(sa_v1, name).detach(), copied[name], atol=0, diagnoses=[(copied[name] + 1.0, COPY_ALIASES)],
                     call=call + f", then sa_v2.{name}.weight += 1; sa_v1.{name} must not change")
    # and the other way round
    wt.copy_weights_v1_to_v2(sa_v1, sa_v2)
    copied = {name: getattr(sa_v2, name).weight.detach().clone() for name in NAMES}
    with torch.no_grad():
        for name in NAMES:
            getattr(sa_v1, name).add_(1.0)
    for name in NAMES:
        assert_close(getattr(sa_v2, name).weight.detach(), copied[name], atol=0, diagnoses=[(copied[name] + 1.0, COPY_ALIASES)],
                     call=f"copy_weights_v1_to_v2(sa_v1, sa_v2), then sa_v1.{name} += 1; sa_v2.{name}.weight must not change")


def test_weight_transfer_v1_to_v2_with_biases_makes_both_compute_the_same():
    wt, sa = _modules()
    torch.manual_seed(123)
    sa_v1, sa_v2 = sa.SelfAttention_v1(3, 4), sa.SelfAttention_v2(3, 4, qkv_bias=True)
    call = "copy_weights_v1_to_v2(SelfAttention_v1(3, 4), SelfAttention_v2(3, 4, qkv_bias=True))"
    _with_biases(sa_v2, call)
    wt.copy_weights_v1_to_v2(sa_v1, sa_v2)
    for name in NAMES:
        assert_close(getattr(sa_v2, name).weight.detach(), getattr(sa_v1, name).detach().T, atol=0,
                     call=call + f"; sa_v2.{name}.weight",
                     diagnoses=[(getattr(sa_v1, other).detach().T, COPIED_ANOTHER_LAYER) for other in NAMES if other != name])
        assert_close(getattr(sa_v2, name).bias.detach(), torch.zeros(4), atol=0, call=call + f"; sa_v2.{name}.bias",
                     shown=BIAS_NOT_ZEROED)  # this check is exactly that
    inputs = journey_inputs()
    assert_close(sa_v2(inputs), sa_v1(inputs).detach(), atol=1e-6, call=call + "; sa_v2(inputs) vs sa_v1(inputs)")


def test_weight_transfer_refuses_what_cannot_be_copied_and_copies_nothing():
    wt, sa = _modules()
    sa_v2, sa_v1 = sa.SelfAttention_v2(3, 4, qkv_bias=True), sa.SelfAttention_v1(3, 4)
    before = {name: getattr(sa_v1, name).detach().clone() for name in NAMES}
    call = "copy_weights_v2_to_v1(SelfAttention_v2(3, 4, qkv_bias=True), SelfAttention_v1(3, 4))"
    _with_biases(sa_v2, call)
    assert_raises(ValueError, wt.copy_weights_v2_to_v1, sa_v2, sa_v1, call=call, why=BIAS_NOT_REFUSED)
    for name in NAMES:
        assert_close(getattr(sa_v1, name).detach(), before[name], atol=0, call=call + f" raised; sa_v1.{name} must be unchanged",
                     shown=PARTIAL_COPY)  # it changed before raising: exactly that
    # Shapes: W_query and W_key fit, W_value does not (d_out 5 instead of 4).
    for direction in ("copy_weights_v2_to_v1", "copy_weights_v1_to_v2"):
        sa_v2, sa_v1 = sa.SelfAttention_v2(3, 4), sa.SelfAttention_v1(3, 4)
        sa_v1.W_value = nn.Parameter(torch.rand(3, 5))
        target = sa_v1 if direction == "copy_weights_v2_to_v1" else sa_v2
        before = {k: v.detach().clone() for k, v in target.named_parameters()}
        args = (sa_v2, sa_v1) if direction == "copy_weights_v2_to_v1" else (sa_v1, sa_v2)
        call = f"{direction}(...) with sa_v1.W_value of shape (3, 5) and sa_v2.W_value.weight of shape (4, 3)"
        assert_raises(ValueError, getattr(wt, direction), *args, call=call,  # half-copied: said only where it is
                      why=lambda _: SHAPES_NOT_REFUSED + (f". {PARTIAL_COPY}" if _changed(target, before) else ""))
        for k, v in target.named_parameters():
            assert_close(v.detach(), before[k], atol=0, call=call + f" raised; {k} must be unchanged", shown=PARTIAL_COPY)
