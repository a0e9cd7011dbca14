"""Stand-in for causal_mask.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``torch.tril``,
``masked_fill``, ``torch.softmax``): it holds nothing the library's documentation does not.
"""

import math

import torch


def causal_mask(num_tokens: int) -> torch.Tensor:
    return torch.ones(num_tokens, num_tokens).tril()


def mask_and_renormalize(attn_weights: torch.Tensor) -> torch.Tensor:
    kept = attn_weights.tril()
    return kept / kept.sum(dim=-1, keepdim=True)


def mask_future_scores(attn_scores: torch.Tensor) -> torch.Tensor:
    future = torch.ones(attn_scores.shape[-2:], dtype=torch.bool, device=attn_scores.device).tril().logical_not()
    return attn_scores.masked_fill(future, -math.inf)


def causal_attention_weights(attn_scores: torch.Tensor, d_k: int) -> torch.Tensor:
    return torch.softmax(mask_future_scores(attn_scores) / math.sqrt(d_k), dim=-1)
