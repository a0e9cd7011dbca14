"""Section 3.5.1: hiding future words with a causal attention mask.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.

The examples use the documents' six-token input "Your journey starts with one step"
(exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1)::

    inputs = torch.tensor([[0.43, 0.15, 0.89],   # Your
                           [0.55, 0.87, 0.66],   # journey
                           [0.57, 0.85, 0.64],   # starts
                           [0.22, 0.58, 0.33],   # with
                           [0.77, 0.25, 0.10],   # one
                           [0.05, 0.80, 0.55]])  # step
"""

import torch


def causal_mask(num_tokens: int) -> torch.Tensor:
    """The (T, T) lower-triangular matrix of ones: 1 where token i may attend to token j (j <= i).

    Args:
        num_tokens: T, the number of tokens.

    Returns:
        (T, T) float tensor of ones on and below the diagonal, zeros above.

    Example (exercises/documents/notebook_causal_self_attention.txt, the ``torch.tril`` mask, cut to 3 tokens)::

        >>> causal_mask(3)
        tensor([[1., 0., 0.],
                [1., 1., 0.],
                [1., 1., 1.]])
    """
    ### BEGIN SOLUTION
    return torch.tril(torch.ones(num_tokens, num_tokens))
    ### END SOLUTION


def mask_and_renormalize(attn_weights: torch.Tensor) -> torch.Tensor:
    """Zero the weights above the diagonal, then renormalize every row to sum to 1.

    Args:
        attn_weights: (..., T, T) attention weights (rows sum to 1).

    Returns:
        (..., T, T) a new tensor: exactly 0 above the diagonal, rows summing to 1.

    Example (exercises/documents/notebook_causal_self_attention.txt, the seed-789 weights masked and renormalized; ``attn_weights`` is the softmax of the scaled seed-789 scores)::

        >>> mask_and_renormalize(attn_weights)[1]
        tensor([0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000])
    """
    ### BEGIN SOLUTION
    num_tokens = attn_weights.shape[-1]
    keep = torch.tril(torch.ones(num_tokens, num_tokens, dtype=attn_weights.dtype, device=attn_weights.device))
    masked = attn_weights * keep
    return masked / masked.sum(dim=-1, keepdim=True)
    ### END SOLUTION


def mask_future_scores(attn_scores: torch.Tensor) -> torch.Tensor:
    """Return a copy of the scores with -inf above the diagonal; the input is left untouched.

    Args:
        attn_scores: (..., T, T) attention scores.

    Returns:
        (..., T, T) a new tensor, -inf wherever j > i.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.5.1; ``attn_scores`` = Q Kᵀ of the seed-789 SelfAttention_v2)::

        >>> mask_future_scores(attn_scores)[0]
        tensor([0.2899,   -inf,   -inf,   -inf,   -inf,   -inf])
    """
    ### BEGIN SOLUTION
    num_tokens = attn_scores.shape[-1]
    future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=attn_scores.device), diagonal=1)
    return attn_scores.masked_fill(future, float("-inf"))
    ### END SOLUTION


def causal_attention_weights(attn_scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Causal attention weights: mask the future with -inf, scale by 1/√d_k, softmax each row.

    Args:
        attn_scores: (..., T, T) unscaled scores Q Kᵀ.
        d_k: the key dimension used for the scale.

    Returns:
        (..., T, T) weights, 0 above the diagonal, rows summing to 1.

    Example (exercises/documents/notebook_causal_self_attention.txt, softmax of the scaled, -inf-masked seed-789 scores, d_k = 2)::

        >>> causal_attention_weights(attn_scores, 2)[1]
        tensor([0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000])
    """
    ### BEGIN SOLUTION
    return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "masks, two ways"
README = r"""
Section 3.5.1. Four functions, all keeping the input's shape and never modifying the input:

- `causal_mask(num_tokens)`: the (T, T) lower-triangular matrix of ones.
- `mask_and_renormalize(attn_weights)`: zero the weights above the diagonal, then divide each row by
  its new sum (the first way in the document).
- `mask_future_scores(attn_scores)`: a copy with `-inf` above the diagonal.
- `causal_attention_weights(attn_scores, d_k)`: the efficient way: mask the scores with `-inf`, scale
  by 1/√d_k, softmax. It gives the same weights as the first way.

Check (`notebook_causal_self_attention.txt`, seed 789): row 1 of the causal weights is `[0.5517, 0.4483, 0, 0, 0, 0]`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

PyTorch has `torch.tril` (keep the lower triangle) and `torch.triu(..., diagonal=1)`
(strictly above the diagonal).

</details>

<details><summary>Level 2: an approach</summary>

Renormalizing: multiply by the tril mask, then divide by
`masked.sum(dim=-1, keepdim=True)`. Masking scores: `scores.masked_fill(future, float("-inf"))`
with a *boolean* mask; `masked_fill` (no underscore) returns a copy, `masked_fill_` changes the input.

</details>

<details><summary>Level 3: nearly the answer</summary>

`future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)`;
`torch.softmax(mask_future_scores(scores) / d_k ** 0.5, dim=-1)`. Build masks on the input's
device (`device=x.device`).

</details>
"""
### END STUDENT TEXT
