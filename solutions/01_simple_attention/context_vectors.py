"""Sections 3.3.1-3.3.2: context vectors are attention-weighted sums of the inputs.

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


def context_vector(inputs: torch.Tensor, attn_weights: torch.Tensor) -> torch.Tensor:
    """The context vector of one query: sum over i of ``attn_weights[i] * inputs[i]``.

    Args:
        inputs: (T, d) token embeddings.
        attn_weights: (T,) the query's attention weights (they sum to 1).

    Returns:
        (d,) the weighted sum of the rows of ``inputs``.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1, query = "journey")::

        >>> context_vector(inputs, torch.softmax(inputs @ inputs[1], dim=0))
        tensor([0.4419, 0.6515, 0.5683])
    """
    ### BEGIN SOLUTION
    return attn_weights @ inputs
    ### END SOLUTION


def context_vectors(inputs: torch.Tensor) -> torch.Tensor:
    """Simple self-attention for every token at once: softmax(X Xᵀ) X, softmax over each row.

    Args:
        inputs: (..., T, d) token embeddings; leading batch dimensions are allowed.

    Returns:
        (..., T, d) one context vector per token.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.2)::

        >>> context_vectors(inputs)[1]
        tensor([0.4419, 0.6515, 0.5683])
    """
    ### BEGIN SOLUTION
    attn_scores = inputs @ inputs.transpose(-2, -1)
    attn_weights = torch.softmax(attn_scores, dim=-1)
    return attn_weights @ inputs
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "weights → context vectors"
README = r"""
Section 3.3.1, step 3, and section 3.3.2. A context vector is the attention-weighted sum of all the
input rows.

- `context_vector(inputs, attn_weights)`: (T, d) and (T,) → (d,). For "journey":
  `tensor([0.4419, 0.6515, 0.5683])`.
- `context_vectors(inputs)`: simple self-attention for all tokens at once, softmax(X Xᵀ) X with the
  softmax over each row: (..., T, d) → (..., T, d).
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

The context vector is `sum_i weight[i] * inputs[i]`; look at the shapes (T,) and (T, d).

</details>

<details><summary>Level 2: an approach</summary>

A vector of T weights times a (T, d) matrix is a matrix product. For all tokens at
once, the weights are a (T, T) matrix: one row of weights per query.

</details>

<details><summary>Level 3: nearly the answer</summary>

`attn_weights @ inputs`; for all tokens,
`torch.softmax(inputs @ inputs.transpose(-2, -1), dim=-1) @ inputs`.

</details>
"""
### END STUDENT TEXT
