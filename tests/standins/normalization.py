"""Stand-in for normalization.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``torch.exp``, a sum): it
holds nothing the library's documentation does not. It runs no operation the rubric forbids in the
names it stands in for (no ``torch.softmax``: grader/tests/test_from_scratch_rule.py), so that nothing of
it is ever charged to a student's module that calls it.
"""

import torch


def normalize_by_sum(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.div(scores, torch.sum(scores, dim=dim, keepdim=True))


def _exp_normalized(scores: torch.Tensor, dim: int) -> torch.Tensor:
    weights = torch.exp(torch.sub(scores, torch.max(scores, dim=dim, keepdim=True).values))
    return torch.div(weights, torch.sum(weights, dim=dim, keepdim=True))


def softmax_naive(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return _exp_normalized(scores, dim)


def softmax_stable(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return _exp_normalized(scores, dim)
