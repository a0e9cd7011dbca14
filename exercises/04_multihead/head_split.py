"""Section 3.6.2: splitting one projection into heads, and putting the heads back together.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.
"""

import torch


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(b, T, d_out) -> (b, num_heads, T, d_out // num_heads).

    Head h holds features ``h * head_dim : (h + 1) * head_dim`` of every token: unroll the last
    dimension into (num_heads, head_dim), then move the head axis before the token axis. A bare
    ``x.view(b, num_heads, T, head_dim)`` has the right shape but mixes tokens into heads.

    Args:
        x: (b, T, d_out) a projection such as ``W_query(x)``.
        num_heads: how many heads to split d_out into.

    Returns:
        (b, num_heads, T, d_out // num_heads).

    Raises:
        ValueError: if d_out is not divisible by num_heads.

    Example::

        >>> x = torch.arange(8.).reshape(1, 2, 4)  # 1 sequence, 2 tokens, 4 features
        >>> split_heads(x, 2).shape
        torch.Size([1, 2, 2, 2])
        >>> split_heads(x, 2)[0, 1]  # head 1: features 2 and 3 of each token
        tensor([[2., 3.],
                [6., 7.]])
    """
    # TODO: write the body of split_heads here, then delete the raise below.
    raise NotImplementedError("split_heads: not written yet -- see exercises/04_multihead/README.md, section 'head_split'")


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """The inverse of split_heads: (b, num_heads, T, head_dim) -> (b, T, num_heads * head_dim).

    Token t's output row is head 0's row t, then head 1's row t, and so on (``torch.cat`` of the
    heads on the last dimension, as MultiHeadAttentionWrapper does in section 3.6.1).

    Example::

        >>> merge_heads(split_heads(torch.arange(8.).reshape(1, 2, 4), 2))
        tensor([[[0., 1., 2., 3.],
                 [4., 5., 6., 7.]]])
    """
    # TODO: write the body of merge_heads here, then delete the raise below.
    raise NotImplementedError("merge_heads: not written yet -- see exercises/04_multihead/README.md, section 'head_split'")


def per_head_scores(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Attention scores of every head at once: (b, h, T_q, hd) x (b, h, T_k, hd) -> (b, h, T_q, T_k).

    Args:
        queries: (b, num_heads, T_q, head_dim)
        keys: (b, num_heads, T_k, head_dim); T_k may differ from T_q.

    Returns:
        (b, num_heads, T_q, T_k): entry [b, h, i, j] is queries[b, h, i] · keys[b, h, j].

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.2, ``a @ a.transpose(2, 3)`` with the (1, 2, 3, 4) tensor ``a`` printed there)::

        >>> per_head_scores(a, a)[0, 0, 0]
        tensor([1.3208, 1.1631, 1.2879])
    """
    # TODO: write the body of per_head_scores here, then delete the raise below.
    raise NotImplementedError("per_head_scores: not written yet -- see exercises/04_multihead/README.md, section 'head_split'")
