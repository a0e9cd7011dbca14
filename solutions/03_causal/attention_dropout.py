"""Section 3.5.2: masking additional attention weights with dropout.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.
"""

import torch


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout from scratch: zero each element with probability p, scale survivors by 1/(1-p).

    Draw the keep-mask with ``torch.empty_like(x).bernoulli_(1 - p)`` so that, under the same seed on
    the CPU, you drop exactly the elements ``torch.nn.Dropout(p)`` drops.

    Args:
        x: any shape.
        p: drop probability in [0, 1].
        training: when False, return ``x`` unchanged, whatever p (p == 1 included).

    Returns:
        Same shape as ``x``. Identity when not training (any p) or when p == 0; all zeros when
        training with p == 1.

    Raises:
        ValueError: if p is outside [0, 1].

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.5.2 applies ``torch.nn.Dropout(0.5)`` the same way; CPU, PyTorch >= 2.7)::

        >>> _ = torch.manual_seed(123)
        >>> dropout(torch.ones(6, 6), 0.5)[0]
        tensor([2., 2., 0., 2., 2., 0.])
        >>> _ = torch.manual_seed(123)
        >>> torch.nn.Dropout(0.5)(torch.ones(6, 6))[0]     # the same mask
        tensor([2., 2., 0., 2., 2., 0.])
    """
    ### BEGIN SOLUTION
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return torch.zeros_like(x)
    keep = torch.empty_like(x).bernoulli_(1 - p)
    return x * keep.div_(1 - p)
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "dropout from scratch"
README = r"""
Section 3.5.2. `dropout(x, p, training=True)`: zero each element with probability p and multiply
the survivors by 1/(1-p), so that the expected value stays the same. Identity when not training
(whatever p, 1 included) or when p == 0, zeros when training with p == 1, `ValueError` outside [0, 1]. Draw the mask with
`torch.empty_like(x).bernoulli_(1 - p)`: then, on the CPU and under the same seed, you drop exactly
what `torch.nn.Dropout(p)` drops.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

"inverted" dropout rescales at training time, so nothing needs to change at inference.

</details>

<details><summary>Level 2: an approach</summary>

Handle the edge cases first (p outside [0, 1], not training, p == 0, p == 1), then
draw a keep-mask of 0s and 1s with probability 1 - p of a 1.

</details>

<details><summary>Level 3: nearly the answer</summary>

An empty tensor shaped like `x`, filled in place by `bernoulli_` with the keep
probability (1 - p, not p: p is the probability to drop), is the mask; multiply `x` by
it and divide by the keep probability. At p = 0.5 both are the same: check at p = 0.2.

</details>
"""
### END STUDENT TEXT
