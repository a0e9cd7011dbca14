"""Hidden tests for 04_multihead/multihead_attention (section 3.6.2).

COVERS: MultiHeadAttention seeded output (seed 123, d_in=3, d_out=2, 2 heads; the docs README's
value, full tensor computed with the reference); against the reference with its parameters
loaded (forward only) where head_dim > 1 (the documents' example has head_dim 1, so a wrong
1/√head_dim passes it), d_in != d_out, distinct batch rows, T < context_length and T = 1, float32
and float64; qkv_bias=True in a test of its own (biases exist, output matches); gpt2_attention() has 2,360,064 parameters
and no dropout (its training-mode output is its eval-mode output); d_out not divisible by num_heads raises
ValueError; the mask is a registered buffer and T > context_length raises ValueError; one module given 3 tokens,
then 6, matches the reference each time and its forward leaves the mask as built; gradients
reach every parameter and match the reference's.
Tolerances: printed atol 1e-4; vs reference atol 1e-5 (float32) / atol 1e-7 + rtol 1e-7 (float64: float32
precision, the notebook's torch.sqrt(torch.tensor(d_k)) is √d_k rounded to float32; the dtype must be float64);
grads atol 1e-5.
"""

import pytest
import torch

from against_reference import (assert_dropout_as_reference, assert_forward_matches, assert_forwards_leave_the_mask,
                               assert_gradients_match, assert_printed_seed123, pair)
from kata_checks import (GPT2_WITH_DROPOUT, MERGE_BARE_RESHAPE, NO_OUT_PROJ, not_divisible, SPLIT_BARE_VIEW, too_many_tokens,
                      UNMASKED, assert_close, assert_mask_buffer, assert_raises, fail, no_scale, scaled_by_d_out)
from reference import printed, ref

P = printed()
REF = ref("multihead_attention")


def _pair(impl, *args, seed=0, **kwargs):
    return pair(impl, REF, "MultiHeadAttention", *args, seed=seed, **kwargs)


def _diagnoses(reference, x):
    """Known mistakes recomputed from the reference's weights."""
    b, t, _ = x.shape
    h, hd = reference.num_heads, reference.head_dim

    def run(scale, split="right", mask=True, merge="right", proj=True):
        def heads(y):
            if split == "bare-view":
                return y.reshape(b, h, t, hd)
            return y.view(b, t, h, hd).transpose(1, 2)
        q, k, v = heads(reference.W_query(x)), heads(reference.W_key(x)), heads(reference.W_value(x))
        s = q @ k.transpose(2, 3)
        if mask:
            s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), -torch.inf)
        ctx = torch.softmax(s * scale, -1) @ v
        ctx = ctx.reshape(b, t, h * hd) if merge == "bare-reshape" else ctx.transpose(1, 2).reshape(b, t, h * hd)
        return reference.out_proj(ctx) if proj else ctx

    d_out = h * hd
    return [
        (run(1 / d_out**0.5), scaled_by_d_out(d_out, hd)),
        *([(run(1.0), no_scale(hd, "head_dim"))] if hd > 1 else []),  # 1/√1 = 1: no scale is no mistake there
        (run(1 / hd**0.5, split="bare-view"), SPLIT_BARE_VIEW),
        (run(1 / hd**0.5, mask=False), UNMASKED),
        (run(1 / hd**0.5, merge="bare-reshape"), MERGE_BARE_RESHAPE),
        (run(1 / hd**0.5, proj=False), NO_OUT_PROJ),
    ]


@pytest.mark.printed
def test_printed_seed123(impl):
    """torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch) starts [[0.3190, 0.4858], ...]; atol 1e-4."""
    # head_dim is 1 here: a missing scale is invisible, a wrong 1/√d_out is not (diagnosed before creation order)
    assert_printed_seed123(impl, REF, lambda m: m.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2), "README/mha_seed123",
                           "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)  [000 3.6.2 / docs README]",
                           _diagnoses)


CASES = {  # id: (d_in, d_out, context_length, num_heads, T, qkv_bias, dtype)
    "hd3-float32": (5, 6, 8, 2, 7, False, torch.float32),
    "hd2-float64": (3, 8, 6, 4, 6, False, torch.float64),
    "one-head": (4, 6, 8, 1, 5, False, torch.float32),  # head_dim = d_out: the scale is sqrt(d_out) here
    "T1-hd4": (4, 8, 5, 2, 1, False, torch.float32),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.edge if c == "T1-hd4" else pytest.mark.core, id=c)
                                  for c in CASES])
def test_random_against_reference(impl, case):
    """Batch 3, distinct rows, head_dim > 1; the reference's parameters loaded into the student's module (T = 1,
    where attention is out_proj(W_value(x)) alone, is an edge case)."""
    d_in, d_out, cl, h, t, bias, dtype = CASES[case]
    student, reference = _pair(impl, d_in, d_out, cl, 0.0, num_heads=h, seed=141, **({"qkv_bias": True} if bias else {}))
    if dtype != torch.float32:
        student, reference = student.to(dtype), reference.to(dtype)
    x = torch.randn(3, t, d_in, generator=torch.Generator().manual_seed(142), dtype=dtype)
    call = (f"MultiHeadAttention({d_in}, {d_out}, context_length={cl}, dropout=0.0, num_heads={h}, qkv_bias={bias})"
            f"(x of shape (3, {t}, {d_in})) [{dtype}]")
    assert_forward_matches(student, reference, x, call, _diagnoses, dtype)


@pytest.mark.core
def test_qkv_bias_against_reference(impl):
    """qkv_bias=True (a test of its own: a module that ignores the keyword loses this test only): W_query, W_key
    and W_value have biases, and with the reference's parameters loaded the output is the reference's."""
    build = "MultiHeadAttention(3, 8, context_length=6, dropout=0.0, num_heads=4, qkv_bias=True)"
    student, reference = _pair(impl, 3, 8, 6, 0.0, num_heads=4, seed=149, call=build, qkv_bias=True)
    x = torch.randn(3, 6, 3, generator=torch.Generator().manual_seed(150))
    assert_forward_matches(student, reference, x, build + "(x of shape (3, 6, 3))", _diagnoses)


@pytest.mark.edge
def test_gpt2_attention_parameter_count(impl):
    """gpt2_attention(): 768 -> 768, 12 heads, context 1024: 2,360,064 parameters."""
    m = impl.gpt2_attention()
    n = sum(p.numel() for p in m.parameters())
    if n != P.PRINTED["README/gpt2_parameters"]["value"]:
        fail("sum(p.numel() for p in gpt2_attention().parameters())", f"is {n:,}; expected 2,360,064",
             "4 nn.Linear(768, 768): W_query/W_key/W_value without bias (3 × 589,824), out_proj with bias (590,592)")


@pytest.mark.edge
def test_gpt2_attention_has_no_dropout(impl):
    """gpt2_attention() in training mode (a new module's mode) gives its eval-mode output: dropout 0.0, as the stub
    states, on x of shape (1, 8, 768); atol 1e-6."""
    m = impl.gpt2_attention()
    x = torch.randn(1, 8, 768, generator=torch.Generator().manual_seed(151))
    impl.manual_seed(152)
    in_training = m(x)
    assert_close(in_training, m.eval()(x), atol=1e-6, call="gpt2_attention()(x of shape (1, 8, 768)) in training mode, "
                 "vs the same module after .eval()", note=f"likely cause: {GPT2_WITH_DROPOUT}")


@pytest.mark.edge
def test_not_divisible_raises(impl):
    """MultiHeadAttention(3, 6, 4, 0.0, num_heads=4) and (3, 5, 4, 0.0, num_heads=2): ValueError."""
    for d_out, h in [(6, 4), (5, 2)]:
        assert_raises(ValueError, impl.MultiHeadAttention, 3, d_out, 4, 0.0, num_heads=h,
                      call=f"MultiHeadAttention(3, {d_out}, 4, 0.0, num_heads={h})",
                      why=not_divisible)


@pytest.mark.edge
def test_mask_values_and_context_length(impl):
    """self.mask equals triu(ones(cl, cl), 1); T > context_length raises ValueError (the input is float32, the
    module's dtype: a module that checks T after its projections raises its own ValueError, not a dtype clash)."""
    m = impl.MultiHeadAttention(3, 4, 5, 0.0, num_heads=2)
    call = "MultiHeadAttention(3, 4, context_length=5, dropout=0.0, num_heads=2)"
    assert_close(m.mask, torch.triu(torch.ones(5, 5), 1), atol=0, check_dtype=False, call=call + ".mask")
    x = torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(143))
    assert_raises(ValueError, m, x, call=call + "(x with 6 tokens)", why=lambda _: too_many_tokens(m, x, 5))


@pytest.mark.edge
@pytest.mark.device
def test_mask_is_a_registered_buffer(impl):
    """'mask' in state_dict, follows .to(torch.float64): what a device run shows, so the GPU-run check charges
    it when it runs (this test only when the check is skipped)."""
    m = impl.MultiHeadAttention(3, 4, 5, 0.0, num_heads=2)
    assert_mask_buffer(m, None, call="MultiHeadAttention(3, 4, context_length=5, dropout=0.0, num_heads=2)")


@pytest.mark.edge
def test_a_longer_input_after_a_shorter_one(impl):
    """One module, x[:, :3] then x[:, :6] (context_length 6): each output is the reference's, and each forward
    leaves the mask as built (a forward that assigns self.mask = self.mask[:T, :T] fails the longer input)."""
    student, reference = _pair(impl, 4, 6, 6, 0.0, num_heads=2, seed=153)
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(154))
    assert_forwards_leave_the_mask(student, reference, x, (3, 6),
                                   "MultiHeadAttention(4, 6, context_length=6, dropout=0.0, num_heads=2)", _diagnoses)


@pytest.mark.core
def test_gradients_reach_every_parameter(impl):
    """forward + backward: W_query/W_key/W_value/out_proj get the reference's gradients; atol 1e-5."""
    student, reference = _pair(impl, 4, 6, 5, 0.0, num_heads=3, seed=144)
    assert_gradients_match(impl, student, reference, (2, 5, 4), 145,
                           "MultiHeadAttention(4, 6, 5, 0.0, num_heads=3): forward_backward(x (2, 5, 4), grad_output (2, 5, 6))")


@pytest.mark.core
def test_dropout_on_weights_in_training_mode(impl):
    """dropout=0.5, training: same seed, same output as the reference; after .eval(): no dropout at all."""
    student, reference = _pair(impl, 4, 6, 5, 0.5, num_heads=3, seed=146)
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(147))
    assert_dropout_as_reference(
        impl, student, reference, x, 148,
        "MultiHeadAttention(4, 6, 5, dropout=0.5, num_heads=3) in training mode, torch.manual_seed(148) before the forward",
        "apply self.dropout to the attention weights (b, num_heads, T, T) after the softmax, before @ values")
    student, reference = student.eval(), reference.eval()
    with torch.no_grad():
        expected = reference(x)
    assert_close(student(x), expected, atol=1e-5, call="MultiHeadAttention(4, 6, 5, dropout=0.5, num_heads=3).eval()(x)",
                 note="use nn.Dropout (the identity in eval mode)")
