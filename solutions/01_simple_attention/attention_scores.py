"""Section 3.3.1: attention scores are dot products between a query and every input token.

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


def attention_scores(inputs: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """Attention scores of one query against every token, written as a loop.

    Args:
        inputs: (T, d) token embeddings, one row per token.
        query: (d,) the query token's embedding.

    Returns:
        (T,) where entry i is the dot product ``inputs[i] · query``.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1, query = "journey", the 2nd token)::

        >>> attention_scores(inputs, inputs[1])
        tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    """
    ### BEGIN SOLUTION
    return torch.stack([torch.dot(x_i, query) for x_i in inputs])
    ### END SOLUTION


def attention_score_matrix(inputs: torch.Tensor) -> torch.Tensor:
    """Scores of every token against every token, as one matrix product.

    Args:
        inputs: (..., T, d) token embeddings; leading batch dimensions are allowed.

    Returns:
        (..., T, T) where entry [i, j] is ``inputs[i] · inputs[j]``.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.2)::

        >>> attention_score_matrix(inputs)[0]
        tensor([0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310])
    """
    ### BEGIN SOLUTION
    return inputs @ inputs.transpose(-2, -1)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "scores = dot products"
README = r"""
Section 3.3.1, step 1. The attention score of query token q against token i is the dot product
`inputs[i] · q`: a large score means "similar direction".

- `attention_scores(inputs, query)`: `inputs` (T, d), `query` (d,) → (T,). Write it as a loop over the
  tokens (`torch.dot`), as the document does; that makes the next function obvious.
- `attention_score_matrix(inputs)`: every token against every token, (..., T, d) → (..., T, T), in one
  matrix product (section 3.3.2). It must also work with a leading batch dimension.

Check: for query "journey" (`inputs[1]`) you get `tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

A score is one number per token: how much does token i point the same way as the query?

</details>

<details><summary>Level 2: an approach</summary>

Loop over the rows of `inputs`, take `torch.dot(row, query)` each time, and turn the
list of 0-d tensors into one tensor (`torch.stack` or `torch.tensor`). For the matrix, every
(i, j) pair is row i of `inputs` dotted with row j: that is a matrix product with a transpose.

</details>

<details><summary>Level 3: nearly the answer</summary>

`inputs @ inputs.transpose(-2, -1)`; use `-2, -1` rather than `.T` so that a
batch dimension in front keeps working.

</details>
"""
### END STUDENT TEXT
