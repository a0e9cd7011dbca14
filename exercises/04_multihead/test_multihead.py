"""Public tests for 04_multihead: run ``pytest exercises/04_multihead``.

Expected values are the tensors printed in the documents (file and section in each comment), or,
where the documents print nothing, the reference values listed in ../shared/docs/README.md.
multihead_wrapper builds on your 03_causal/causal_attention.py: finish that one first.
"""

import pytest
import torch

from head_split import merge_heads, per_head_scores, split_heads
from multihead_attention import MultiHeadAttention, gpt2_attention
from multihead_wrapper import MultiHeadAttentionWrapper, two_dim_wrapper

# 000_7ebab5a40414ec2e.txt, section 3.3.1: "Your journey starts with one step", stacked twice
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
BATCH = torch.stack((INPUTS, INPUTS), dim=0)  # (2, 6, 3)


def expect_close(call: str, got, expected: torch.Tensor, atol: float = 1e-4) -> None:
    """Compare a returned tensor with the expected one; the message shows both."""
    assert isinstance(got, torch.Tensor), f"called {call}\nreturned {got!r}\nexpected a tensor like {expected}"
    assert got.shape == expected.shape, (
        f"called {call}\nreturned shape {tuple(got.shape)}\nexpected shape {tuple(expected.shape)}"
    )
    assert torch.allclose(got.detach().float(), expected, atol=atol, rtol=0), (
        f"called {call}\nreturned {got.detach()}\nexpected {expected}"
    )


# --- head_split ---------------------------------------------------------------------------


def test_split_heads_gives_each_head_its_slice_of_features():
    x = torch.arange(8.0).reshape(1, 2, 4)  # 2 tokens, 4 features
    expected = torch.tensor([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]])
    expect_close("split_heads(torch.arange(8.).reshape(1, 2, 4), 2)", split_heads(x, 2), expected)


def test_merge_heads_undoes_split_heads():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6)
    expect_close("merge_heads(split_heads(x, 3)) with x of shape (2, 5, 6)", merge_heads(split_heads(x, 3)), x, atol=0.0)


def test_per_head_scores_match_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.6.2: a @ a.transpose(2, 3), shape (1, 2, 3, 3)
    a = torch.tensor(
        [[[[0.2745, 0.6584, 0.2775, 0.8573], [0.8993, 0.0390, 0.9268, 0.7388], [0.7179, 0.7058, 0.9156, 0.4340]],
          [[0.0772, 0.3565, 0.1479, 0.5331], [0.4066, 0.2318, 0.4545, 0.9737], [0.4606, 0.5159, 0.4220, 0.5786]]]]
    )
    expected = torch.tensor(
        [[[[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]],
          [[0.4391, 0.7003, 0.5903], [0.7003, 1.3737, 1.0620], [0.5903, 1.0620, 0.9912]]]]
    )
    expect_close("per_head_scores(a, a)", per_head_scores(a, a), expected)


def test_split_heads_rejects_an_indivisible_d_out():
    with pytest.raises(ValueError):
        split_heads(torch.zeros(1, 2, 5), 2)


# --- multihead_wrapper --------------------------------------------------------------------


def test_wrapper_seed_123_matches_the_document():
    # 000_7ebab5a40414ec2e.txt, section 3.6.1: context_vecs of MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    row = torch.tensor(
        [[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860],
         [-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]
    )
    torch.manual_seed(123)
    mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    expect_close(
        "torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)", mha(BATCH), torch.stack((row, row))
    )


def test_wrapper_holds_its_heads_in_a_module_list():
    mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    heads = getattr(mha, "heads", None)
    assert isinstance(heads, torch.nn.ModuleList) and len(heads) == 3, (
        f"called MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3).heads\nreturned {heads!r}\n"
        "expected an nn.ModuleList of 3 CausalAttention modules"
    )


def test_two_dim_wrapper_returns_two_dimensional_embeddings():
    # Exercise 3.2 of 000_7ebab5a40414ec2e.txt, section 3.6.1 ("d_out = 1"); values from ../shared/docs/README.md
    row = torch.tensor(
        [[-0.5740, 0.2216], [-0.7320, 0.0155], [-0.7774, -0.0546], [-0.6979, -0.0817], [-0.6538, -0.0957], [-0.6424, -0.1065]]
    )
    torch.manual_seed(123)
    mha = two_dim_wrapper(3, 6)
    expect_close("torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)", mha(BATCH), torch.stack((row, row)))


# --- multihead_attention ------------------------------------------------------------------


def test_multihead_attention_seed_123_matches_the_reference():
    # 000_7ebab5a40414ec2e.txt, section 3.6.2 runs this but its listing has a bug (head_dim = d_out)
    # and prints nothing; ../shared/docs/README.md gives the first two rows of the correct class,
    # the other rows are the reference solution's.
    row = torch.tensor(
        [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
    )
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    expect_close("torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", mha(BATCH), torch.stack((row, row)))


def test_multihead_attention_splits_d_out_over_the_heads():
    mha = MultiHeadAttention(3, 6, 6, 0.0, num_heads=2)
    got = getattr(mha, "head_dim", None)
    assert got == 3, f"called MultiHeadAttention(3, 6, 6, 0.0, num_heads=2).head_dim\nreturned {got!r}\nexpected 3 (d_out // num_heads)"
    keys = sorted(mha.state_dict())
    assert "mask" in keys, (
        f"called sorted(MultiHeadAttention(3, 6, 6, 0.0, num_heads=2).state_dict())\nreturned {keys}\n"
        "expected 'mask' among them: create it with self.register_buffer('mask', ...)"
    )
    torch.manual_seed(0)
    x = torch.rand(2, 5, 3)
    out = mha(x)
    assert out.shape == (2, 5, 6), f"called mha(x) with x of shape (2, 5, 3)\nreturned shape {tuple(out.shape)}\nexpected (2, 5, 6)"


def test_gpt2_attention_has_the_documented_parameter_count():
    # ../shared/docs/README.md: MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)
    got = sum(p.numel() for p in gpt2_attention().parameters())
    assert got == 2_360_064, f"called sum(p.numel() for p in gpt2_attention().parameters())\nreturned {got:,}\nexpected 2,360,064"
