"""Public tests for head_split (04_multihead, section 3.6.2).

Run ``pytest exercises/04_multihead/test_head_split.py`` or ``pytest exercises -k head_split``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or small hand-made ones.
"""

import torch

from kata_checks import SPLIT_BARE_VIEW, assert_close, assert_raises, call_in_float64, load, not_divisible


def test_head_split_gives_each_head_its_slice_of_features():
    m = load("head_split")
    x = torch.arange(8.0).reshape(1, 2, 4)  # 2 tokens, 4 features
    expected = torch.tensor([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]])
    assert_close(m.split_heads(x, 2), expected, atol=0, call="split_heads(torch.arange(8.).reshape(1, 2, 4), 2)",
                 diagnoses=[(x.reshape(1, 2, 2, 2), SPLIT_BARE_VIEW)])


def test_head_split_merge_heads_undoes_split_heads():
    m = load("head_split")
    x = torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(0))
    assert_close(m.merge_heads(m.split_heads(x, 3)), x, atol=0.0, call="merge_heads(split_heads(x, 3)) with x of shape (2, 5, 6)")


def test_head_split_per_head_scores_match_the_document():
    m = load("head_split")
    # chapter_notes_3.1-3.6.txt, section 3.6.2: a @ a.transpose(2, 3), shape (1, 2, 3, 3)
    a = torch.tensor(
        [[[[0.2745, 0.6584, 0.2775, 0.8573], [0.8993, 0.0390, 0.9268, 0.7388], [0.7179, 0.7058, 0.9156, 0.4340]],
          [[0.0772, 0.3565, 0.1479, 0.5331], [0.4066, 0.2318, 0.4545, 0.9737], [0.4606, 0.5159, 0.4220, 0.5786]]]]
    )
    expected = torch.tensor(
        [[[[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]],
          [[0.4391, 0.7003, 0.5903], [0.7003, 1.3737, 1.0620], [0.5903, 1.0620, 0.9912]]]]
    )
    assert_close(m.per_head_scores(a, a), expected, atol=1e-4, call="per_head_scores(a, a)  [chapter_notes_3.1-3.6.txt, 3.6.2]")


def test_head_split_rejects_an_indivisible_d_out():
    m = load("head_split")
    assert_raises(ValueError, m.split_heads, torch.zeros(1, 2, 5), 2, call="split_heads(x of shape (1, 2, 5), 2)",
                  why=not_divisible)


def test_head_split_keeps_float64():
    """The README's rules: the input's dtype kept."""
    m = load("head_split")
    g = torch.Generator().manual_seed(24)
    x = torch.randn(2, 5, 6, generator=g, dtype=torch.float64)
    call_in_float64(m.split_heads, x, 3, call="split_heads(x of shape (2, 5, 6), 3) [float64]", shapes=[(2, 3, 5, 2)])
    call_in_float64(m.merge_heads, x.reshape(2, 3, 5, 2), call="merge_heads(x of shape (2, 3, 5, 2)) [float64]", shapes=[(2, 5, 6)])
    q, k = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64), torch.randn(2, 3, 6, 5, generator=g, dtype=torch.float64)
    call_in_float64(m.per_head_scores, q, k, call="per_head_scores(q (2, 3, 4, 5), k (2, 3, 6, 5)) [float64]", shapes=[(2, 3, 4, 6)])
