"""Attack: every function hangs forever when called (imports fine)."""


def split_heads(x, num_heads):
    while True:
        pass


def merge_heads(x):
    while True:
        pass


def per_head_scores(queries, keys):
    while True:
        pass
