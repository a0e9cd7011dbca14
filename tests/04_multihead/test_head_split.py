"""Hidden tests for 04_multihead/head_split (section 3.6.2).

COVERS: split_heads layout (head h holds features h*hd:(h+1)*hd of every token; the docstring
example; a bare .view(b, h, T, hd) fails) against the reference, float32/float64, asymmetric
shapes; merge_heads against the reference and the split/merge round trip; per_head_scores
against 000's printed ``a @ a.transpose(2, 3)`` and, for queries != keys, 004's seed-123 score
matrix, 001's seed-789 scores and 003's randn scores (as one-head 4-D inputs), and the reference
on random inputs; d_out not divisible by num_heads raises ValueError.
Tolerances: split/merge exact (atol 0); printed atol 1e-4; random scores atol 1e-5 / 1e-10; rtol 0.
"""

import pytest
import torch

from kata_checks import assert_close, assert_raises, not_divisible
from reference import printed, ref

P = printed()
REF = ref("head_split")


def _bare_view(x, h):
    b, t, d = x.shape
    return x.reshape(b, h, t, d // h)


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_split_heads_layout(impl, dtype):
    """Docstring example, then (2, 3, 8) / 2 heads, (3, 5, 6) / 3 heads, (1, 1, 4) / 4 heads vs the reference (exact)."""
    x = torch.arange(8.0, dtype=dtype).reshape(1, 2, 4)
    assert_close(impl.split_heads(x, 2), torch.tensor([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]], dtype=dtype), atol=0,
                 call="split_heads(torch.arange(8.).reshape(1, 2, 4), num_heads=2)",
                 diagnoses=[(_bare_view(x, 2), "a bare .view(b, num_heads, T, head_dim) mixes tokens into heads: "
                                               "view as (b, T, num_heads, head_dim), then transpose(1, 2)")])
    g = torch.Generator().manual_seed(121)
    for shape, h in [((2, 3, 8), 2), ((3, 5, 6), 3), ((1, 1, 4), 4), ((2, 4, 6), 1)]:
        x = torch.randn(*shape, generator=g, dtype=dtype)
        assert_close(impl.split_heads(x, h), REF.split_heads(x, h), atol=0, call=f"split_heads(x of shape {shape}, num_heads={h}) [{dtype}]",
                     diagnoses=[(_bare_view(x, h), "a bare .view(b, num_heads, T, head_dim) mixes tokens into heads: "
                                                   "head h must hold features h*head_dim:(h+1)*head_dim of every token")])


@pytest.mark.core
def test_merge_heads_and_round_trip(impl):
    """merge_heads equals the reference; merge_heads(split_heads(x, h)) == x exactly; float64 kept."""
    g = torch.Generator().manual_seed(122)
    for shape, h in [((2, 3, 8), 2), ((3, 5, 6), 3), ((1, 1, 4), 4)]:
        y = torch.randn(shape[0], h, shape[1], shape[2] // h, generator=g, dtype=torch.float64)
        assert_close(impl.merge_heads(y), REF.merge_heads(y), atol=0, call=f"merge_heads(x of shape {tuple(y.shape)})",
                     diagnoses=[(y.reshape(shape), "a bare .reshape(b, T, d_out) without moving the head axis back (transpose(1, 2)) first")])
        x = torch.randn(*shape, generator=g)
        assert_close(impl.merge_heads(impl.split_heads(x, h)), x, atol=0,
                     call=f"merge_heads(split_heads(x of shape {shape}, num_heads={h}))")


PRINTED_SCORES = ["000-a-at-aT", "004-seed123-rand", "001-seed789", "003-seed123-randn"]


def _printed_case(case):
    if case == "000-a-at-aT":
        a = torch.tensor(P.A_4D)
        return a, a, P.value("000/3.6.2/a_at_aT"), "per_head_scores(a, a)  [000 3.6.2, a @ a.transpose(2, 3)]"
    if case == "004-seed123-rand":
        x = P.journey()
        wq, wk, _ = P.rand_projections(123)
        q, k, key = x @ wq, x @ wk, "004/In29/score_matrix"
    elif case == "001-seed789":
        q, k, _ = P.linear_projections_789(P.journey())
        key = "001/In822/scores_789"
    else:
        x = torch.tensor(P.RANDOM_WORDS)
        wq, wk, _ = P.rand_projections(123, randn=True)
        q, k, key = x[2:3] @ wq, x @ wk, "003/In12/scores_query3_randn"
    expected = P.value(key).reshape(1, 1, q.shape[0], k.shape[0])
    return q[None, None], k[None, None], expected, f"per_head_scores(queries[None, None], keys[None, None])  [{key}]"


@pytest.mark.printed
@pytest.mark.parametrize("case", PRINTED_SCORES)
def test_per_head_scores_printed(impl, case):
    """The documents' printed score matrices, as (1, 1, T_q, T_k) per-head scores; atol 1e-4."""
    q, k, expected, call = _printed_case(case)
    got = impl.per_head_scores(q, k)
    assert_close(got, expected, atol=1e-4, call=call)
    if case == "004-seed123-rand":  # the same row, printed on its own in 000 3.4.1 / 004 In[28]
        assert_close(got[0, 0, 1], P.value("000/3.4.1/scores_query2"), atol=1e-4, call=call + "[0, 0, 1]  [000 3.4.1]")


@pytest.mark.core
def test_per_head_scores_random_against_reference(impl):
    """(2, 3, 4, 5) queries vs (2, 3, 6, 5) keys, distinct heads and batch rows, float32 and float64."""
    g = torch.Generator().manual_seed(123)
    for dtype, atol in [(torch.float32, 1e-5), (torch.float64, 1e-10)]:
        q = torch.randn(2, 3, 4, 5, generator=g, dtype=dtype)
        k = torch.randn(2, 3, 6, 5, generator=g, dtype=dtype)
        assert_close(impl.per_head_scores(q, k), REF.per_head_scores(q, k), atol=atol,
                     call=f"per_head_scores(queries (2, 3, 4, 5), keys (2, 3, 6, 5)) [{dtype}]")
        q2 = torch.randn(2, 3, 5, 5, generator=g, dtype=dtype)
        k2 = torch.randn(2, 3, 5, 5, generator=g, dtype=dtype)
        assert_close(impl.per_head_scores(q2, k2), REF.per_head_scores(q2, k2), atol=atol,
                     call=f"per_head_scores(queries (2, 3, 5, 5), keys (2, 3, 5, 5)) [{dtype}]",
                     diagnoses=[(k2 @ q2.transpose(2, 3), "computed keys @ queries.T: looks transposed"),
                                (q2 @ k2, "multiplied by keys without transposing the last two dims")])


@pytest.mark.edge
def test_split_heads_not_divisible_raises(impl):
    """d_out = 6 with 4 heads, d_out = 5 with 2 heads: ValueError."""
    g = torch.Generator().manual_seed(124)
    for d, h in [(6, 4), (5, 2)]:
        assert_raises(ValueError, impl.split_heads, torch.randn(2, 3, d, generator=g), h,
                      call=f"split_heads(x of shape (2, 3, {d}), num_heads={h})",
                      why=not_divisible)
