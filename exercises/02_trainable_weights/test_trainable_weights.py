"""Public tests for 02_trainable_weights: run ``pytest exercises/02_trainable_weights``.

Expected values are the tensors printed in the documents (file and section in each comment). The
seeded ones depend on creating W_query, W_key, W_value in that order, right after the seed.
"""

import pytest
import torch
import torch.nn as nn

from scaled_attention import scaled_dot_product
from self_attention import SelfAttention_v1, SelfAttention_v2
from weight_transfer import copy_weights_v1_to_v2, copy_weights_v2_to_v1

# 000_7ebab5a40414ec2e.txt, section 3.3.1: "Your journey starts with one step"
INPUTS = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
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


# --- scaled_attention ---------------------------------------------------------------------


def seed_123_projections() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries, keys, values from 000_7ebab5a40414ec2e.txt, section 3.4.1 (torch.rand, seed 123)."""
    torch.manual_seed(123)
    W_query, W_key, W_value = (torch.rand(3, 2) for _ in range(3))
    return INPUTS @ W_query, INPUTS @ W_key, INPUTS @ W_value


def test_scaled_weights_and_context_of_journey_match_the_document():
    queries, keys, values = seed_123_projections()
    context, weights = scaled_dot_product(queries, keys, values)
    # 000_7ebab5a40414ec2e.txt, section 3.4.1: attention_weights_2 and context_vector
    expect_close(
        "scaled_dot_product(queries, keys, values)[1] (the weights), row 1",
        weights[1],
        torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]),
    )
    expect_close(
        "scaled_dot_product(queries, keys, values)[0] (the context), row 1",
        context[1],
        torch.tensor([0.3061, 0.8210]),
    )


def test_scaled_dot_product_shapes_with_batch_and_d_v_different_from_d_k():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 7)
    context, weights = scaled_dot_product(q, k, v)
    call = "scaled_dot_product(q (2, 3, 4), k (2, 5, 4), v (2, 5, 7))"
    assert context.shape == (2, 3, 7) and weights.shape == (2, 3, 5), (
        f"called {call}\nreturned shapes {tuple(context.shape)}, {tuple(weights.shape)}\nexpected (2, 3, 7), (2, 3, 5)"
    )
    expect_close(call + "; weights.sum(-1), every row of weights", weights.sum(-1), torch.ones(2, 3))


# --- self_attention -----------------------------------------------------------------------


def test_self_attention_v1_seed_123_matches_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.4.2: v1_module(inputs) after torch.manual_seed(123)
    expected = torch.tensor(
        [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
    )
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    expect_close("torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)", sa_v1(INPUTS), expected)


def test_self_attention_v2_seed_789_matches_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.4.2: sa_v2(inputs) after torch.manual_seed(789)
    expected = torch.tensor(
        [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]]
    )
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    expect_close("torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)", sa_v2(INPUTS), expected)


def test_self_attention_parameters_have_the_documented_shapes():
    sa_v1, sa_v2 = SelfAttention_v1(3, 2), SelfAttention_v2(3, 2)
    got_v1 = {name: tuple(p.shape) for name, p in sa_v1.named_parameters()}
    want_v1 = {"W_query": (3, 2), "W_key": (3, 2), "W_value": (3, 2)}
    assert got_v1 == want_v1, f"called dict(SelfAttention_v1(3, 2).named_parameters())\nreturned {got_v1}\nexpected {want_v1}"
    got_v2 = {name: tuple(p.shape) for name, p in sa_v2.named_parameters()}
    want_v2 = {"W_query.weight": (2, 3), "W_key.weight": (2, 3), "W_value.weight": (2, 3)}
    assert got_v2 == want_v2, (
        f"called dict(SelfAttention_v2(3, 2).named_parameters())\nreturned {got_v2}\n"
        f"expected {want_v2} (nn.Linear without bias stores (d_out, d_in))"
    )


# --- weight_transfer ----------------------------------------------------------------------


def test_copy_v2_to_v1_makes_both_compute_the_same():
    # 000_7ebab5a40414ec2e.txt, section 3.4.2: "print(torch.allclose(out1, out2, atol=1e-6))  # Should print: True"
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    sa_v1 = SelfAttention_v1(3, 2)
    copy_weights_v2_to_v1(sa_v2, sa_v1)
    expect_close("copy_weights_v2_to_v1(sa_v2, sa_v1); sa_v1(inputs)", sa_v1(INPUTS), sa_v2(INPUTS).detach(), atol=1e-6)


def test_copy_v2_to_v1_copies_values_into_the_existing_parameters():
    sa_v2, sa_v1 = SelfAttention_v2(3, 2), SelfAttention_v1(3, 2)
    before = sa_v1.W_query
    copy_weights_v2_to_v1(sa_v2, sa_v1)
    assert sa_v1.W_query is before, (
        "called copy_weights_v2_to_v1(sa_v2, sa_v1)\nreturned with sa_v1.W_query replaced by a new object\n"
        "expected the same nn.Parameter, its values overwritten (param.copy_ under torch.no_grad())"
    )
    expect_close("copy_weights_v2_to_v1(sa_v2, sa_v1); sa_v1.W_query", sa_v1.W_query, sa_v2.W_query.weight.T.detach())


def test_copy_v1_to_v2_makes_both_compute_the_same():
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    sa_v2 = SelfAttention_v2(3, 2)
    copy_weights_v1_to_v2(sa_v1, sa_v2)
    expect_close("copy_weights_v1_to_v2(sa_v1, sa_v2); sa_v2(inputs)", sa_v2(INPUTS), sa_v1(INPUTS).detach(), atol=1e-6)


def test_copy_v2_with_bias_to_v1_raises_value_error():
    sa_v2, sa_v1 = SelfAttention_v2(3, 2, qkv_bias=True), SelfAttention_v1(3, 2)
    with pytest.raises(ValueError):
        copy_weights_v2_to_v1(sa_v2, sa_v1)
