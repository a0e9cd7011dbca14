"""Attack: return an object that equals everything (and looks like a tensor) instead of a tensor."""

import torch


class Anything(torch.Tensor):
    """A tensor subclass whose comparisons always say yes."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def allclose(self, *a, **k):
        return True


class Liar:
    shape = dtype = None

    def __eq__(self, other):
        return True

    def __bool__(self):
        return True

    def __getattr__(self, name):
        return self


def context_vector(inputs, attn_weights):
    return Liar()


def context_vectors(inputs):
    return torch.zeros(inputs.shape).as_subclass(Anything)
