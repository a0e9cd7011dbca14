"""Public tests for 01_simple_attention: run ``pytest exercises/01_simple_attention``.

Expected values are the tensors printed in the documents (file and section in each comment), for
the six-token input "Your journey starts with one step". Each failure says what was called, what
came back and what was expected.
"""

import pytest
import torch

from attention_scores import attention_score_matrix, attention_scores
from context_vectors import context_vector, context_vectors
from normalization import normalize_by_sum, softmax_naive, softmax_stable

# 000_7ebab5a40414ec2e.txt, section 3.3.1
INPUTS = torch.tensor(
    [
        [0.43, 0.15, 0.89],  # Your
        [0.55, 0.87, 0.66],  # journey
        [0.57, 0.85, 0.64],  # starts
        [0.22, 0.58, 0.33],  # with
        [0.77, 0.25, 0.10],  # one
        [0.05, 0.80, 0.55],  # step
    ]
)
# 000_7ebab5a40414ec2e.txt, section 3.3.1: the scores of query x(2) = "journey"
SCORES_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
# 000_7ebab5a40414ec2e.txt, section 3.3.2: inputs @ inputs.T
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


def expect_close(call: str, got, expected: torch.Tensor, atol: float = 1e-4) -> None:
    """Compare a returned tensor with the expected one; the message shows both."""
    assert isinstance(got, torch.Tensor), f"called {call}\nreturned {got!r}\nexpected a tensor like {expected}"
    assert got.shape == expected.shape, (
        f"called {call}\nreturned shape {tuple(got.shape)}\nexpected shape {tuple(expected.shape)}"
    )
    assert torch.allclose(got.detach().float(), expected, atol=atol, rtol=0), (
        f"called {call}\nreturned {got.detach()}\nexpected {expected}"
    )


# --- attention_scores ---------------------------------------------------------------------


def test_scores_of_journey_match_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.3.1: "tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])"
    expect_close("attention_scores(inputs, inputs[1])", attention_scores(INPUTS, INPUTS[1]), SCORES_2)


def test_score_matrix_matches_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.3.2: the 6x6 matrix printed for inputs @ inputs.T
    expect_close("attention_score_matrix(inputs)", attention_score_matrix(INPUTS), SCORE_MATRIX)


def test_score_matrix_keeps_a_batch_dimension():
    batch = torch.stack((INPUTS, INPUTS.flip(0)))  # (2, 6, 3), two different sequences
    expected = torch.stack((SCORE_MATRIX, SCORE_MATRIX.flip(0).flip(1)))
    expect_close("attention_score_matrix(batch) with batch of shape (2, 6, 3)", attention_score_matrix(batch), expected)


# --- normalization ------------------------------------------------------------------------


def test_normalize_by_sum_of_journey_scores():
    # 000_7ebab5a40414ec2e.txt, section 3.3.1 (the tip lists both results; this is the sum-normalized one)
    expected = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
    expect_close("normalize_by_sum(scores of 'journey')", normalize_by_sum(SCORES_2), expected)


def test_normalize_by_sum_along_dim_0():
    scores = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    expected = torch.tensor([[0.25, 0.25], [0.75, 0.75]])  # each column sums to 1
    expect_close("normalize_by_sum(tensor([[1., 2.], [3., 6.]]), dim=0)", normalize_by_sum(scores, dim=0), expected)


def test_softmax_naive_of_journey_scores():
    # 000_7ebab5a40414ec2e.txt, section 3.3.1: "tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])"
    expected = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    expect_close("softmax_naive(scores of 'journey')", softmax_naive(SCORES_2), expected)


def test_softmax_stable_survives_large_scores_and_minus_infinity():
    scores = torch.tensor([1000.0, 1000.0, -float("inf")])
    expected = torch.tensor([0.5, 0.5, 0.0])
    expect_close("softmax_stable(tensor([1000., 1000., -inf]))", softmax_stable(scores), expected)


def test_softmax_stable_works_row_by_row():
    # 000_7ebab5a40414ec2e.txt, section 3.3.2: torch.softmax(attention_score_matrix, dim=-1), first two rows
    expected = torch.tensor(
        [[0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]]
    )
    expect_close("softmax_stable(score_matrix, dim=-1)[:2]", softmax_stable(SCORE_MATRIX, dim=-1)[:2], expected)


# --- context_vectors ----------------------------------------------------------------------


def test_context_vector_of_journey_matches_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.3.1: z(2) = "tensor([0.4419, 0.6515, 0.5683])"
    weights = torch.softmax(SCORES_2, dim=0)
    expect_close(
        "context_vector(inputs, softmax(scores of 'journey'))",
        context_vector(INPUTS, weights),
        torch.tensor([0.4419, 0.6515, 0.5683]),
    )


def test_context_vectors_for_all_tokens():
    got = context_vectors(INPUTS)
    assert isinstance(got, torch.Tensor) and got.shape == (6, 3), (
        f"called context_vectors(inputs) with inputs of shape (6, 3)\nreturned {got!r}\nexpected shape (6, 3)"
    )
    # Row 1 is z(2) of 000_7ebab5a40414ec2e.txt, section 3.3.1. Row 0 ("Your") is not printed there:
    # it is softmax(score row 0) @ inputs, the same computation.
    expect_close("context_vectors(inputs)[1]", got[1], torch.tensor([0.4419, 0.6515, 0.5683]))
    expect_close("context_vectors(inputs)[0]", got[0], torch.tensor([0.4421, 0.5931, 0.5790]))


def test_context_vectors_keep_a_batch_dimension():
    batch = torch.stack((INPUTS, INPUTS[:, [2, 0, 1]]))  # two different sequences
    got = context_vectors(batch)
    expected = torch.stack((context_vectors(INPUTS), context_vectors(INPUTS[:, [2, 0, 1]])))
    expect_close("context_vectors(batch) with batch of shape (2, 6, 3)", got, expected)
