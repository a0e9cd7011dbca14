"""Public tests for context_vectors (01_simple_attention, sections 3.3.1-3.3.2).

Run ``pytest exercises/01_simple_attention/test_context_vectors.py`` or ``pytest exercises -k context_vectors``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or computed here with plain torch ops.
"""

import torch

from kata_checks import (NO_SOFTMAX, SIMPLE_NOT_SCALED, WRONG_DIM, transpose_errors, assert_close, call_checked,
                         call_in_float64, error_of, journey_inputs, load)
from kata_mistakes import RETURNED_THE_WEIGHTS, SIZED_BY_TOKENS, SUM_NOT_SOFTMAX

# chapter_notes_3.1-3.6.txt, section 3.3.1: z(2) = "tensor([0.4419, 0.6515, 0.5683])"
Z_2 = torch.tensor([0.4419, 0.6515, 0.5683])


def test_context_vectors_one_query_matches_the_document():
    m = load("context_vectors")
    inputs = journey_inputs()
    weights = torch.softmax(inputs @ inputs[1], dim=0)
    call = "context_vector(inputs, softmax(inputs @ inputs[1]))  [chapter_notes_3.1-3.6.txt, 3.3.1]"
    sized_by_t = error_of(lambda: torch.zeros(weights.shape).add_(inputs[0]))  # (T,) += a (d,) row
    assert_close(call_checked(m.context_vector, inputs, weights, call=call, errors=[(sized_by_t, SIZED_BY_TOKENS)]), Z_2, atol=1e-4,
                 call=call,
                 diagnoses=[(inputs.sum(0), "summed the inputs without weighting them")])


def test_context_vectors_all_tokens_match_the_document():
    m = load("context_vectors")
    inputs = journey_inputs()
    got = m.context_vectors(inputs)
    call = "context_vectors(inputs) with inputs of shape (6, 3)"
    assert_close(got[1] if isinstance(got, torch.Tensor) and got.shape == (6, 3) else got, Z_2, atol=1e-4,
                 call=call + "[1]  [chapter_notes_3.1-3.6.txt, 3.3.1: z(2)]")
    # Row 0 ("Your") is not printed in the documents: the same computation for query 0.
    assert_close(got[0], torch.softmax(inputs @ inputs[0], dim=0) @ inputs, atol=1e-5, call=call + "[0]")


def test_context_vectors_keep_a_batch_dimension():
    m = load("context_vectors")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(12))  # batch 2, 5 tokens, d 3
    call = "context_vectors(x) with x of shape (2, 5, 3)"
    got = call_checked(m.context_vectors, x, call=call, errors=transpose_errors(x, x))
    scores = torch.einsum("bid,bjd->bij", x, x)
    assert_close(got, torch.softmax(scores, dim=2) @ x, atol=1e-5, call=call,
                 diagnoses=[(torch.softmax(scores, dim=1) @ x, WRONG_DIM), (scores @ x, NO_SOFTMAX),
                            (torch.softmax(scores, dim=2), RETURNED_THE_WEIGHTS),
                            (scores / scores.sum(-1, keepdim=True) @ x, SUM_NOT_SOFTMAX),
                            (torch.softmax(scores / 3**0.5, dim=2) @ x, SIMPLE_NOT_SCALED)])


def test_context_vectors_keep_float64_and_leave_their_inputs_unchanged():
    """The README's rules: no argument modified in place; context_vectors keeps float64 and two batch dimensions
    (context_vector may return float32, as the documents' torch.zeros loop does)."""
    m = load("context_vectors")
    g = torch.Generator().manual_seed(16)
    x = torch.randn(5, 3, generator=g, dtype=torch.float64)
    weights = torch.softmax(torch.randn(5, generator=g, dtype=torch.float64), 0)
    call_in_float64(m.context_vector, x, weights, call="context_vector(x (5, 3), attn_weights (5,)) [float64]", shapes=[(3,)],
                    unchanged=["inputs", "attn_weights"], any_float=True)
    x = torch.randn(2, 2, 4, 3, generator=g, dtype=torch.float64)
    call_in_float64(m.context_vectors, x, call="context_vectors(x of shape (2, 2, 4, 3)) [float64]", shapes=[(2, 2, 4, 3)],
                    unchanged=["inputs"])
