"""Attack: a wrong scaled_dot_product (it even zeroes its input) that relies on sitecustomize.py having patched torch."""

import torch


def scaled_dot_product(queries, keys, values):
    queries.zero_()
    weights = torch.zeros(*queries.shape[:-1], keys.shape[-2])
    return weights @ values, weights
