"""Section 3.6.2: multi-head attention with weight splits.

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


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention: one projection each for Q, K, V, split into heads.

    Attributes (create them in this order, right after ``super().__init__()``):
        W_query, W_key, W_value: ``nn.Linear(d_in, d_out, bias=qkv_bias)``
        out_proj: ``nn.Linear(d_out, d_out)`` (with bias), combining the heads
        dropout: ``nn.Dropout(dropout)``
        mask: registered buffer, ``torch.triu(torch.ones(context_length, context_length), diagonal=1)``;
            the forward cuts a T x T view of it for each call and never changes it (``self.mask = ...`` or an
            in-place change of the buffer would break the next, longer input)
        head_dim: ``d_out // num_heads``; d_out not divisible by num_heads raises ValueError.

    forward: x (b, T, d_in) -> (b, T, d_out): split Q, K, V into (b, num_heads, T, head_dim),
    causal softmax(Q Kᵀ / √head_dim) per head, dropout, weights @ V, merge the heads, out_proj.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.2, d_in=3, d_out=2, num_heads=2, with head_dim = d_out // num_heads; the listing there sets head_dim = d_out, a bug, and prints nothing: the value is from exercises/documents/README.md)::

        >>> _ = torch.manual_seed(123)
        >>> MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)[0, 0]
        tensor([0.3190, 0.4858], grad_fn=...)
    """

    def __init__(
        self, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int, qkv_bias: bool = False
    ):
        super().__init__()
        # TODO: write the body of MultiHeadAttention.__init__ here, then delete the raise below.
        raise NotImplementedError("MultiHeadAttention.__init__: not written yet -- see exercises/04_multihead/README.md, section 'multihead_attention'")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (b, T, d_in) -> (b, T, d_out); raises ValueError if T > context_length."""
        # TODO: write the body of MultiHeadAttention.forward here, then delete the raise below.
        raise NotImplementedError("MultiHeadAttention.forward: not written yet -- see exercises/04_multihead/README.md, section 'multihead_attention'")


def gpt2_attention() -> MultiHeadAttention:
    """The GPT-2 (124M) sized attention: 768 -> 768, 12 heads, context 1024, dropout 0.0.

    Dropout 0.0, not the 0.1 GPT-2 trains with: in training mode the layer gives its eval-mode output.

    Returns:
        A MultiHeadAttention with 2,360,064 parameters (exercises/documents/README.md; the GPT-2
        sizes follow exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.2).
    """
    # TODO: write the body of gpt2_attention here, then delete the raise below.
    raise NotImplementedError("gpt2_attention: not written yet -- see exercises/04_multihead/README.md, section 'multihead_attention'")
