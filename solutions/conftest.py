"""Doctests of the reference solutions: ``pytest --doctest-modules solutions``.

The ``>>>`` examples in the docstrings use the documents' tensors without building them; this file
puts them in every example's namespace (pytest's ``doctest_namespace``):

* ``torch``; ``inputs``, the (6, 3) "Your journey starts with one step" tensor, and ``batch``, two
  copies of it stacked, shape (2, 6, 3) (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.3.1);
* ``queries``, ``keys``, ``values``: ``inputs`` projected by three ``torch.rand(3, 2)`` matrices drawn
  after ``torch.manual_seed(123)`` (section 3.4.1);
* ``attn_scores`` (Q Kᵀ) and ``attn_weights`` (softmax of Q Kᵀ / √2) of the SelfAttention_v2 created
  after ``torch.manual_seed(789)`` (exercises/documents/notebook_causal_self_attention.txt);
* ``SelfAttention_v1``, ``SelfAttention_v2`` and a pair ``sa_v1``, ``sa_v2`` of them (seeds 123 and 789);
* ``a``: the (1, 2, 3, 4) tensor of section 3.6.2.

The documents' tensors come from the hidden tests' oracle, ``tests/fixtures/printed_tensors.py``, and
the group folders from the rubric (``grader.rubric.GROUPS``), so this file keeps no copy of either. It
puts the group folders on ``sys.path``, as ``exercises/conftest.py`` does for the exercises:
``multihead_wrapper`` imports ``causal_attention`` by its bare name.
"""

from __future__ import annotations

import sys

import pytest

from grader.rubric import GROUPS, SOLUTIONS_DIR, tests_module

for _group in reversed(GROUPS):
    if str(SOLUTIONS_DIR / _group) not in sys.path:
        sys.path.insert(0, str(SOLUTIONS_DIR / _group))


@pytest.fixture(autouse=True)
def _documents_namespace(doctest_namespace: dict) -> None:
    import torch
    from self_attention import SelfAttention_v1, SelfAttention_v2

    documents = tests_module("fixtures/printed_tensors.py")
    inputs = documents.journey()
    w_query, w_key, w_value = documents.rand_projections(123)
    seed_789_queries, seed_789_keys, _ = documents.linear_projections_789(inputs)
    attn_scores = seed_789_queries @ seed_789_keys.T
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    doctest_namespace.update(
        torch=torch, inputs=inputs, batch=documents.journey_batch(),
        queries=inputs @ w_query, keys=inputs @ w_key, values=inputs @ w_value,
        attn_scores=attn_scores, attn_weights=torch.softmax(attn_scores / 2**0.5, dim=-1),
        SelfAttention_v1=SelfAttention_v1, SelfAttention_v2=SelfAttention_v2, sa_v1=sa_v1, sa_v2=sa_v2,
        a=torch.tensor(documents.A_4D),
    )
