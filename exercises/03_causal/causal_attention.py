"""Section 3.5.3: a compact causal self-attention class.

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


class CausalAttention(nn.Module):
    """Causal self-attention over a batch, with dropout on the attention weights.

    Attributes (create them in this order, right after ``super().__init__()``):
        W_query, W_key, W_value: ``nn.Linear(d_in, d_out, bias=qkv_bias)``
        dropout: ``nn.Dropout(dropout)``
        mask: a registered buffer (``self.register_buffer``), the (context_length, context_length)
            matrix ``torch.triu(torch.ones(...), diagonal=1)``: 1 above the diagonal. A buffer is
            saved in ``state_dict`` and follows ``.to(device)``; a plain attribute does not.

    forward: x (b, T, d_in) -> (b, T, d_out) for any T <= context_length (cut the mask to T x T);
    T > context_length raises ValueError naming both numbers. The forward reads the mask and never
    changes it: cut a view for each call (``self.mask.bool()[:T, :T]``); ``self.mask = self.mask[:T, :T]``
    or an in-place change of the buffer would break the next, longer input.

    Example (exercises/documents/notebook_causal_self_attention.txt, CausalAttentionV1, d_in=3, d_out=2, dropout 0.0; exercises/documents/chapter_notes_3.1-3.6.txt, section 3.5.3 builds the same class)::

        >>> _ = torch.manual_seed(123)
        >>> CausalAttention(3, 2, 6, 0.0)(batch)[0, 0]
        tensor([-0.4519,  0.2216], grad_fn=...)
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        # TODO: write the body of CausalAttention.__init__ here, then delete the raise below.
        raise NotImplementedError("CausalAttention.__init__: not written yet -- see exercises/03_causal/README.md, section 'causal_attention'")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (b, T, d_in) -> context vectors (b, T, d_out); future tokens get attention weight 0."""
        # TODO: write the body of CausalAttention.forward here, then delete the raise below.
        raise NotImplementedError("CausalAttention.forward: not written yet -- see exercises/03_causal/README.md, section 'causal_attention'")
