"""Stand-in for attention_dropout.py in a re-grade of a module that imports it (see README.md).

A function module's stand-in computes the stated result with the library (the ``bernoulli_`` draw the stub
states): it holds nothing the library's documentation does not. It runs no operation the rubric forbids in the
names it stands in for (no ``F.dropout``: grader/tests/test_from_scratch_rule.py), so that nothing of it is
ever charged to a student's module that calls it.
"""

import torch


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if not training or p <= 0.0:
        return x
    if p >= 1.0:
        return torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    survivors = torch.empty_like(x).bernoulli_(1.0 - p)  # the draw nn.Dropout makes, as the stub states
    return torch.mul(x, survivors.div_(1.0 - p))
