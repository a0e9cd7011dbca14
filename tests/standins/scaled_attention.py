"""Stand-in for scaled_attention.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``torch.softmax``, matrix
products; never ``scaled_dot_product_attention``, which the exercises that reuse it may not call): it
holds nothing the library's documentation does not.
"""

import math

import torch


def scaled_dot_product(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    weights = torch.softmax(torch.matmul(queries, keys.mT) / math.sqrt(keys.shape[-1]), dim=-1)
    return torch.matmul(weights, values), weights
