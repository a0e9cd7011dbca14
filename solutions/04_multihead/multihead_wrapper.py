"""Section 3.6.1: stacking single-head causal attention modules.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.

The examples use the documents' six-token input "Your journey starts with one step"
(exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1)::

    inputs = torch.tensor([[0.43, 0.15, 0.89],   # Your
                           [0.55, 0.87, 0.66],   # journey
                           [0.57, 0.85, 0.64],   # starts
                           [0.22, 0.58, 0.33],   # with
                           [0.77, 0.25, 0.10],   # one
                           [0.05, 0.80, 0.55]])  # step
    batch = torch.stack((inputs, inputs), dim=0)  # (2, 6, 3)
"""

import torch
import torch.nn as nn

from causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent CausalAttention heads, their outputs concatenated.

    Attributes:
        heads: an ``nn.ModuleList`` of ``num_heads`` of your own CausalAttention modules, each
            ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``, created in order.

    forward: x (b, T, d_in) -> (b, T, num_heads * d_out), the heads concatenated on the last dim.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.1, d_out=2, num_heads=2)::

        >>> _ = torch.manual_seed(123)
        >>> MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)[0, 0]
        tensor([-0.4519,  0.2216,  0.4772,  0.1063], grad_fn=...)
    """

    def __init__(
        self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int, qkv_bias: bool = False
    ):
        super().__init__()
        ### BEGIN SOLUTION
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (b, T, d_in) -> (b, T, num_heads * d_out): every head's output, concatenated."""
        ### BEGIN SOLUTION
        return torch.cat([head(x) for head in self.heads], dim=-1)
        ### END SOLUTION


def two_dim_wrapper(d_in: int, context_length: int, dropout: float = 0.0) -> MultiHeadAttentionWrapper:
    """Exercise 3.2: a wrapper with 2 heads whose output embeddings are two-dimensional.

    Returns:
        A MultiHeadAttentionWrapper that maps (b, T, d_in) -> (b, T, 2).

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.1, Exercise 3.2 "d_out = 1"; seed 123; value from exercises/documents/README.md)::

        >>> _ = torch.manual_seed(123)
        >>> two_dim_wrapper(3, 6)(batch)[0, 0]
        tensor([-0.5740,  0.2216], grad_fn=...)
    """
    ### BEGIN SOLUTION
    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "stacked heads (imports your `../03_causal/causal_attention.py`: do that first)"
README = r"""
Section 3.6.1. `MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`
holds `heads`, an `nn.ModuleList` of `num_heads` of your `CausalAttention` modules, and concatenates
their outputs: (b, T, d_in) → (b, T, num_heads * d_out).

`two_dim_wrapper(d_in, context_length, dropout=0.0)`: Exercise 3.2, a two-head wrapper whose output
embeddings are two-dimensional.

Check (seed 123, d_out=2, 2 heads): the first row is `[-0.4519, 0.2216, 0.4772, 0.1063]`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

The wrapper does no attention itself: it owns some `CausalAttention`s and glues their
outputs together.

</details>

<details><summary>Level 2: an approach</summary>

A plain Python list of modules is invisible to PyTorch (no parameters, no `.to()`);
use `nn.ModuleList`. Concatenate on the last dimension with `torch.cat(..., dim=-1)`.
For two-dimensional outputs with two heads, what must each head's d_out be?

</details>

<details><summary>Level 3: nearly the answer</summary>

`heads` is an `nn.ModuleList` built from a list comprehension that makes one
`CausalAttention` with the wrapper's own arguments per head;
`two_dim_wrapper` returns `MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)`.

</details>
"""
### END STUDENT TEXT
