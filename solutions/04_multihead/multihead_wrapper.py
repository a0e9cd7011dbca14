"""Section 3.6.1: stacking single-head causal attention modules."""

import torch
import torch.nn as nn

from causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent CausalAttention heads, their outputs concatenated.

    Attributes:
        heads: an ``nn.ModuleList`` of ``num_heads`` of your own CausalAttention modules, each
            ``CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)``, created in order.

    forward: x (b, T, d_in) -> (b, T, num_heads * d_out), the heads concatenated on the last dim.

    Example (000, section 3.6.1, d_out=2, num_heads=2)::

        >>> torch.manual_seed(123)
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
        ### BEGIN SOLUTION
        return torch.cat([head(x) for head in self.heads], dim=-1)
        ### END SOLUTION


def two_dim_wrapper(d_in: int, context_length: int, dropout: float = 0.0) -> MultiHeadAttentionWrapper:
    """Exercise 3.2: a wrapper with 2 heads whose output embeddings are two-dimensional.

    Returns:
        A MultiHeadAttentionWrapper that maps (b, T, d_in) -> (b, T, 2).

    Example (seed 123, the documents' input batch)::

        >>> torch.manual_seed(123)
        >>> two_dim_wrapper(3, 6)(batch)[0, 0]
        tensor([-0.5740,  0.2216], grad_fn=...)
    """
    ### BEGIN SOLUTION
    return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)
    ### END SOLUTION
