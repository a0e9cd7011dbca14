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

It also puts the four group folders on ``sys.path``, as ``exercises/conftest.py`` does for the
exercises: ``multihead_wrapper`` imports ``causal_attention`` by its bare name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for _group in ("04_multihead", "03_causal", "02_trainable_weights", "01_simple_attention"):
    if str(HERE / _group) not in sys.path:
        sys.path.insert(0, str(HERE / _group))


@pytest.fixture(autouse=True)
def _documents_namespace(doctest_namespace: dict) -> None:
    import torch
    import torch.nn as nn
    from self_attention import SelfAttention_v1, SelfAttention_v2

    inputs = torch.tensor(
        [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33], [0.77, 0.25, 0.10],
         [0.05, 0.80, 0.55]]
    )
    torch.manual_seed(123)
    w_query, w_key, w_value = (torch.rand(3, 2) for _ in range(3))
    torch.manual_seed(789)
    seed_789_query, seed_789_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        attn_scores = seed_789_query(inputs) @ seed_789_key(inputs).T
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    a = torch.tensor(
        [[[[0.2745, 0.6584, 0.2775, 0.8573], [0.8993, 0.0390, 0.9268, 0.7388], [0.7179, 0.7058, 0.9156, 0.4340]],
          [[0.0772, 0.3565, 0.1479, 0.5331], [0.4066, 0.2318, 0.4545, 0.9737], [0.4606, 0.5159, 0.4220, 0.5786]]]]
    )
    doctest_namespace.update(
        torch=torch, inputs=inputs, batch=torch.stack((inputs, inputs), dim=0),
        queries=inputs @ w_query, keys=inputs @ w_key, values=inputs @ w_value,
        attn_scores=attn_scores, attn_weights=torch.softmax(attn_scores / 2**0.5, dim=-1),
        SelfAttention_v1=SelfAttention_v1, SelfAttention_v2=SelfAttention_v2, sa_v1=sa_v1, sa_v2=sa_v2, a=a,
    )
