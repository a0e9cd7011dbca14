"""Hidden tests for 02_trainable_weights/scaled_attention (section 3.4.1).

COVERS: scaled_dot_product(queries, keys, values) -> (context, attn_weights) against the printed
weights/context of 000/004 (seed-123 torch.rand projections, query "journey") and 003 (seed-123
torch.randn projections, query = 3rd token), built in the test process; against the reference on
random inputs with T_q != T_k, d_k != d_v, d_k up to 16 (a wrong 1/√d_k shows), no / one / two
leading batch dims, float32 and float64; rows of the weights sum to 1; inputs never modified.
Tolerances: printed atol 1e-4; random vs reference atol 1e-5 (float32) / atol 1e-7 + rtol 1e-7 (float64: float32
precision, the notebook's torch.sqrt(torch.tensor(d_k)) is √d_k rounded to float32; the dtype must be float64).
"""

import pytest
import torch

from kata_checks import WRONG_DIM, no_scale, assert_close, assert_rows_sum_to_one, assert_unchanged, describe, fail, scale_diagnoses
from reference import printed, ref

P = printed()
REF = ref("scaled_attention")
# float64: float32 precision (rtol 1e-7 plus atol 1e-7), not 1e-10: the documents' notebook scales by
# torch.sqrt(torch.tensor(d_k)), √d_k rounded to float32; a result that is not float64 fails the dtype check.
TOLERANCE = {torch.float32: {"atol": 1e-5}, torch.float64: {"atol": 1e-7, "rtol": 1e-7}}


def _unpack(got, call):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        fail(call, f"returned {describe(got)}; expected a tuple (context, attn_weights) of two tensors")
    return got


def _alternatives(q, k, v):
    """Known mistakes: a wrong scale, softmax over the wrong dim."""
    def with_scale(s):
        w = torch.softmax(q @ k.transpose(-2, -1) * s, dim=-1)
        return w @ v, w
    wrong_dim = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-2) if q.shape[-2] == k.shape[-2] else None
    return with_scale, wrong_dim


def _check(got, q, k, v, call, tolerance):
    context, weights = _unpack(got, call)
    exp_context, exp_weights = REF.scaled_dot_product(q, k, v)
    with_scale, wrong_dim = _alternatives(q, k, v)
    d_k = k.shape[-1]
    w_diag = scale_diagnoses(lambda s: with_scale(s)[1], d_k)
    if wrong_dim is not None:
        w_diag.append((wrong_dim, WRONG_DIM))
    assert_close(weights, exp_weights, call=call + " -> attn_weights", **tolerance, diagnoses=w_diag)
    assert_close(context, exp_context, call=call + " -> context", **tolerance,
                 diagnoses=scale_diagnoses(lambda s: with_scale(s)[0], d_k))


@pytest.mark.printed
def test_printed_seed123_rand_query2(impl):
    """000 3.4.1 / 004 In[30], In[33]: weights [0.1500, ...], context [0.3061, 0.8210] (row 2 of a full call too)."""
    inputs = P.journey()
    wq, wk, wv = P.rand_projections(123)
    keys, values = inputs @ wk, inputs @ wv
    call = "scaled_dot_product(inputs[1:2] @ W_query, inputs @ W_key, inputs @ W_value)  [000 3.4.1, 004; seed 123 torch.rand]"
    context, weights = _unpack(impl.scaled_dot_product(inputs[1:2] @ wq, keys, values), call)
    assert_close(weights, P.value("000/3.4.1/weights_query2").reshape(1, 6), call=call + " -> attn_weights", atol=1e-4,
                 diagnoses=[(torch.softmax(inputs[1:2] @ wq @ keys.T, -1), no_scale(2))])
    assert_close(context, P.value("000/3.4.1/context_query2").reshape(1, 2), call=call + " -> context", atol=1e-4)
    call = "scaled_dot_product(inputs @ W_query, inputs @ W_key, inputs @ W_value)[.][1]  [004; all six queries]"
    context, weights = _unpack(impl.scaled_dot_product(inputs @ wq, keys, values), call)
    assert_close(weights[1], P.value("000/3.4.1/weights_query2"), call=call + " -> attn_weights[1]", atol=1e-4)
    assert_close(context[1], P.value("000/3.4.1/context_query2"), call=call + " -> context[1]", atol=1e-4)


@pytest.mark.printed
def test_printed_seed123_randn_query3(impl):
    """003 In[14], In[15]: the second input set, query = 3rd token, torch.randn projections; atol 1e-4."""
    inputs = torch.tensor(P.RANDOM_WORDS)
    wq, wk, wv = P.rand_projections(123, randn=True)
    assert torch.allclose(inputs[2] @ wq, torch.tensor(P.PRINTED["003/In10/query_3_randn"]["value"]), atol=1e-4), "fixture drift"
    call = "scaled_dot_product(inputs[2:3] @ W_q, inputs @ W_k, inputs @ W_v)  [003 In[14]-[15]; seed 123 torch.randn]"
    context, weights = _unpack(impl.scaled_dot_product(inputs[2:3] @ wq, inputs @ wk, inputs @ wv), call)
    assert_close(weights, P.value("003/In14/weights_query3_randn").reshape(1, 6), call=call + " -> attn_weights", atol=1e-4)
    assert_close(context, P.value("003/In15/context_query3_randn").reshape(1, 2), call=call + " -> context", atol=1e-4)


SHAPES = [  # (batch dims, T_q, T_k, d_k, d_v)
    ((), 3, 5, 4, 6),
    ((), 1, 1, 2, 3),
    ((2,), 4, 4, 8, 3),
    ((3,), 6, 2, 16, 5),
    ((2, 3), 2, 7, 9, 4),
]


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_random_against_reference(impl, dtype):
    """Asymmetric shapes, distinct batch rows, no / one / two leading batch dims."""
    g = torch.Generator().manual_seed(41)
    for batch, tq, tk, dk, dv in SHAPES:
        q = torch.randn(*batch, tq, dk, generator=g, dtype=dtype)
        k = torch.randn(*batch, tk, dk, generator=g, dtype=dtype)
        v = torch.randn(*batch, tk, dv, generator=g, dtype=dtype)
        call = f"scaled_dot_product(queries {tuple(q.shape)}, keys {tuple(k.shape)}, values {tuple(v.shape)}) [{dtype}]"
        _check(impl.scaled_dot_product(q, k, v), q, k, v, call, TOLERANCE[dtype])


@pytest.mark.edge
def test_weights_rows_sum_to_one(impl):
    """Large scores (d_k = 64, values of size 3): every row of attn_weights sums to 1 and is >= 0; atol 1e-5."""
    g = torch.Generator().manual_seed(42)
    q, k, v = (torch.randn(2, 5, 64, generator=g) * 3 for _ in range(3))
    call = "scaled_dot_product(queries (2, 5, 64) * 3, keys (2, 5, 64) * 3, values (2, 5, 64) * 3)"
    context, weights = _unpack(impl.scaled_dot_product(q, k, v), call)
    assert_rows_sum_to_one(weights, call=call + " -> attn_weights")
    if (weights < 0).any():
        fail(call, "attention weights must be >= 0")


@pytest.mark.edge
def test_inputs_not_modified(impl):
    """queries, keys and values are the same after the call (no in-place ops on them)."""
    g = torch.Generator().manual_seed(43)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 2, generator=g)
    call = "scaled_dot_product(queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 2))"
    _, after = impl.call_and_inputs(impl.scaled_dot_product, q.clone(), k.clone(), v.clone())
    assert_unchanged([q, k, v], after, call=call, names=["queries", "keys", "values"])
