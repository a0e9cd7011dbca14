"""Public tests for 03_causal: run ``pytest exercises/03_causal``.

Expected values are the tensors printed in the documents (file and section in each comment). The
seed-789 scores come from three ``nn.Linear(3, 2, bias=False)`` created after
``torch.manual_seed(789)``, exactly as SelfAttention_v2 creates them, so these tests do not need
your 02_trainable_weights code.
"""

import pytest
import torch
import torch.nn as nn

from attention_dropout import dropout
from causal_attention import CausalAttention
from causal_mask import causal_attention_weights, causal_mask, mask_and_renormalize, mask_future_scores

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
# 001_1e5e282f5721c1c1.txt: the seed-789 weights, masked and renormalized (also the -inf route's result)
CAUSAL_WEIGHTS = torch.tensor(
    [
        [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
        [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
        [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
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


def seed_789_scores() -> torch.Tensor:
    """Unscaled scores Q Kᵀ of the seed-789 SelfAttention_v2 (001_1e5e282f5721c1c1.txt)."""
    torch.manual_seed(789)
    W_query, W_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        return W_query(INPUTS) @ W_key(INPUTS).T


# --- causal_mask --------------------------------------------------------------------------


def test_causal_mask_is_lower_triangular_ones():
    # 001_1e5e282f5721c1c1.txt: torch.tril(torch.ones(context_length, context_length))
    expected = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    expect_close("causal_mask(4)", causal_mask(4), expected)


def test_mask_and_renormalize_matches_the_document():
    weights = torch.softmax(seed_789_scores() / 2**0.5, dim=-1)
    untouched = weights.clone()
    expect_close("mask_and_renormalize(seed-789 attention weights)", mask_and_renormalize(weights), CAUSAL_WEIGHTS)
    assert torch.equal(weights, untouched), "called mask_and_renormalize(weights); it changed its input; expected a new tensor"


def test_mask_future_scores_puts_minus_infinity_above_the_diagonal():
    scores = seed_789_scores()
    untouched = scores.clone()
    # 000_7ebab5a40414ec2e.txt, section 3.5.1: the first two rows of inf_masks
    expected = torch.tensor(
        [[0.2899, -torch.inf, -torch.inf, -torch.inf, -torch.inf, -torch.inf],
         [0.4656, 0.1723, -torch.inf, -torch.inf, -torch.inf, -torch.inf]]
    )
    got = mask_future_scores(scores)
    expect_close("mask_future_scores(seed-789 scores)[:2]", got[:2], expected)
    assert torch.equal(scores, untouched), "called mask_future_scores(scores); it changed its input; expected a new tensor"


def test_causal_attention_weights_match_the_document():
    # 001_1e5e282f5721c1c1.txt: softmax of the -inf-masked scores divided by sqrt(2)
    expect_close("causal_attention_weights(seed-789 scores, d_k=2)", causal_attention_weights(seed_789_scores(), 2), CAUSAL_WEIGHTS)


# --- attention_dropout --------------------------------------------------------------------


def test_dropout_drops_what_nn_dropout_drops_under_the_same_seed():
    # 000_7ebab5a40414ec2e.txt, section 3.5.2 uses torch.manual_seed(123) and nn.Dropout(0.5); the
    # printed mask differs between platforms, so the expected value is nn.Dropout's on this machine.
    x = torch.ones(6, 6)
    torch.manual_seed(123)
    expected = nn.Dropout(0.5)(x)
    torch.manual_seed(123)
    expect_close("torch.manual_seed(123); dropout(torch.ones(6, 6), 0.5)", dropout(x, 0.5), expected)


def test_dropout_scales_survivors_and_is_identity_when_not_training():
    torch.manual_seed(0)
    x = torch.rand(50, 50) + 0.5
    got = dropout(x, 0.25)
    kept = got != 0
    expect_close("dropout(x, 0.25) at the kept positions", got[kept], x[kept] / 0.75, atol=1e-6)
    expect_close("dropout(x, 0.25, training=False)", dropout(x, 0.25, training=False), x, atol=0.0)


def test_dropout_rejects_a_probability_above_one():
    with pytest.raises(ValueError):
        dropout(torch.ones(3), 1.5)


# --- causal_attention ---------------------------------------------------------------------


def test_causal_attention_seed_123_matches_the_document():
    # 001_1e5e282f5721c1c1.txt: CausalAttentionV1(d_in=3, d_out=2, context_length=6, dropout=0.0), seed 123
    expected_row = torch.tensor(
        [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
    )
    batch = torch.stack((INPUTS, INPUTS), dim=0)
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    expect_close("torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)", ca(batch), torch.stack((expected_row, expected_row)))


def test_causal_attention_mask_is_a_buffer():
    ca = CausalAttention(3, 2, 6, 0.0)
    keys = sorted(ca.state_dict())
    assert "mask" in keys, (
        f"called sorted(CausalAttention(3, 2, 6, 0.0).state_dict())\nreturned {keys}\n"
        "expected 'mask' among them: create it with self.register_buffer('mask', ...)"
    )


def test_causal_attention_ignores_future_tokens():
    torch.manual_seed(1)
    ca = CausalAttention(3, 4, 6, 0.0)
    x = torch.rand(2, 6, 3)
    changed = x.clone()
    changed[:, 4:] = torch.rand(2, 2, 3)  # change only tokens 4 and 5
    expect_close(
        "ca(x)[:, :4] vs ca(x with tokens 4 and 5 changed)[:, :4]", ca(changed)[:, :4], ca(x)[:, :4].detach(), atol=1e-6
    )
    expect_close("ca(x[:, :4]) (fewer tokens than context_length)", ca(x[:, :4]), ca(x)[:, :4].detach(), atol=1e-6)


def test_causal_attention_rejects_more_tokens_than_context_length():
    ca = CausalAttention(3, 2, 4, 0.0)
    with pytest.raises(ValueError):
        ca(torch.rand(1, 5, 3))
