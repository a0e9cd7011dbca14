"""Stand-in for self_attention.py in a re-grade of weight_transfer (see README.md): not attention.

The classes have the stub's constructors and parameters (W_query, W_key, W_value, in that order);
their forward mixes each token's projections on its own, with no scores and no softmax, and uses
every weight so that gradients reach each one.
"""

import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.W_query) * (x @ self.W_key) + x @ self.W_value


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.W_query(x)) * self.W_key(x) + self.W_value(x)
