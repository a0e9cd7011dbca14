"""Public tests for causal_attention (03_causal, section 3.5.3).

Run ``pytest exercises/03_causal/test_causal_attention.py`` or ``pytest exercises -k causal_attention``.
Expected values are the tensors printed in exercises/documents/notebook_causal_self_attention.txt
(document paths in the kata are relative to the repository root), or computed here from the
module's own weights with torch.nn.functional.scaled_dot_product_attention.
"""

import torch
import torch.nn.functional as F

from kata_checks import (assert_does_its_own_work, DROPOUT_BEFORE_SOFTMAX, MASK_BUFFER_COMPLEMENT, creation_order, DROPOUT_IN_EVAL, DROPOUT_NOT_APPLIED, differing,
                         MASK_CHANGED_BY_FORWARD, UNMASKED, assert_close, mask_errors, too_many_tokens,
                         assert_gradients_reach_every_parameter, assert_mask_buffer, assert_qkv_biases, assert_raises, call_checked,
                         call_in_float64, call_on_any_device, check_tensor, describe, fail, journey_batch, load, scale_diagnoses)
from kata_mistakes import (DROPOUT_ON_VALUES, FULL_CONTEXT_REFUSED, MASK_HIDES_THE_DIAGONAL, MASK_HIDES_THE_PAST,
                           MASK_SHOWS_THE_NEXT, SCALED_BY_D_IN, attention_grid)

# On the CPU (call_on_any_device's GPU run says its own causes): the mask's errors, read from the student's mask.
MASK_ERRORS = [mask_errors]


def _full_context_refused(module, x):
    """For an input of exactly context_length tokens: its ValueError is the off-by-one (>= for >) where the module
    takes the same input one token shorter."""
    try:
        module(x[:, :-1])
    except Exception:  # noqa: BLE001 - refuses shorter inputs too: not this mistake
        return []
    return [("ValueError:", FULL_CONTEXT_REFUSED)]


FULL_CONTEXT_ERRORS = [mask_errors, _full_context_refused]  # for calls with exactly context_length tokens


def _projections(ca, x):
    """Queries, keys, values made with the module's own nn.Linear layers (whatever their order)."""
    return ca.W_query(x), ca.W_key(x), ca.W_value(x)


def _attention(ca, x, scale=None, causal=True):
    q, k, v = _projections(ca, x)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)


def _diagnoses(ca, x):
    """Known mistakes, recomputed from the module's own weights (none if its layers are named otherwise)."""
    try:
        with torch.no_grad():
            (d_out, d_in), t = ca.W_key.weight.shape, x.shape[-2]
            grid = attention_grid(*_projections(ca, x), d_out**-0.5, torch.ones(t, t, dtype=torch.bool).triu(1))
            return differing([(_attention(ca, x, causal=False), UNMASKED), (_attention(ca, x, scale=d_in**-0.5), SCALED_BY_D_IN)]
                             + scale_diagnoses(lambda s: _attention(ca, x, scale=s), d_out, "d_out") + grid, _attention(ca, x))
    except (AttributeError, RuntimeError):
        return []


def test_causal_attention_seed_123_matches_the_document():
    m = load("causal_attention")
    # notebook_causal_self_attention.txt: CausalAttentionV1(d_in=3, d_out=2, context_length=6, dropout=0.0), seed 123
    row = torch.tensor(
        [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
    )
    batch = journey_batch()
    torch.manual_seed(123)
    ca = m.CausalAttention(3, 2, 6, 0.0)
    call = "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)"
    got = call_checked(ca, batch, call=call, errors=FULL_CONTEXT_ERRORS)
    assert_close(got, torch.stack((row, row)), atol=1e-4, call=call, diagnoses=_diagnoses(ca, batch), shown=creation_order(ca))


def test_causal_attention_matches_attention_computed_from_its_own_weights():
    m = load("causal_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(21))  # batch 2, 5 tokens < context_length 6
    for bias in (False, True):
        ca = m.CausalAttention(3, 4, 6, 0.0, qkv_bias=bias)
        call = f"CausalAttention(3, 4, context_length=6, dropout=0.0, qkv_bias={bias})(x of shape (2, 5, 3))"
        got = call_checked(ca, x, call=call, errors=MASK_ERRORS)
        with torch.no_grad():
            expected = _attention(ca, x)
        assert_close(got, expected, atol=1e-5, call=call, diagnoses=_diagnoses(ca, x))


def test_causal_attention_qkv_bias_gives_the_projections_biases():
    m = load("causal_attention")
    for bias in (True, False):
        assert_qkv_biases(m.CausalAttention(3, 4, 6, 0.0, qkv_bias=bias), bias,
                          call=f"CausalAttention(3, 4, 6, 0.0, qkv_bias={bias}).named_parameters()")


def test_causal_attention_mask_is_a_buffer():
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 5, 0.0)
    assert_mask_buffer(ca, torch.ones(5, 5).triu(1), call="CausalAttention(3, 4, context_length=5, dropout=0.0)",
                       diagnoses=[(torch.ones(5, 5).tril(), MASK_BUFFER_COMPLEMENT), (torch.ones(5, 5).tril(-1), MASK_HIDES_THE_PAST),
                                  (torch.ones(5, 5).triu(), MASK_HIDES_THE_DIAGONAL), (torch.ones(5, 5).triu(2), MASK_SHOWS_THE_NEXT)])


def test_causal_attention_runs_on_any_device():
    """A mask made in forward without ``device=`` and mixed with the scores fails here as it would on
    a GPU (kata_checks.call_on_any_device); a mask kept as a plain attribute fails
    test_causal_attention_mask_is_a_buffer."""
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 6, 0.0)
    call = "CausalAttention(3, 4, 6, 0.0)(x of shape (2, 5, 3))"
    got = call_on_any_device(ca, torch.rand(2, 5, 3), call=call, errors=MASK_ERRORS)
    check_tensor(got, call=call, shape=(2, 5, 4))


def test_causal_attention_ignores_future_tokens():
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 6, 0.0)
    g = torch.Generator().manual_seed(1)
    x = torch.rand(2, 6, 3, generator=g)
    changed = x.clone()
    changed[:, 4:] = torch.rand(2, 2, 3, generator=g)  # change only tokens 4 and 5
    call = "ca(x)[:, :4] vs ca(x with tokens 4 and 5 changed)[:, :4]"
    first = call_checked(ca, x, call="ca(x)", errors=FULL_CONTEXT_ERRORS)
    assert_close(ca(changed)[:, :4], first[:, :4].detach(), atol=1e-6, call=call,
                 note="tokens 0-3 must not see tokens 4 and 5: mask the future before the softmax")
    fewer = call_checked(ca, x[:, :4], call="ca(x[:, :4]) (fewer tokens than context_length)", errors=MASK_ERRORS)
    assert_close(fewer, first[:, :4].detach(), atol=1e-6, call="ca(x[:, :4]) vs ca(x)[:, :4]")
    one = call_checked(ca, x[:, :1], call="ca(x[:, :1]) (a single token)", errors=MASK_ERRORS)
    assert_close(one, first[:, :1].detach(), atol=1e-6, call="ca(x[:, :1]) vs ca(x)[:, :1]")


def test_causal_attention_takes_a_longer_input_after_a_shorter_one():
    """The docstring's rule: the forward cuts a view of the mask for each call and never changes the buffer."""
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 6, 0.0)
    x = torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(24))
    built = ca.mask.detach().clone().float() if isinstance(getattr(ca, "mask", None), torch.Tensor) else None
    for t in (3, 6):
        call = f"ca(x[:, :{t}])" + (" after ca(x[:, :3])" if t == 6 else "") + " with ca = CausalAttention(3, 4, 6, 0.0)"
        got = call_checked(ca, x[:, :t], call=call, errors=FULL_CONTEXT_ERRORS if t == 6 else MASK_ERRORS)
        mask = getattr(ca, "mask", None)
        if built is not None and not (isinstance(mask, torch.Tensor) and mask.shape == built.shape and torch.equal(mask.float(), built)):
            fail(call + "; then ca.mask", f"is {describe(mask)}; before the forward it was the {tuple(built.shape)} mask it was built with",
                 f"likely cause: {MASK_CHANGED_BY_FORWARD}")
        with torch.no_grad():
            expected = _attention(ca, x[:, :t])
        assert_close(got, expected, atol=1e-5, call=call, diagnoses=_diagnoses(ca, x[:, :t]))


def test_causal_attention_rejects_more_tokens_than_context_length():
    m = load("causal_attention")
    ca, x = m.CausalAttention(3, 2, 4, 0.0), torch.rand(1, 5, 3)
    assert_raises(ValueError, ca, x, call="CausalAttention(3, 2, context_length=4, dropout=0.0)(x with 5 tokens)",
                  why=lambda _: too_many_tokens(ca, x, 4))


def test_causal_attention_applies_dropout_to_the_weights_in_training_mode_only():
    m = load("causal_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(22))
    ca = m.CausalAttention(3, 4, 6, 0.5)
    call = "CausalAttention(3, 4, 6, dropout=0.5)"
    with torch.no_grad():
        no_dropout = _attention(ca, x)
        q, k, v = _projections(ca, x)
        weights = torch.softmax((q @ k.transpose(1, 2) / 2.0).masked_fill(torch.ones(5, 5).triu(1).bool(), -torch.inf), -1)
        torch.manual_seed(5)
        expected = F.dropout(weights, 0.5, training=True) @ v  # the same draws as nn.Dropout(0.5) under seed 5
        torch.manual_seed(5)
        on_values = weights @ F.dropout(v, 0.5, training=True)
        torch.manual_seed(5)  # the draws on the scores, before the mask and the softmax
        scores = F.dropout(q @ k.transpose(1, 2) / 2.0, 0.5, training=True).masked_fill(torch.ones(5, 5).triu(1).bool(), -torch.inf)
    torch.manual_seed(5)
    got = ca(x)
    assert_close(got, expected, atol=1e-5, call=f"torch.manual_seed(5); {call}(x) in training mode",
                 diagnoses=[(no_dropout, DROPOUT_NOT_APPLIED), (on_values, DROPOUT_ON_VALUES),
                            (torch.softmax(scores, -1) @ v, DROPOUT_BEFORE_SOFTMAX)])
    ca.eval()
    assert_close(ca(x), no_dropout, atol=1e-5, call=f"{call}.eval()(x)", diagnoses=[(expected, DROPOUT_IN_EVAL)])


def test_causal_attention_moved_to_float64_computes_in_float64_and_leaves_x_unchanged():
    """The README's rules: a module moved with .to(torch.float64) computes in float64; no argument modified in place."""
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 6, 0.0).to(torch.float64)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(23), dtype=torch.float64)
    call_in_float64(lambda x: call_checked(ca, x, call="ca(x)", errors=MASK_ERRORS), x,
                    call="CausalAttention(3, 4, 6, 0.0).to(torch.float64)(x of shape (2, 5, 3))", shapes=[(2, 5, 4)], unchanged=["x"])


def test_causal_attention_gradients_reach_every_parameter():
    m = load("causal_attention")
    ca = m.CausalAttention(3, 4, 6, 0.0, qkv_bias=True)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(28))
    assert_gradients_reach_every_parameter(ca, x, call="CausalAttention(3, 4, 6, 0.0, qkv_bias=True)(x).sum().backward()",
                                           errors=MASK_ERRORS)


def test_causal_attention_does_its_own_work():
    """CausalAttention: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("causal_attention")
