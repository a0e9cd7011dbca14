"""Hidden tests for 02_trainable_weights/weight_transfer (section 3.4.2, exercise).

COVERS: copy_weights_v2_to_v1 and copy_weights_v1_to_v2 copy the (transposed) values, so that
the two modules compute the same output; v1 keeps its nn.Parameters (gradients still reach them);
the copy is by value (changing the source afterwards leaves the target alone); a biased v2 -> v1
and mismatched shapes raise ValueError and copy nothing; v1 -> v2 zeroes v2's biases.
Outputs are computed by REFERENCE modules loaded with the student modules' state_dicts, so only
the transfer is judged here (not the student's forward).
Tolerances: copied parameters exact (atol 0); outputs atol 1e-6; rtol 0.
"""

import pytest
import torch

from kata_checks import (BIAS_NOT_REFUSED, BIAS_NOT_ZEROED, COPY_ALIASES, COPY_NOT_TRANSPOSED, PARTIAL_COPY, SHAPES_NOT_REFUSED, assert_close,
                      assert_qkv_biases, assert_raises, fail)
from reference import ref

REF = ref("self_attention")
NAMES = ("W_query", "W_key", "W_value")


def _params(module):
    return {k: v for k, v in dict(module.named_parameters()).items()}


def _outputs_equal(v1, v2, d_in, d_out, bias, call):
    """Reference v1/v2 with the student modules' weights give the same output (atol 1e-6)."""
    r1, r2 = REF.SelfAttention_v1(d_in, d_out), REF.SelfAttention_v2(d_in, d_out, bias)
    r1.load_state_dict(v1.state_dict())
    r2.load_state_dict(v2.state_dict())
    x = torch.randn(2, 5, d_in, generator=torch.Generator().manual_seed(61))
    with torch.no_grad():
        assert_close(r1(x), r2(x), atol=1e-6, call=call + ": SelfAttention_v1(x) vs SelfAttention_v2(x) after the copy")


@pytest.mark.core
def test_v2_to_v1_copies_transposed_values(impl):
    """v1.W_* == v2.W_*.weight.T exactly, and both modules compute the same output."""
    impl.manual_seed(62)
    v2, v1 = impl.SelfAttention_v2(4, 3), impl.SelfAttention_v1(4, 3)
    call = "copy_weights_v2_to_v1(SelfAttention_v2(4, 3), SelfAttention_v1(4, 3))"
    impl.copy_weights_v2_to_v1(v2, v1)
    p1, p2 = _params(v1), _params(v2)
    for n in NAMES:
        assert_close(p1.get(n), p2[f"{n}.weight"].T, atol=0, call=call + f" -> sa_v1.{n}",
                     diagnoses=[(p2[f"{n}.weight"].reshape(4, 3), COPY_NOT_TRANSPOSED)])
    _outputs_equal(v1, v2, 4, 3, False, call)


def _with_biases(v2, call):
    """The SelfAttention_v2(4, 3, qkv_bias=True) a test copies from or to has its biases: else that module's
    mistake is named, and weight_transfer, which may be right, is not blamed for it (issue 38)."""
    assert_qkv_biases(v2, True, call=f"SelfAttention_v2(4, 3, qkv_bias=True).named_parameters(), which {call.split('(')[0]} is given")


@pytest.mark.core
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "v2-with-bias"])
def test_v1_to_v2_copies_transposed_values(impl, bias):
    """v2.W_*.weight == v1.W_*.T exactly, biases (if any) zeroed, same output."""
    impl.manual_seed(63)
    v1, v2 = impl.SelfAttention_v1(4, 3), impl.SelfAttention_v2(4, 3, qkv_bias=bias)
    call = f"copy_weights_v1_to_v2(SelfAttention_v1(4, 3), SelfAttention_v2(4, 3, qkv_bias={bias}))"
    if bias:
        _with_biases(v2, call)
    impl.copy_weights_v1_to_v2(v1, v2)
    p1, p2 = _params(v1), _params(v2)
    for n in NAMES:
        assert_close(p2.get(f"{n}.weight"), p1[n].T, atol=0, call=call + f" -> sa_v2.{n}.weight")
        if bias:
            assert_close(p2.get(f"{n}.bias"), torch.zeros(3), atol=0, call=call + f" -> sa_v2.{n}.bias",
                         note=BIAS_NOT_ZEROED)
    _outputs_equal(v1, v2, 4, 3, bias, call)


@pytest.mark.edge
def test_copy_is_by_value(impl):
    """After each copy, changing the source (through load_state_dict) leaves the target unchanged."""
    impl.manual_seed(64)
    v2, v1 = impl.SelfAttention_v2(4, 3), impl.SelfAttention_v1(4, 3)
    impl.copy_weights_v2_to_v1(v2, v1)
    before = {k: v.clone() for k, v in v1.state_dict().items()}
    v2.load_state_dict({k: torch.full_like(v, 7.0) for k, v in v2.state_dict().items()})
    for k, v in v1.state_dict().items():
        if not torch.equal(v, before[k]):
            fail("copy_weights_v2_to_v1(sa_v2, sa_v1), then changing sa_v2's weights",
                 f"sa_v1.{k} changed too: it shares storage with sa_v2's weight", f"likely cause: {COPY_ALIASES}")
    impl.copy_weights_v1_to_v2(v1, v2)
    before = {k: v.clone() for k, v in v2.state_dict().items()}
    v1.load_state_dict({k: torch.full_like(v, -3.0) for k, v in v1.state_dict().items()})
    for k, v in v2.state_dict().items():
        if not torch.equal(v, before[k]):
            fail("copy_weights_v1_to_v2(sa_v1, sa_v2), then changing sa_v1's weights",
                 f"sa_v2.{k} changed too: it shares storage with sa_v1's parameter", f"likely cause: {COPY_ALIASES}")


@pytest.mark.edge
def test_v1_keeps_its_parameters(impl):
    """After v2 -> v1, v1 still has the nn.Parameters W_query/W_key/W_value and gradients reach them."""
    impl.manual_seed(65)
    v2, v1 = impl.SelfAttention_v2(4, 3), impl.SelfAttention_v1(4, 3)
    impl.copy_weights_v2_to_v1(v2, v1)
    call = "copy_weights_v2_to_v1(sa_v2, sa_v1), then sa_v1.named_parameters()"
    got = sorted(_params(v1))
    if got != sorted(NAMES):
        fail(call, f"sa_v1 has parameters {got}; expected {sorted(NAMES)}",
             "copy into the existing nn.Parameters; do not replace them with plain tensors")
    g = torch.Generator().manual_seed(66)
    _, grads = impl.forward_backward(v1, torch.randn(5, 4, generator=g), torch.randn(5, 3, generator=g))
    missing = [n for n in NAMES if grads.get(n) is None]
    if missing:
        fail(call, f"no gradient reaches {missing} after the copy",
             "copy under torch.no_grad() into the parameter; do not assign a tensor that does not require grad")


@pytest.mark.edge
def test_biased_v2_to_v1_raises_and_copies_nothing(impl):
    """v2 with qkv_bias=True -> v1: ValueError (v1 has no bias), and v1 is left as it was."""
    impl.manual_seed(67)
    v2, v1 = impl.SelfAttention_v2(4, 3, qkv_bias=True), impl.SelfAttention_v1(4, 3)
    before = {k: v.clone() for k, v in v1.state_dict().items()}
    call = "copy_weights_v2_to_v1(SelfAttention_v2(4, 3, qkv_bias=True), SelfAttention_v1(4, 3))"
    _with_biases(v2, call)
    _expect_value_error(impl.copy_weights_v2_to_v1, v2, v1, call=call, why=BIAS_NOT_REFUSED)
    _unchanged(v1, before, call)


@pytest.mark.edge
def test_mismatched_shapes_raise_and_copy_nothing(impl):
    """v2(4, 3) -> v1(3, 4) and v1(4, 3) -> v2(4, 2): ValueError, target untouched."""
    impl.manual_seed(68)
    cases = [
        ("copy_weights_v2_to_v1", impl.SelfAttention_v2(4, 3), impl.SelfAttention_v1(3, 4),
         "copy_weights_v2_to_v1(SelfAttention_v2(4, 3), SelfAttention_v1(3, 4))"),
        ("copy_weights_v2_to_v1", impl.SelfAttention_v2(4, 3), impl.SelfAttention_v1(4, 2),
         "copy_weights_v2_to_v1(SelfAttention_v2(4, 3), SelfAttention_v1(4, 2))"),
        ("copy_weights_v1_to_v2", impl.SelfAttention_v1(4, 3), impl.SelfAttention_v2(4, 2),
         "copy_weights_v1_to_v2(SelfAttention_v1(4, 3), SelfAttention_v2(4, 2))"),
        ("copy_weights_v1_to_v2", impl.SelfAttention_v1(4, 3), impl.SelfAttention_v2(3, 4),
         "copy_weights_v1_to_v2(SelfAttention_v1(4, 3), SelfAttention_v2(3, 4))"),
    ]
    for fn, src, dst, call in cases:
        before = {k: v.clone() for k, v in dst.state_dict().items()}
        _expect_value_error(getattr(impl, fn), src, dst, call=call,  # half-copied: said only where it is
                            why=lambda _, dst=dst, before=before: SHAPES_NOT_REFUSED + (
                                f". {PARTIAL_COPY}" if _changed(dst, before) else ""))
        _unchanged(dst, before, call)


def _expect_value_error(fn, *args, call, why):
    assert_raises(ValueError, fn, *args, call=call, why=why)


def _changed(module, before) -> bool:
    return any(not torch.equal(v, before[k]) for k, v in module.state_dict().items() if k in before)


def _unchanged(module, before, call):
    for k, v in module.state_dict().items():
        if not torch.equal(v, before[k]):
            fail(call, f"raised, but the target's {k} was changed anyway", f"likely cause: {PARTIAL_COPY}")
