"""Attack: unfinished stubs, relying on the conftest.py next to it to report passes."""


def normalize_by_sum(scores, dim=-1):
    raise NotImplementedError("normalize_by_sum: not written yet")


def softmax_naive(scores, dim=-1):
    raise NotImplementedError("softmax_naive: not written yet")


def softmax_stable(scores, dim=-1):
    raise NotImplementedError("softmax_stable: not written yet")
