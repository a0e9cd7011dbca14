"""Public tests for attention_scores (01_simple_attention, section 3.3).

Run ``pytest exercises/01_simple_attention/test_attention_scores.py`` or ``pytest exercises -k attention_scores``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or computed here with plain torch ops.
"""

import torch

from kata_checks import assert_close, call_checked, call_in_float64, error_of, journey_inputs, load, transpose_errors
from kata_mistakes import ELEMENTWISE_NO_SUM, SCORES_AS_A_COLUMN, SCORES_OF_FEATURES, SIZED_BY_FEATURES, SUMMED_OVER_TOKENS

# chapter_notes_3.1-3.6.txt, section 3.3.1: the scores of query x(2) = "journey"
SCORES_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
# chapter_notes_3.1-3.6.txt, section 3.3.2: inputs @ inputs.T
SCORE_MATRIX = torch.tensor(
    [
        [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
        [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
        [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
        [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
        [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
        [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
    ]
)


def test_attention_scores_of_journey_match_the_document():
    m = load("attention_scores")
    inputs = journey_inputs()
    query = inputs[1]
    call, (t, d) = "attention_scores(inputs, inputs[1])  [chapter_notes_3.1-3.6.txt, 3.3.1]", inputs.shape
    sized_by_d = error_of(lambda: torch.empty(d)[d]) if d < t else None  # the loop's first token past d
    assert_close(call_checked(m.attention_scores, inputs, query, call=call, errors=[(sized_by_d, SIZED_BY_FEATURES)]),
                 SCORES_2, atol=1e-4, call=call,
                 diagnoses=[((inputs * query).sum(0), SUMMED_OVER_TOKENS), (inputs * query, ELEMENTWISE_NO_SUM),
                            ((inputs @ query)[:, None], SCORES_AS_A_COLUMN)])


def test_attention_scores_matrix_matches_the_document():
    m = load("attention_scores")
    inputs, call = journey_inputs(), "attention_score_matrix(inputs)  [chapter_notes_3.1-3.6.txt, 3.3.2]"
    got = call_checked(m.attention_score_matrix, inputs, call=call, errors=transpose_errors(inputs, inputs))
    assert_close(got, SCORE_MATRIX, atol=1e-4, call=call, diagnoses=[(inputs.T @ inputs, SCORES_OF_FEATURES)])


def test_attention_scores_matrix_keeps_a_batch_dimension():
    m = load("attention_scores")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(11))  # batch 2, 5 tokens, d 3
    call = "attention_score_matrix(x) with x of shape (2, 5, 3)"
    got = call_checked(m.attention_score_matrix, x, call=call, errors=transpose_errors(x, x))
    expected = torch.einsum("bid,bjd->bij", x, x)  # entry [b, i, j] = x[b, i] · x[b, j]
    assert_close(got, expected, atol=1e-5, call=call, diagnoses=[(x.transpose(-2, -1) @ x, SCORES_OF_FEATURES)])


def test_attention_scores_keep_float64_and_leave_their_inputs_unchanged():
    """The README's rules: no argument modified in place; attention_score_matrix keeps float64 and two batch
    dimensions (attention_scores may return float32, as the documents' torch.empty loop does)."""
    m = load("attention_scores")
    g = torch.Generator().manual_seed(14)
    x, query = torch.randn(5, 3, generator=g, dtype=torch.float64), torch.randn(3, generator=g, dtype=torch.float64)
    call_in_float64(m.attention_scores, x, query, call="attention_scores(x (5, 3), query (3,)) [float64]", shapes=[(5,)],
                    unchanged=["inputs", "query"], any_float=True)
    x = torch.randn(2, 2, 4, 3, generator=g, dtype=torch.float64)
    call_in_float64(m.attention_score_matrix, x, call="attention_score_matrix(x of shape (2, 2, 4, 3)) [float64]",
                    shapes=[(2, 2, 4, 4)], unchanged=["inputs"])
