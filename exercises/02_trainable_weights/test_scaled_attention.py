"""Public tests for scaled_attention (02_trainable_weights, section 3.4.1).

Run ``pytest exercises/02_trainable_weights/test_scaled_attention.py`` or ``pytest exercises -k scaled_attention``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or computed here with
torch.nn.functional.scaled_dot_product_attention.
"""

import torch
import torch.nn.functional as F

from kata_checks import (assert_does_its_own_work, WRONG_DIM, transpose_errors, assert_close, call_checked, call_in_float64, journey_inputs, load,
                         scale_diagnoses)
from kata_mistakes import RETURN_ORDER_SWAPPED, VALUES_FROM_KEYS, attention_grid, differing


def seed_123_projections() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries, keys, values of chapter_notes_3.1-3.6.txt, section 3.4.1 (torch.rand, seed 123)."""
    inputs = journey_inputs()
    torch.manual_seed(123)
    W_query, W_key, W_value = (torch.rand(3, 2) for _ in range(3))
    return inputs @ W_query, inputs @ W_key, inputs @ W_value


def test_scaled_attention_weights_and_context_of_journey_match_the_document():
    m = load("scaled_attention")
    queries, keys, values = seed_123_projections()
    context, weights = m.scaled_dot_product(queries, keys, values)
    right = torch.softmax(queries @ keys.T / 2**0.5, -1)
    # chapter_notes_3.1-3.6.txt, section 3.4.1: attn_weights_2 and context_vec_2
    assert_close(weights[1], torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]), atol=1e-4,
                 call="scaled_dot_product(queries, keys, values)[1] (the weights), row 1",
                 diagnoses=[(torch.softmax(queries[1] @ keys.T, -1), "no scaling: divide Q Kᵀ by √d_k before the softmax"),
                            ((right @ values)[1], RETURN_ORDER_SWAPPED)])
    assert_close(context[1], torch.tensor([0.3061, 0.8210]), atol=1e-4,
                 call="scaled_dot_product(queries, keys, values)[0] (the context), row 1",
                 diagnoses=[((right @ keys)[1], VALUES_FROM_KEYS), (right[1], RETURN_ORDER_SWAPPED)])


def test_scaled_attention_with_a_batch_and_d_v_different_from_d_k():
    m = load("scaled_attention")
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 7, generator=g)
    call = "scaled_dot_product(q (2, 3, 4), k (2, 5, 4), v (2, 5, 7))"
    result = call_checked(m.scaled_dot_product, q, k, v, call=call, errors=transpose_errors(q, k))
    assert isinstance(result, tuple) and len(result) == 2, f"called {call}: returned {type(result).__name__}; expected (context, weights)"
    context, weights = result
    scores = torch.einsum("bqd,bkd->bqk", q, k)
    expected_weights = torch.softmax(scores / 2.0, dim=-1)  # √d_k = √4 = 2
    expected = F.scaled_dot_product_attention(q, k, v)
    assert_close(weights, expected_weights, atol=1e-5, call=call + "[1] (the weights)",
                 diagnoses=[(torch.softmax(scores / 2.0, dim=-2), WRONG_DIM), (expected, RETURN_ORDER_SWAPPED)]
                 + scale_diagnoses(lambda s: torch.softmax(scores * s, dim=-1), 4))
    assert_close(context, expected, atol=1e-5, call=call + "[0] (the context)",
                 diagnoses=[(expected_weights, RETURN_ORDER_SWAPPED)] + differing(attention_grid(q, k, v, 0.5), expected))


def test_scaled_attention_keeps_float64_two_batch_dims_and_its_inputs():
    """The README's rules: the input's dtype kept, any number of leading batch dimensions, no argument modified in place."""
    m = load("scaled_attention")
    g = torch.Generator().manual_seed(17)
    q, k, v = (torch.randn(2, 3, t, d, generator=g, dtype=torch.float64) for t, d in ((4, 5), (6, 5), (6, 2)))
    call_in_float64(m.scaled_dot_product, q, k, v, call="scaled_dot_product(q (2, 3, 4, 5), k (2, 3, 6, 5), v (2, 3, 6, 2)) [float64]",
                    shapes=[(2, 3, 4, 2), (2, 3, 4, 6)], unchanged=["queries", "keys", "values"])


def test_scaled_attention_does_its_own_work():
    """scaled_dot_product: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("scaled_attention")
