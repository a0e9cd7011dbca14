"""Hidden tests for 03_causal/causal_attention (section 3.5.3).

COVERS: CausalAttention seeded output (seed 123, 001 In[832]); against the reference with the
reference's parameters loaded (forward only; buffers stay the
student's, the mask is judged by its own test) on random (b, T, d_in) inputs, d_in != d_out, d_out
> 1, T < context_length, T = context_length and T = 1, float32 and float64; qkv_bias=True in a test of its
own (biases exist, output matches); the mask
is a registered buffer (in state_dict, triu(ones, 1), follows .to(torch.float64)); T >
context_length raises ValueError; one module given 3 tokens, then 6 (= context_length), matches the reference
each time and its forward leaves the mask as built; gradients reach every parameter and match the reference's;
dropout acts on the attention weights in training mode (same seed, same result as the
reference) and not in eval mode; the input is never modified.
Tolerances: printed atol 1e-4; vs reference atol 1e-5 (float32) / atol 1e-7 + rtol 1e-7 (float64: float32
precision, the notebook's torch.sqrt(torch.tensor(d_k)) is √d_k rounded to float32; the dtype must be float64).
"""

import pytest
import torch

from against_reference import (assert_dropout_as_reference, assert_forward_matches,
                               assert_forwards_leave_the_mask, assert_gradients_match, assert_printed_seed123, pair)
from kata_checks import (MASK_BUFFER_COMPLEMENT, too_many_tokens, UNMASKED, assert_close, assert_mask_buffer, assert_raises, assert_unchanged,
                      call_checked, mask_errors, scale_diagnoses)
from reference import ref

REF = ref("causal_attention")


def _pair(impl, *args, seed=0, **kwargs):
    return pair(impl, REF, "CausalAttention", *args, seed=seed, **kwargs)


def _diagnoses(reference, x):
    """Known mistakes recomputed from the reference's weights: no mask, a wrong 1/√d_out."""
    q, k, v = reference.W_query(x), reference.W_key(x), reference.W_value(x)
    t = x.shape[-2]
    scores = q @ k.transpose(-2, -1)
    masked = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), -torch.inf)
    diag = [(torch.softmax(scores / k.shape[-1] ** 0.5, -1) @ v, UNMASKED)]
    return diag + scale_diagnoses(lambda s: torch.softmax(masked * s, -1) @ v, k.shape[-1], "d_out")


@pytest.mark.printed
def test_printed_seed123(impl):
    """torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch): both rows as 001 In[832]; atol 1e-4."""
    assert_printed_seed123(impl, REF, lambda m: m.CausalAttention(3, 2, 6, 0.0), "001/In832/causal_attention_seed123",
                           "torch.manual_seed(123); CausalAttention(3, 2, context_length=6, dropout=0.0)(batch)  [001 In[832]]",
                           _diagnoses)


CASES = {  # id: (d_in, d_out, context_length, T, qkv_bias, dtype)
    "float32-T5-of-8": (5, 4, 8, 5, False, torch.float32),
    "float64-T8-of-8": (3, 6, 8, 8, False, torch.float64),
    "T1": (4, 3, 6, 1, False, torch.float32),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.edge if c == "T1" else pytest.mark.core, id=c) for c in CASES])
def test_random_against_reference(impl, case):
    """Batch 3 with distinct rows; the reference's weights loaded into the student's module (T = 1, where
    attention is W_value(x) alone, is an edge case: a module that only projects the values passes it)."""
    d_in, d_out, cl, t, bias, dtype = CASES[case]
    student, reference = _pair(impl, d_in, d_out, cl, 0.0, seed=101, **({"qkv_bias": True} if bias else {}))
    if dtype != torch.float32:
        student, reference = student.to(dtype), reference.to(dtype)
    x = torch.randn(3, t, d_in, generator=torch.Generator().manual_seed(102), dtype=dtype)
    call = f"CausalAttention({d_in}, {d_out}, context_length={cl}, dropout=0.0, qkv_bias={bias})(x of shape (3, {t}, {d_in})) [{dtype}]"
    assert_forward_matches(student, reference, x, call, _diagnoses, dtype)


@pytest.mark.core
def test_qkv_bias_against_reference(impl):
    """qkv_bias=True (a test of its own: a module that ignores the keyword loses this test only): W_query, W_key
    and W_value have biases, and with the reference's parameters loaded the output is the reference's."""
    build = "CausalAttention(3, 6, context_length=8, dropout=0.0, qkv_bias=True)"
    student, reference = _pair(impl, 3, 6, 8, 0.0, seed=112, call=build, qkv_bias=True)
    x = torch.randn(3, 7, 3, generator=torch.Generator().manual_seed(113))
    assert_forward_matches(student, reference, x, build + "(x of shape (3, 7, 3))", _diagnoses)


@pytest.mark.edge
def test_mask_values(impl):
    """self.mask equals triu(ones(cl, cl), 1), wherever it is kept."""
    m = impl.CausalAttention(3, 2, 5, 0.0)
    call = "CausalAttention(3, 2, context_length=5, dropout=0.0).mask"
    assert_close(m.mask, torch.triu(torch.ones(5, 5), diagonal=1), atol=0, check_dtype=False, call=call,
                 diagnoses=[(torch.tril(torch.ones(5, 5)), MASK_BUFFER_COMPLEMENT)])


@pytest.mark.edge
@pytest.mark.device
def test_mask_is_a_registered_buffer(impl):
    """'mask' is in state_dict (not a parameter) and follows .to(torch.float64): what a device run shows, so
    the GPU-run check charges it when it runs (this test only when the check is skipped)."""
    m = impl.CausalAttention(3, 2, 5, 0.0)
    assert_mask_buffer(m, None, call="CausalAttention(3, 2, context_length=5, dropout=0.0)")


@pytest.mark.edge
def test_too_many_tokens_raises(impl):
    """T = context_length + 1 raises ValueError."""
    m = impl.CausalAttention(3, 2, 4, 0.0)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(103))
    assert_raises(ValueError, m, x, call="CausalAttention(3, 2, context_length=4, dropout=0.0)(x with 5 tokens)",
                  why=lambda _: too_many_tokens(m, x, 4))


@pytest.mark.edge
def test_a_longer_input_after_a_shorter_one(impl):
    """One module, x[:, :3] then x[:, :6] (context_length 6): each output is the reference's, and each forward
    leaves the mask as built (a forward that assigns self.mask = self.mask[:T, :T] fails the longer input)."""
    student, reference = _pair(impl, 4, 3, 6, 0.0, seed=114)
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(115))
    assert_forwards_leave_the_mask(student, reference, x, (3, 6), "CausalAttention(4, 3, context_length=6, dropout=0.0)",
                                   _diagnoses)


@pytest.mark.core
def test_gradients_reach_every_parameter(impl):
    """forward + backward: every parameter gets the reference's gradient; atol 1e-5."""
    student, reference = _pair(impl, 4, 3, 6, 0.0, seed=104)
    assert_gradients_match(impl, student, reference, (2, 6, 4), 105,
                           "CausalAttention(4, 3, 6, 0.0): forward_backward(x (2, 6, 4), grad_output (2, 6, 3))")


@pytest.mark.core
def test_dropout_on_weights_in_training_mode(impl):
    """dropout=0.5, training: same seed, same output as the reference (dropout applied once, to the attention weights)."""
    student, reference = _pair(impl, 4, 3, 6, 0.5, seed=106)
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(107))
    assert_dropout_as_reference(
        impl, student, reference, x, 108,
        "CausalAttention(4, 3, 6, dropout=0.5) in training mode, torch.manual_seed(108) before the forward",
        "apply self.dropout (nn.Dropout) to the attention weights after the softmax, before @ values")


@pytest.mark.core
def test_eval_mode_disables_dropout(impl):
    """dropout=0.5, after .eval(): the output equals the reference without dropout."""
    student, reference = _pair(impl, 4, 3, 6, 0.5, seed=109)
    student = student.eval()
    reference.eval()
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(110))
    with torch.no_grad():
        expected = reference(x)
    assert_close(student(x), expected, atol=1e-5, call="CausalAttention(4, 3, 6, dropout=0.5).eval()(x)",
                 note="use nn.Dropout (it is the identity in eval mode), not a hand-made dropout that ignores .eval()")


@pytest.mark.edge
def test_input_not_modified(impl):
    """The forward leaves its input unchanged."""
    m = impl.CausalAttention(3, 2, 6, 0.0)
    x = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(111))
    _, after = call_checked(impl.call_and_inputs, m, x.clone(), call="CausalAttention(3, 2, 6, 0.0)(x of shape (2, 4, 3))",
                            errors=[lambda _call, module, inputs: mask_errors(module, inputs)])
    assert_unchanged([x], after, call="CausalAttention(3, 2, 6, 0.0)(x)", names=["x"])
