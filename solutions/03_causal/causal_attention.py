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
        ### BEGIN SOLUTION
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (b, T, d_in) -> context vectors (b, T, d_out); future tokens get attention weight 0."""
        ### BEGIN SOLUTION
        num_tokens = x.shape[-2]
        if num_tokens > self.context_length:
            raise ValueError(f"the input has {num_tokens} tokens, more than context_length={self.context_length}")
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
        ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "the `CausalAttention` class"
README = r"""
Section 3.5.3. `CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)`:
forward x (b, T, d_in) → (b, T, d_out) for any T ≤ context_length.

- Create `W_query`, `W_key`, `W_value` (`nn.Linear`), then `dropout` (`nn.Dropout`), then the mask.
- Keep the mask with `self.register_buffer("mask", torch.triu(torch.ones(L, L), diagonal=1))`: a buffer
  is saved with the model and moves with `.to(device)`; a plain attribute stays on the CPU.
- Moved with `.to(device)`, it runs on a GPU and computes there what it computes on the CPU: the grader's
  GPU-run check runs it on CUDA, or on a simulated GPU where there is none (`kata_gpu.py`, the same one
  `test_causal_attention_runs_on_any_device` uses).
- Cut the mask to T × T; raise `ValueError` naming both numbers when T > context_length.
- The forward never changes the mask: cut a view of it for each call (`self.mask.bool()[:T, :T]`). Assigning
  `self.mask = self.mask[:T, :T]`, or changing the buffer in place, breaks the next, longer input.

Check (`notebook_causal_self_attention.txt`, seed 123, d_out=2, dropout 0.0): the first context vector is `[-0.4519, 0.2216]`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

It is `SelfAttention_v2` plus two lines: a mask before the softmax and dropout after it.

</details>

<details><summary>Level 2: an approach</summary>

`T = x.shape[1]`; scores `queries @ keys.transpose(1, 2)`; fill
`self.mask.bool()[:T, :T]` with `-torch.inf`; softmax of scores / √d_out; `self.dropout(...)`;
weights @ values.

</details>

<details><summary>Level 3: nearly the answer</summary>

In `__init__`, after `super().__init__()`: three `nn.Linear`, then
the `nn.Dropout` module named `dropout`, then the mask: `torch.triu` of a
(context_length, context_length) matrix of ones above the diagonal, registered with
`self.register_buffer` under the name `"mask"`.
Remember `self.context_length` for the ValueError.

</details>
"""
### END STUDENT TEXT
