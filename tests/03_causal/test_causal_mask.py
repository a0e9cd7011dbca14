"""Hidden tests for 03_causal/causal_mask (section 3.5.1).

COVERS: causal_mask against 001's printed tril mask (and the docstring's 3x3, and T = 1), with the
printed row sums of the masked seed-789 weights (000 3.5.1 / 001 In[820]); mask_and_renormalize,
mask_future_scores and causal_attention_weights against 001's printed seed-789 values (weights and
scores built in the test process from a seed-789 SelfAttention_v2); causal_mask against the
reference for T = 1..9; the other three against the reference on random inputs with leading batch
dims, T in 1..9, float64 and float32, with properties (exactly 0 / -inf above the diagonal, rows
sum to 1); inputs never modified.
Tolerances: masks exact; printed atol 1e-4; random vs reference atol 1e-6 (float32) / 1e-12 (float64); rtol 0.
"""

import pytest
import torch

from kata_checks import (MASK_COMPLEMENT, assert_close, assert_exactly_zero_above_diagonal, assert_rows_sum_to_one, assert_unchanged, fail,
                      scale_diagnoses)
from reference import printed, ref

P = printed()
REF = ref("causal_mask")


def _seed789():
    """The seed-789 scores and softmax(scores / √2) weights of 001 In[816] (exact, not the rounded print)."""
    q, k, _ = P.linear_projections_789(P.journey())
    scores = q @ k.T
    return scores, torch.softmax(scores / 2**0.5, dim=-1)




@pytest.mark.printed
def test_causal_mask_values(impl):
    """causal_mask(6) == 001's tril mask, causal_mask(3), causal_mask(1); masked seed-789 row sums [0.1921, ...]."""
    assert_close(impl.causal_mask(6), P.value("001/In818/tril_mask"), atol=0, check_dtype=False, call="causal_mask(6)  [001 In[818]]",
                 diagnoses=[(torch.triu(torch.ones(6, 6), 1), MASK_COMPLEMENT),
                            (torch.triu(torch.ones(6, 6)), "returned triu: the allowed positions are on and BELOW the diagonal")])
    assert_close(impl.causal_mask(3), torch.tril(torch.ones(3, 3)), atol=0, check_dtype=False, call="causal_mask(3)")
    assert_close(impl.causal_mask(1), torch.ones(1, 1), atol=0, check_dtype=False, call="causal_mask(1)")
    _, weights = _seed789()
    mask = impl.causal_mask(6)
    assert_close(weights * mask.to(weights.dtype), P.value("001/In819/masked_weights"), atol=1e-4,
                 call="seed-789 attn_weights * causal_mask(6)  [001 In[819]]")
    assert_close((weights * mask.to(weights.dtype)).sum(-1), P.value("000/3.5.1/row_sums"), atol=1e-4,
                 call="(seed-789 attn_weights * causal_mask(6)).sum(-1)  [000 3.5.1, 001 In[820]]")


@pytest.mark.printed
def test_mask_and_renormalize_printed(impl):
    """001 In[820]: [[1, 0, ...], [0.5517, 0.4483, 0, ...], ...]; atol 1e-4."""
    _, weights = _seed789()
    masked = weights * torch.tril(torch.ones(6, 6))
    assert_close(impl.mask_and_renormalize(weights), P.value("001/In820/renormalized"), atol=1e-4,
                 call="mask_and_renormalize(seed-789 attn_weights)  [001 In[820]]",
                 diagnoses=[(masked, "rows do not sum to 1: renormalize after masking (divide by the row sums)"),
                            (torch.softmax(masked, -1), "applied softmax to the masked weights: the zeros still get weight"),
                            (weights, "output matches the unmasked attention: zero the entries above the diagonal")])


@pytest.mark.printed
def test_mask_future_scores_printed(impl):
    """000 3.5.1 / 001 In[824]: -inf above the diagonal of the seed-789 scores; the input is untouched."""
    scores, _ = _seed789()
    call = "mask_future_scores(seed-789 attn_scores)  [000 3.5.1, 001 In[824]]"
    got, after = impl.call_and_inputs(impl.mask_future_scores, scores.clone())
    assert_unchanged([scores], after, call=call, names=["attn_scores"])
    assert_close(got, P.value("000/3.5.1/masked_scores"), atol=1e-4, call=call,
                 diagnoses=[(scores.masked_fill(torch.tril(torch.ones(6, 6), -1).bool(), -torch.inf),
                             "masked below the diagonal (the past) instead of above it (the future)"),
                            (scores.masked_fill(torch.triu(torch.ones(6, 6)).bool(), -torch.inf),
                             "a whole row is -inf: the diagonal (the token itself) must stay visible (diagonal=1)")])


@pytest.mark.printed
def test_causal_attention_weights_printed(impl):
    """001 In[826]: softmax(masked scores / √2); atol 1e-4."""
    scores, weights = _seed789()
    masked = scores.masked_fill(torch.triu(torch.ones(6, 6), 1).bool(), -torch.inf)
    assert_close(impl.causal_attention_weights(scores, 2), P.value("001/In820/renormalized"), atol=1e-4,
                 call="causal_attention_weights(seed-789 attn_scores, d_k=2)  [001 In[826]]",
                 diagnoses=[(weights, "output matches the unmasked attention: mask the future with -inf before the softmax"),
                            (weights * torch.tril(torch.ones(6, 6)), "rows do not sum to 1: masked after the softmax without renormalizing")]
                 + scale_diagnoses(lambda s: torch.softmax(masked * s, -1), 2))


def _random_scores(g, shape, dtype):
    return torch.randn(*shape, generator=g, dtype=dtype) * 2


SHAPES = [(1, 1), (5, 5), (3, 4, 4), (2, 3, 9, 9), (2, 7, 7)]


@pytest.mark.core
def test_causal_mask_against_reference(impl):
    """causal_mask(T) for T = 1..9 equals the reference's tril mask (exact; any dtype that holds 0 and 1)."""
    for t in range(1, 10):
        assert_close(impl.causal_mask(t), REF.causal_mask(t), atol=0, check_dtype=False, call=f"causal_mask({t})",
                     diagnoses=[(torch.triu(torch.ones(t, t), 1), MASK_COMPLEMENT),
                                (torch.triu(torch.ones(t, t)), "returned triu: the allowed positions are on and BELOW the diagonal")])


@pytest.mark.core
@pytest.mark.parametrize("name", ["mask_and_renormalize", "mask_future_scores", "causal_attention_weights"])
def test_random_against_reference(impl, name):
    """Leading batch dims, distinct rows, T in 1..9, float64 and float32; exact zeros / -inf above the diagonal."""
    g = torch.Generator().manual_seed(71)
    for dtype, atol in [(torch.float64, 1e-12), (torch.float32, 1e-6)]:
        for shape in SHAPES:
            x = _random_scores(g, shape, dtype)
            if name == "mask_and_renormalize":
                x = torch.softmax(x, -1)
            args = (x, 16) if name == "causal_attention_weights" else (x,)
            call = f"{name}({'attn_weights' if name == 'mask_and_renormalize' else 'attn_scores'} of shape {shape}" \
                   f"{', d_k=16' if len(args) == 2 else ''}) [{dtype}]"
            expected = getattr(REF, name)(*args)
            diag = [(x if name != "causal_attention_weights" else torch.softmax(x / 4, -1),
                     "output matches the unmasked attention: nothing was masked")]
            if name == "causal_attention_weights":
                masked = REF.mask_future_scores(x)
                diag += scale_diagnoses(lambda s: torch.softmax(masked * s, -1), 16)
            if name == "mask_and_renormalize":
                masked = x * torch.tril(torch.ones(shape[-1], shape[-1], dtype=dtype))
                diag += [(masked, "rows do not sum to 1: renormalize after masking"),
                         (torch.softmax(masked, -1), "applied softmax to the masked weights: the zeros still get weight")]
            got = getattr(impl, name)(*args)
            assert_close(got, expected, atol=atol, call=call, diagnoses=diag)
            if name == "mask_future_scores":
                above = torch.triu(torch.ones(shape[-1], shape[-1], dtype=torch.bool), 1)
                if not torch.isneginf(got[..., above]).all():
                    fail(call, "entries above the diagonal must be -inf")
            else:
                assert_exactly_zero_above_diagonal(got, call=call)
                assert_rows_sum_to_one(got, call=call, atol=1e-5)


@pytest.mark.edge
def test_inputs_not_modified(impl):
    """No in-place masking of the argument (masked_fill, not masked_fill_)."""
    g = torch.Generator().manual_seed(72)
    scores = _random_scores(g, (2, 5, 5), torch.float32)
    weights = torch.softmax(scores, -1)
    for name, args, arg_name in [("mask_future_scores", (scores,), "attn_scores"),
                                 ("mask_and_renormalize", (weights,), "attn_weights"),
                                 ("causal_attention_weights", (scores, 4), "attn_scores")]:
        call = f"{name}({arg_name} of shape (2, 5, 5){', d_k=4' if len(args) == 2 else ''})"
        _, after = impl.call_and_inputs(getattr(impl, name), *(a.clone() if isinstance(a, torch.Tensor) else a for a in args))
        assert_unchanged([args[0]], after[:1], call=call, names=[arg_name])
