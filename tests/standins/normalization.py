"""Stand-in for normalization.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``torch.softmax``, a sum):
it holds nothing the library's documentation does not.
"""

import torch


def normalize_by_sum(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.div(scores, torch.sum(scores, dim=dim, keepdim=True))


def softmax_naive(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores, dim=dim)


def softmax_stable(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores, dim=dim)
