"""Stand-in for head_split.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (``view``, ``transpose``,
``flatten``, a matrix product): it holds nothing the library's documentation does not.
"""

import torch


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    if x.shape[-1] % num_heads:
        raise ValueError(f"{x.shape[-1]} features do not split into {num_heads} heads")
    return x.unflatten(-1, (num_heads, -1)).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).flatten(2)


def per_head_scores(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    return torch.matmul(queries, keys.mT)
