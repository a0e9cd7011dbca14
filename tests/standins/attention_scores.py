"""Stand-in for attention_scores.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (a matrix product): it holds
nothing the library's documentation does not.
"""

import torch


def attention_scores(inputs: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    return torch.mv(inputs, query)


def attention_score_matrix(inputs: torch.Tensor) -> torch.Tensor:
    return torch.matmul(inputs, inputs.mT)
