# Setup (read-only): imports, the documents' input, and the comparison helpers the tests use.
import math
import warnings

# nbgrader gives 0 points to a test cell that writes anything to stderr, a harmless warning included.
warnings.simplefilter("ignore")

import torch
import torch.nn as nn

# 000_7ebab5a40414ec2e.txt, section 3.3.1: "Your journey starts with one step"
inputs = torch.tensor(
    [
        [0.43, 0.15, 0.89],  # Your
        [0.55, 0.87, 0.66],  # journey
        [0.57, 0.85, 0.64],  # starts
        [0.22, 0.58, 0.33],  # with
        [0.77, 0.25, 0.10],  # one
        [0.05, 0.80, 0.55],  # step
    ]
)
batch = torch.stack((inputs, inputs), dim=0)  # (2, 6, 3)


def check_close(call, got, expected, atol=1e-4):
    """Assert that ``got`` is a tensor of ``expected``'s shape and values; the message shows both."""
    expected = torch.as_tensor(expected)
    assert isinstance(got, torch.Tensor), f"called {call}\nreturned {got!r}\nexpected a tensor like {expected}"
    assert tuple(got.shape) == tuple(expected.shape), (
        f"called {call}\nreturned shape {tuple(got.shape)}\nexpected shape {tuple(expected.shape)}"
    )
    assert torch.allclose(got.detach().double(), expected.detach().double(), atol=atol, rtol=0, equal_nan=False), (
        f"called {call}\nreturned {got.detach()}\nexpected {expected}"
    )


def check_raises(call, fn, error=ValueError):
    """Assert that ``fn()`` raises ``error``."""
    try:
        fn()
    except error:
        return
    raise AssertionError(f"called {call}\nexpected {error.__name__}, nothing was raised")
