"""Stand-in for context_vectors.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``torch.softmax``, matrix
products): it holds nothing the library's documentation does not.
"""

import torch


def context_vector(inputs: torch.Tensor, attn_weights: torch.Tensor) -> torch.Tensor:
    return torch.mv(inputs.T, attn_weights)


def context_vectors(inputs: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(inputs, inputs.mT), dim=-1), inputs)
