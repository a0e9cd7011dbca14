"""Attack: print 10 MB while being imported (the functions are correct: the exercise must still pass)."""

import sys

import torch

for _ in range(10 * 1024):
    sys.stdout.write("x" * 1023 + "\n")
sys.stdout.flush()


def normalize_by_sum(scores, dim=-1):
    return scores / scores.sum(dim=dim, keepdim=True)


def softmax_naive(scores, dim=-1):
    exp = torch.exp(scores)
    return exp / exp.sum(dim=dim, keepdim=True)


def softmax_stable(scores, dim=-1):
    exp = torch.exp(scores - scores.amax(dim=dim, keepdim=True))
    return exp / exp.sum(dim=dim, keepdim=True)
