"""Section 3.3.1: turning attention scores into weights that sum to 1.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.
"""

import torch


def normalize_by_sum(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Divide the scores by their sum along ``dim``.

    Args:
        scores: any shape; ``dim`` is the axis to normalize.

    Returns:
        Same shape as ``scores``; sums to 1 along ``dim``.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1)::

        >>> normalize_by_sum(torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]))
        tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
    """
    ### BEGIN SOLUTION
    return scores / scores.sum(dim=dim, keepdim=True)
    ### END SOLUTION


def softmax_naive(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax straight from the formula: exp(x) / sum(exp(x)) along ``dim``.

    It overflows for large scores (exp(1000) is inf): that is what softmax_stable fixes.

    Args:
        scores: any shape; ``dim`` is the axis to normalize.

    Returns:
        Same shape as ``scores``; sums to 1 along ``dim``.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1)::

        >>> softmax_naive(torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]))
        tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    """
    ### BEGIN SOLUTION
    exp = torch.exp(scores)
    return exp / exp.sum(dim=dim, keepdim=True)
    ### END SOLUTION


def softmax_stable(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax that subtracts the maximum along ``dim`` (each row's own, not the whole tensor's) before exponentiating.

    Mathematically the same as softmax_naive, but correct for scores like 1000 and for rows
    that hold -inf (masked positions get weight exactly 0).

    Args:
        scores: any shape; ``dim`` is the axis to normalize.

    Returns:
        Same shape as ``scores``; sums to 1 along ``dim``.

    Example::

        >>> softmax_stable(torch.tensor([1000.0, 1000.0, -float("inf")]))
        tensor([0.5000, 0.5000, 0.0000])
    """
    ### BEGIN SOLUTION
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    exp = torch.exp(shifted)
    return exp / exp.sum(dim=dim, keepdim=True)
    ### END SOLUTION
