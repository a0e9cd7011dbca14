"""Section 3.4.2, exercise: make SelfAttention_v1 and SelfAttention_v2 compute the same thing.

Document paths in the kata (``exercises/documents/...``) are relative to the repository root.

The examples use the documents' six-token input "Your journey starts with one step"
(exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1)::

    inputs = torch.tensor([[0.43, 0.15, 0.89],   # Your
                           [0.55, 0.87, 0.66],   # journey
                           [0.57, 0.85, 0.64],   # starts
                           [0.22, 0.58, 0.33],   # with
                           [0.77, 0.25, 0.10],   # one
                           [0.05, 0.80, 0.55]])  # step
"""

import torch
import torch.nn as nn

_PROJECTIONS = ("W_query", "W_key", "W_value")


def copy_weights_v2_to_v1(sa_v2: nn.Module, sa_v1: nn.Module) -> None:
    """Copy a SelfAttention_v2's weights into a SelfAttention_v1, in place.

    nn.Linear stores its weight as (d_out, d_in); v1 keeps (d_in, d_out): copy the transpose.
    Copy values (``param.copy_`` under ``torch.no_grad()``): do not replace v1's nn.Parameters and
    do not make them share storage with v2's.

    Args:
        sa_v2: a SelfAttention_v2; each ``nn.Linear`` weight is (d_out, d_in).
        sa_v1: a SelfAttention_v1; each ``nn.Parameter`` is (d_in, d_out). Modified in place.

    Returns:
        None.

    Raises:
        ValueError: if v2 has biases (v1 has nowhere to put them) or the shapes do not match.
            Nothing is copied in that case.

    Example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.4.2, the v2-to-v1 transfer exercise)::

        >>> sa_v2, sa_v1 = SelfAttention_v2(3, 2), SelfAttention_v1(3, 2)
        >>> copy_weights_v2_to_v1(sa_v2, sa_v1)
        >>> torch.allclose(sa_v1(inputs), sa_v2(inputs))
        True
    """
    ### BEGIN SOLUTION
    for name in _PROJECTIONS:
        linear, param = getattr(sa_v2, name), getattr(sa_v1, name)
        if linear.bias is not None:
            raise ValueError(f"sa_v2.{name} has a bias; SelfAttention_v1 has none, so the copy cannot be exact")
        if linear.weight.T.shape != param.shape:
            raise ValueError(
                f"sa_v2.{name}.weight.T has shape {tuple(linear.weight.T.shape)}, "
                f"sa_v1.{name} has shape {tuple(param.shape)}"
            )
    with torch.no_grad():
        for name in _PROJECTIONS:
            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)
    ### END SOLUTION


def copy_weights_v1_to_v2(sa_v1: nn.Module, sa_v2: nn.Module) -> None:
    """The reverse: copy a SelfAttention_v1's weights into a SelfAttention_v2, in place.

    Copies the transpose of each v1 matrix into the matching nn.Linear's weight and sets v2's
    biases, if it has them, to zero, so that both modules compute the same output.

    Args:
        sa_v1: a SelfAttention_v1; each ``nn.Parameter`` is (d_in, d_out).
        sa_v2: a SelfAttention_v2; each ``nn.Linear`` weight is (d_out, d_in). Modified in place.

    Returns:
        None.

    Example (the reverse of exercises/documents/chapter_notes_3.1-3.6.txt, section 3.4.2)::

        >>> copy_weights_v1_to_v2(sa_v1, sa_v2)
        >>> torch.allclose(sa_v2(inputs), sa_v1(inputs))
        True

    Raises:
        ValueError: if the shapes do not match. Nothing is copied in that case.
    """
    ### BEGIN SOLUTION
    for name in _PROJECTIONS:
        param, linear = getattr(sa_v1, name), getattr(sa_v2, name)
        if param.T.shape != linear.weight.shape:
            raise ValueError(
                f"sa_v1.{name}.T has shape {tuple(param.T.shape)}, "
                f"sa_v2.{name}.weight has shape {tuple(linear.weight.shape)}"
            )
    with torch.no_grad():
        for name in _PROJECTIONS:
            linear = getattr(sa_v2, name)
            linear.weight.copy_(getattr(sa_v1, name).T)
            if linear.bias is not None:
                linear.bias.zero_()
    ### END SOLUTION


### BEGIN STUDENT TEXT
BUILD_ORDER = "prove the two ways compute the same thing (uses your `self_attention.py`)"
README = r"""
The exercise at the end of section 3.4.2: copy the weights of a `SelfAttention_v2` into a
`SelfAttention_v1` (and back) so that both give the same output.

- `copy_weights_v2_to_v1(sa_v2, sa_v1)`: in place; copy values into v1's existing parameters. Raise
  `ValueError` (copying nothing) if v2 has biases or the shapes do not fit.
- `copy_weights_v1_to_v2(sa_v1, sa_v2)`: the reverse; zero v2's biases if it has any.
"""
HINTS = r"""
<details><summary>Level 1: a nudge</summary>

`sa_v2.W_query.weight` has shape (d_out, d_in); `sa_v1.W_query` has (d_in, d_out).

</details>

<details><summary>Level 2: an approach</summary>

Check every pair first (bias? shapes?) and only then copy, so that a `ValueError`
leaves both modules untouched. Copy with `param.copy_(...)` inside `with torch.no_grad():`:
assigning a new tensor would replace the module's parameter instead of updating it.

</details>

<details><summary>Level 3: nearly the answer</summary>

Loop over the three names with `getattr`; for each, the v1 parameter's `copy_`
receives the transpose (`.T`) of the v2 layer's `weight`.

</details>
"""
### END STUDENT TEXT
