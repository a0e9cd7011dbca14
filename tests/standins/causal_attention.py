"""Stand-in for causal_attention.py in a re-grade of the wrapper (see README.md): not attention.

CausalAttention with the stub's constructor and parameters (W_query, W_key, W_value, then dropout);
its forward is a running mean over the tokens so far of a gated projection: causal and
position-dependent like the real thing, so a wrapper that mixes up its heads or tokens still shows,
but with no scores, no softmax and no mask.
"""

import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gated = torch.tanh(self.W_query(x)) * self.W_key(x) + self.W_value(x)
        count = torch.arange(1, x.shape[-2] + 1, dtype=x.dtype, device=x.device).unsqueeze(-1)
        return self.dropout(gated.cumsum(dim=-2) / count)
