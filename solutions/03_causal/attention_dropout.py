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
