"""Hidden tests for 01_simple_attention/attention_scores (section 3.3.1-3.3.2).

COVERS: attention_scores(inputs, query) against the printed scores of 000 (query "journey") and
003 (query = 3rd token); attention_score_matrix against both documents' printed 6x6 matrices;
both against the reference on seeded random inputs (float32 and float64, asymmetric shapes,
leading batch dims for the matrix), and inputs are never modified in place.
Tolerances: printed values atol 1e-4; random vs reference atol 1e-5 (float32) / 1e-10 (float64); rtol 0.
attention_scores of float64 inputs may return float32 (the documents' loop fills torch.empty(inputs.shape[0])):
such a result is compared at atol 1e-5; attention_score_matrix keeps the dtype (one matrix product).
"""

import pytest
import torch

from against_reference import float32_loop_tolerance
from kata_checks import assert_close, assert_unchanged
from reference import printed, ref

P = printed()
REF = ref("attention_scores")


PRINTED_SCORES = {
    "000-journey-query2": (P.JOURNEY, 1, "000/3.3.1/scores_query2"),
    "003-random-words-query3": (P.RANDOM_WORDS, 2, "003/In4/scores_query3"),
}


@pytest.mark.printed
@pytest.mark.parametrize("case", PRINTED_SCORES)
def test_attention_scores_printed(impl, case):
    """Printed scores of one query against every token; atol 1e-4."""
    rows, q, key = PRINTED_SCORES[case]
    inputs = torch.tensor(rows)
    got = impl.attention_scores(inputs, inputs[q])
    assert_close(got, P.value(key), call=f"attention_scores(inputs, query=inputs[{q}])  [{P.PRINTED[key]['doc']}]",
                 atol=P.atol(key), diagnoses=[(inputs @ inputs.T, "returned all-pairs scores instead of one query's")])


PRINTED_MATRIX = {
    "000-journey": (P.JOURNEY, "000/3.3.2/score_matrix"),
    "003-random-words": (P.RANDOM_WORDS, "003/In9/score_matrix"),
}


@pytest.mark.printed
@pytest.mark.parametrize("case", PRINTED_MATRIX)
def test_attention_score_matrix_printed(impl, case):
    """Printed 6x6 score matrices; atol 1e-4."""
    rows, key = PRINTED_MATRIX[case]
    inputs = torch.tensor(rows)
    got = impl.attention_score_matrix(inputs)
    assert_close(got, P.value(key), call=f"attention_score_matrix(inputs)  [{P.PRINTED[key]['doc']}]", atol=P.atol(key),
                 diagnoses=[(torch.softmax(inputs @ inputs.T, -1), "returned the softmax weights, not the raw scores")])


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_attention_scores_random_against_reference(impl, dtype):
    """Random (T, d) inputs, T in 1..9, d != T, a query that is NOT one of the rows; inputs untouched.

    float64 inputs may give a float32 result, compared at float32 tolerance (atol 1e-5): the documents' loop
    fills ``torch.empty(inputs.shape[0])``, which is float32 whatever the input, and nothing the student is
    given asks for float64 here. A float64 result is compared at atol 1e-10."""
    g = torch.Generator().manual_seed(11)
    for t, d in [(1, 3), (5, 4), (9, 2)]:
        inputs = torch.randn(t, d, generator=g, dtype=dtype)
        query = torch.randn(d, generator=g, dtype=dtype)
        call = f"attention_scores(inputs of shape ({t}, {d}), query of shape ({d},)) [{dtype}]"
        got, after = impl.call_and_inputs(impl.attention_scores, inputs.clone(), query.clone())
        assert_unchanged([inputs, query], after, call=call, names=["inputs", "query"])
        assert_close(got, REF.attention_scores(inputs, query), call=call, **float32_loop_tolerance(got, dtype),
                     diagnoses=[(inputs @ inputs[0], "used a row of inputs as the query instead of the query argument")])


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_attention_score_matrix_batched_against_reference(impl, dtype):
    """Leading batch dims: (3, T, d) and (2, 2, T, d) with distinct rows; inputs untouched."""
    g = torch.Generator().manual_seed(12)
    atol = 1e-5 if dtype == torch.float32 else 1e-10
    for shape in [(7, 3), (3, 5, 4), (2, 2, 4, 6)]:
        inputs = torch.randn(*shape, generator=g, dtype=dtype)
        call = f"attention_score_matrix(inputs of shape {shape}) [{dtype}]"
        got, after = impl.call_and_inputs(impl.attention_score_matrix, inputs.clone())
        assert_unchanged([inputs], after, call=call, names=["inputs"])
        assert_close(got, REF.attention_score_matrix(inputs), call=call, atol=atol)
