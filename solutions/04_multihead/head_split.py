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
    ### BEGIN SOLUTION
    b, num_tokens, d_out = x.shape
    if d_out % num_heads != 0:
        raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
    return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)
    ### END SOLUTION


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """The inverse of split_heads: (b, num_heads, T, head_dim) -> (b, T, num_heads * head_dim).

    Token t's output row is head 0's row t, then head 1's row t, and so on (``torch.cat`` of the
    heads on the last dimension, as MultiHeadAttentionWrapper does in section 3.6.1).

    Example::

        >>> merge_heads(split_heads(torch.arange(8.).reshape(1, 2, 4), 2))
        tensor([[[0., 1., 2., 3.],
                 [4., 5., 6., 7.]]])
    """
    ### BEGIN SOLUTION
    b, num_heads, num_tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    return queries @ keys.transpose(2, 3)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "the reshapes that the efficient version needs"
README = r"""
Section 3.6.2, the reshaping text and the `a @ a.transpose(2, 3)` example.

- `split_heads(x, num_heads)`: (b, T, d_out) → (b, num_heads, T, d_out // num_heads); head h gets the
  features `h*head_dim : (h+1)*head_dim` of every token. `ValueError` if d_out is not divisible.
- `merge_heads(x)`: the inverse, (b, num_heads, T, head_dim) → (b, T, num_heads * head_dim).
- `per_head_scores(queries, keys)`: the scores of every head in one product, (b, h, T_q, T_k) (the
  queries and the keys may hold different numbers of tokens).
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

You cannot go straight from (b, T, d_out) to (b, h, T, hd) with one `view`: the
numbers would land in the wrong heads. Go through (b, T, h, hd).

</details>

<details><summary>Level 2: an approach</summary>

`x.reshape(b, T, num_heads, head_dim)` splits each token's features into heads;
`.transpose(1, 2)` moves the head axis in front of the token axis. Merging is the same in reverse.

</details>

<details><summary>Level 3: nearly the answer</summary>

`merge_heads`: `x.transpose(1, 2).reshape(b, T, num_heads * head_dim)` (use
`reshape`, or `.contiguous().view(...)`: after a transpose, `view` alone fails).
`per_head_scores`: `queries @ keys.transpose(2, 3)`.

</details>
"""
### END STUDENT TEXT
