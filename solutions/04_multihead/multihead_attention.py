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
        ### BEGIN SOLUTION
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (b, T, d_in) -> (b, T, d_out); raises ValueError if T > context_length."""
        ### BEGIN SOLUTION
        b, num_tokens, _ = x.shape
        if num_tokens > self.context_length:
            raise ValueError(f"the input has {num_tokens} tokens, more than context_length={self.context_length}")
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context)
        ### END SOLUTION


def gpt2_attention() -> MultiHeadAttention:
    """The GPT-2 (124M) sized attention: 768 -> 768, 12 heads, context 1024, dropout 0.0.

    Dropout 0.0, not the 0.1 GPT-2 trains with: in training mode the layer gives its eval-mode output.

    Returns:
        A MultiHeadAttention with 2,360,064 parameters (exercises/documents/README.md; the GPT-2
        sizes follow exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.2).
    """
    ### BEGIN SOLUTION
    return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "the efficient class"
README = r"""
Section 3.6.2. `MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`:
one `nn.Linear(d_in, d_out)` each for queries, keys and values, split into heads of
`head_dim = d_out // num_heads`, causal attention per head scaled by 1/√head_dim, heads merged, then
`out_proj = nn.Linear(d_out, d_out)`. Create `W_query`, `W_key`, `W_value`, `out_proj`, `dropout`,
then the `mask` buffer, in that order. As in `CausalAttention`, the forward cuts a T × T view of the mask
and never changes the buffer (a longer input after a shorter one must work).

Careful: the listing in `chapter_notes_3.1-3.6.txt`, section 3.6.2, sets `self.head_dim = d_out`. That
is a bug; use `d_out // num_heads` (as `article_attention_mechanisms.txt` does).

`gpt2_attention()`: the GPT-2 (124M) sized layer, 768 → 768, 12 heads, context 1024, dropout 0.0 (not
GPT-2's training value 0.1: in training mode it gives its eval-mode output); 2,360,064 parameters.

Check (seed 123, d_in=3, d_out=2, 2 heads): the first row is `[0.3190, 0.4858]`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

It is `CausalAttention` with a head axis: every tensor gets shape (b, h, T, hd), and
`matmul` handles the extra axis for you.

</details>

<details><summary>Level 2: an approach</summary>

Project, `split_heads`-style reshape + transpose for queries, keys and values;
scores `queries @ keys.transpose(2, 3)`; mask with `self.mask.bool()[:T, :T]`; softmax of
scores / `self.head_dim ** 0.5`; dropout; weights @ values; merge heads; `self.out_proj(...)`.

</details>

<details><summary>Level 3: nearly the answer</summary>

Check `d_out % num_heads` before creating any layer. Test yourself with
`head_dim > 1` and distinct batch rows: the documents' own example (head_dim 1, identical rows)
cannot catch a wrong scale or a mixed-up reshape.

</details>
"""
### END STUDENT TEXT
