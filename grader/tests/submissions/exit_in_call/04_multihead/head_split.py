"""Attack: every function ends the worker process (os._exit(3)) when called: costs restarts, not other exercises."""

import os


def split_heads(x, num_heads):
    os._exit(3)


def merge_heads(x):
    os._exit(3)


def per_head_scores(queries, keys):
    os._exit(3)
