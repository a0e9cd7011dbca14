"""Section 3.4.1: scaled dot-product attention with queries, keys and values.

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


def scaled_dot_product(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention: weights = softmax(Q Kᵀ / √d_k) over the last dim.

    Args:
        queries: (..., T_q, d_k)
        keys: (..., T_k, d_k)
        values: (..., T_k, d_v)
        Leading batch dimensions (any number, including none) must match.

    Returns:
        ``(context, attn_weights)``: context (..., T_q, d_v) and attn_weights (..., T_q, T_k),
        whose rows sum to 1.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.4.1; seed-123 torch.rand projections, d_k = 2)::

        >>> context, weights = scaled_dot_product(queries, keys, values)
        >>> weights[1]
        tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])
    """
    ### BEGIN SOLUTION
    d_k = keys.shape[-1]
    attn_scores = queries @ keys.transpose(-2, -1)
    attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)
    return attn_weights @ values, attn_weights
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "softmax(Q Kᵀ / √d_k) V as a function"
README = r"""
Section 3.4.1. `scaled_dot_product(queries, keys, values)` with shapes (..., T_q, d_k),
(..., T_k, d_k), (..., T_k, d_v) returns `(context, attn_weights)`: (..., T_q, d_v) and
(..., T_q, T_k). Divide the scores by √d_k before the softmax: large dot products would push the
softmax towards a step function with vanishing gradients.

Check (seed-123 `torch.rand(3, 2)` projections): the weights of "journey" are
`tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])`, its context vector `tensor([0.3061, 0.8210])`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

It is section 01's `context_vectors`, except that the scores compare queries with keys
and the weighted sum runs over values.

</details>

<details><summary>Level 2: an approach</summary>

`scores = queries @ keys.transpose(-2, -1)`; `d_k = keys.shape[-1]`; softmax over the
last dimension of `scores / d_k ** 0.5`; then weights @ values.

</details>

<details><summary>Level 3: nearly the answer</summary>

Return `(attn_weights @ values, attn_weights)`, in that order.

</details>
"""
### END STUDENT TEXT
