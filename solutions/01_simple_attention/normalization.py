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


### BEGIN STUDENT TEXT
BUILD_ORDER = "scores → weights that sum to 1"
README = r"""
Section 3.3.1, step 2. Scores become attention weights: non-negative and summing to 1.

- `normalize_by_sum(scores, dim=-1)`: divide by the sum along `dim`.
- `softmax_naive(scores, dim=-1)`: `exp(x) / sum(exp(x))`, straight from the formula.
- `softmax_stable(scores, dim=-1)`: the same, but correct for scores like 1000 (where `exp` overflows),
  for rows whose scales differ wildly (`[[1000., 999.], [0., -1.]]`: every row normalized along `dim`
  needs its own shift) and for `-inf` entries (which must get weight exactly 0: you will need that for
  causal masks).

All three return the shape they are given. Note: the document's tip lists the two results in the
order sum-normalized `[0.1455, ...]`, then softmax `[0.1385, ...]`; its code comment under the sum
shows the softmax result. Trust the math, not the label.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

"along `dim`" means you need the sum of each row, kept in a shape that broadcasts
against the scores.

</details>

<details><summary>Level 2: an approach</summary>

`scores.sum(dim=dim, keepdim=True)`. For softmax, exponentiate first. For the
stable version, remember that softmax(x) == softmax(x - c) for any constant c, and
that each row may have its own c: take the one that keeps that row's exponentials in range.

</details>

<details><summary>Level 3: nearly the answer</summary>

Subtract the row maximum (`amax` along `dim`, with `keepdim=True`) from the scores,
then apply the naive formula to the result. Check with `torch.tensor([1000., 1000., -float("inf")])`: you want `[0.5, 0.5, 0.0]`;
and with `torch.tensor([[1000., 999.], [0., -1.]])`: the maximum of the whole tensor (1000) would
leave the second row `exp(-1000) = 0` everywhere, 0 / 0.

</details>
"""
### END STUDENT TEXT
