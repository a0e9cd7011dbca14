"""Hidden tests for 01_simple_attention/normalization (section 3.3.1).

COVERS: normalize_by_sum, softmax_naive and softmax_stable against the printed weights of 000
(query "journey"), 003 (query = 3rd token) and 004 (the softmax sharpening example), each on what the
documents apply it to (softmax_naive on one query's scores only, as the documents' own code); all three
against the reference along every dim of a random (3, 4, 5) tensor in float32 and float64; the
inputs are never modified; softmax_stable on scores around ±1e3 and on rows holding -inf
(softmax_naive's overflow is documented, not tested).
Tolerances: printed values atol 1e-4; random vs reference atol 1e-6 (float32) / 1e-12 (float64); rtol 0.
"""

import pytest
import torch

from kata_checks import DIM_IGNORED, assert_close, assert_softmax_has_no_nan, assert_unchanged, fail
from reference import printed, ref

P = printed()
REF = ref("normalization")


def _assert_printed(got, call: str, key: str, diagnosis) -> None:
    """``got``, returned by ``call``, is the printed ``key``; ``diagnosis`` is (the result of a known mistake, its message)."""
    assert_close(got, P.value(key), atol=P.atol(key), call=f"{call}  [{P.PRINTED[key]['doc']}]", diagnoses=[diagnosis])


def _assert_printed_per_query(impl, name: str, keys: tuple[str, str], mistake) -> None:
    """``name`` of the printed scores of 000's query "journey" and of 003's 3rd token are the printed ``keys``;
    ``mistake(scores)`` is (the result of a known mistake, its message)."""
    for scores_key, key in zip(("000/3.3.1/scores_query2", "003/In4/scores_query3"), keys):
        scores = P.value(scores_key)
        _assert_printed(getattr(impl, name)(scores), f"{name}({scores.tolist()})", key, mistake(scores))


@pytest.mark.printed
def test_normalize_by_sum_printed(impl):
    """000 tip [0.1455, ...] and 003 In[5] [0.1452, ...]; atol 1e-4."""
    _assert_printed_per_query(impl, "normalize_by_sum", ("000/3.3.1/sum_normalized_query2", "003/In5/sum_normalized_query3"),
                              lambda s: (torch.softmax(s, -1), "computed a softmax: divide by the plain sum instead"))


@pytest.mark.printed
def test_softmax_naive_printed(impl):
    """000 [0.1385, ...] and 003 In[6] [0.1509, ...]: the one-query score vectors the documents apply their
    softmax_naive to (never a matrix: 000 3.3.2's weight matrix is torch.softmax's, and the documents' own
    softmax_naive sums over the whole tensor; dims are the core test's); atol 1e-4."""
    _assert_printed_per_query(impl, "softmax_naive", ("000/3.3.1/softmax_query2", "003/In6/softmax_query3"),
                              lambda s: (s / s.sum(), "divided by the sum of the scores: exponentiate first"))


@pytest.mark.printed
def test_softmax_stable_printed(impl):
    """004 sharpening example (plain and ×8), 003 In[6] and 003 In[9]'s 6x6 weights; atol 1e-4."""
    sharpen = torch.tensor(P.SHARPEN)
    for scores, key in [(sharpen, "004/In31/softmax_plain"), (sharpen * 8, "004/In31/softmax_times8"),
                        (P.value("003/In4/scores_query3"), "003/In6/softmax_query3")]:
        _assert_printed(impl.softmax_stable(scores), f"softmax_stable({[round(v, 4) for v in scores.tolist()]})", key,
                        (torch.exp(scores - scores.max()), "forgot to divide by the sum after subtracting the max"))
    inputs = torch.tensor(P.RANDOM_WORDS)
    scores = inputs @ inputs.T
    assert_close(impl.softmax_stable(scores, 1), P.value("003/In9/weight_matrix"), atol=1e-4,
                 call="softmax_stable(inputs @ inputs.T, dim=1)  [003 In[9]]",
                 diagnoses=[(scores - scores.amax(1, keepdim=True), "forgot to exponentiate after subtracting the max"),
                            (torch.exp(scores - scores.max()) / torch.exp(scores - scores.max()).sum(), "normalized over the whole matrix instead of along dim")])


@pytest.mark.core
@pytest.mark.parametrize("name", ["normalize_by_sum", "softmax_naive", "softmax_stable"])
def test_every_dim_and_dtype_against_reference(impl, name):
    """Random positive (3, 4, 5) scores, dim = 0, 1, 2, -1 and the default, float32 and float64; input untouched."""
    g = torch.Generator().manual_seed(21)
    for dtype, atol in [(torch.float32, 1e-6), (torch.float64, 1e-12)]:
        scores = torch.rand(3, 4, 5, generator=g, dtype=dtype) * 3 + 0.1
        for dim in [0, 1, 2, -1, None]:
            args = () if dim is None else (dim,)
            call = f"{name}(scores of shape (3, 4, 5){'' if dim is None else f', dim={dim}'}) [{dtype}]"
            got, after = impl.call_and_inputs(getattr(impl, name), scores.clone(), *args)
            assert_unchanged([scores], after[:1], call=call, names=["scores"])
            d = -1 if dim is None else dim
            wrong = [(getattr(REF, name)(scores, other), f"normalized along dim {other} instead of dim {d}: {DIM_IGNORED}")
                     for other in range(3) if other != d % 3]
            assert_close(got, getattr(REF, name)(scores, d), call=call, atol=atol, diagnoses=wrong)


@pytest.mark.edge
def test_softmax_stable_large_scores(impl):
    """Scores around ±1e3 (exp overflows without the max shift), rows whose maxima differ by 2000 (the
    maximum of the whole tensor underflows the row of -1000s: each row's own must be subtracted); atol 1e-6."""
    scores = torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0], [1000.0, 1000.0, 1000.0]])
    expected = torch.softmax(scores.double(), dim=-1).float()
    got = impl.softmax_stable(scores)
    call = "softmax_stable([[1000, 1001, 999], [-1000, -1002, -1001], [1000, 1000, 1000]])"
    assert_softmax_has_no_nan(got, scores, dim=-1, call=call)
    assert_close(got, expected, call=call, atol=1e-6)


@pytest.mark.edge
def test_softmax_stable_rows_with_neg_inf(impl):
    """-inf entries get weight exactly 0; a row [1000, 1000, -inf] is [0.5, 0.5, 0]; float64 too."""
    for dtype in [torch.float32, torch.float64]:
        scores = torch.tensor([[1000.0, 1000.0, -torch.inf], [0.3, -torch.inf, -torch.inf], [-5.0, 2.0, -torch.inf]], dtype=dtype)
        call = f"softmax_stable([[1000, 1000, -inf], [0.3, -inf, -inf], [-5, 2, -inf]]) [{dtype}]"
        got = impl.softmax_stable(scores)
        assert_softmax_has_no_nan(got, scores, dim=-1, call=call)
        assert_close(got, torch.softmax(scores, dim=-1), call=call, atol=1e-6)
        if not (got[torch.isinf(scores)] == 0).all():
            fail(call, f"weights at -inf scores must be exactly 0; got {got.tolist()}")
