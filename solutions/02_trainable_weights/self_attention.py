"""Section 3.4.2: a compact self-attention class, first with nn.Parameter, then with nn.Linear.

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
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    """Self-attention with explicit weight matrices.

    Attributes ``W_query``, ``W_key``, ``W_value``: each ``nn.Parameter(torch.rand(d_in, d_out))``,
    created in exactly that order (the documents' seeded outputs depend on it).

    forward: x (..., T, d_in) -> (..., T, d_out), softmax(Q Kᵀ / √d_out) V with Q = x @ W_query.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.4.2)::

        >>> _ = torch.manual_seed(123)
        >>> SelfAttention_v1(3, 2)(inputs)[0]
        tensor([0.2996, 0.8053], grad_fn=...)
    """

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        # Create W_query, then W_key, then W_value.
        ### BEGIN SOLUTION
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., T, d_in) -> context vectors (..., T, d_out); keys = x @ self.W_key, and so on."""
        ### BEGIN SOLUTION
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
        ### END SOLUTION


class SelfAttention_v2(nn.Module):
    """Self-attention with ``nn.Linear`` projections (no bias unless ``qkv_bias``).

    Attributes ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``,
    created in that order. nn.Linear stores its weight as (d_out, d_in): the transpose of v1's.

    forward: x (..., T, d_in) -> (..., T, d_out).

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.4.2)::

        >>> _ = torch.manual_seed(789)
        >>> SelfAttention_v2(3, 2)(inputs)[0]
        tensor([-0.0739,  0.0713], grad_fn=...)
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        # Create W_query, then W_key, then W_value.
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., T, d_in) -> context vectors (..., T, d_out); keys = self.W_key(x), and so on."""
        ### BEGIN SOLUTION
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
        ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "the same inside an `nn.Module`, two ways"
README = r"""
Section 3.4.2. Two classes, forward x (..., T, d_in) → (..., T, d_out):

- `SelfAttention_v1(d_in, d_out)`: `W_query`, `W_key`, `W_value` are `nn.Parameter(torch.rand(d_in, d_out))`;
  queries are `x @ self.W_query`.
- `SelfAttention_v2(d_in, d_out, qkv_bias=False)`: the three are `nn.Linear(d_in, d_out, bias=qkv_bias)`;
  queries are `self.W_query(x)`. nn.Linear has a better initialization and stores its weight as
  (d_out, d_in).

Check: `torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)[0]` is `[0.2996, 0.8053]`;
`torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)[0]` is `[-0.0739, 0.0713]`.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

`__init__` only creates three parameters; `forward` is `scaled_dot_product` with
queries, keys and values computed from `x`.

</details>

<details><summary>Level 2: an approach</summary>

V1: `keys = x @ self.W_key` (and so on). v2: `keys = self.W_key(x)`. Scale by
`keys.shape[-1] ** 0.5`. Use `keys.transpose(-2, -1)`, not `keys.T`, so a batch still works.

</details>

<details><summary>Level 3: nearly the answer</summary>

In `__init__`, exactly three lines, in the order query, key, value:
each an `nn.Parameter` wrapping `torch.rand` of shape (d_in, d_out) (v1), or an
`nn.Linear` from d_in to d_out with `bias=qkv_bias` (v2). A different order draws different
random numbers and the seeded tests fail.

</details>
"""
### END STUDENT TEXT
