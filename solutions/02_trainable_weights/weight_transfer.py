"""Section 3.4.2, exercise: make SelfAttention_v1 and SelfAttention_v2 compute the same thing."""

import torch
import torch.nn as nn

_PROJECTIONS = ("W_query", "W_key", "W_value")


def copy_weights_v2_to_v1(sa_v2: nn.Module, sa_v1: nn.Module) -> None:
    """Copy a SelfAttention_v2's weights into a SelfAttention_v1, in place.

    nn.Linear stores its weight as (d_out, d_in); v1 keeps (d_in, d_out): copy the transpose.
    Copy values (``param.copy_`` under ``torch.no_grad()``): do not replace v1's nn.Parameters and
    do not make them share storage with v2's.

    Raises:
        ValueError: if v2 has biases (v1 has nowhere to put them) or the shapes do not match.
            Nothing is copied in that case.

    Example::

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
