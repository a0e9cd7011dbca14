"""Make the exercises importable by bare module name, from wherever pytest is started.

Exercises build on one another (``04_multihead/multihead_wrapper.py`` does
``from causal_attention import CausalAttention``) and the public tests import the module under
test the same way (``from causal_mask import causal_mask``). pytest loads this file before it
collects any test below ``exercises/``, so ``pytest exercises/03_causal`` and ``pytest exercises``
both work from the repository root. The grader's worker sets up the same path for your code.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GROUPS = ("01_simple_attention", "02_trainable_weights", "03_causal", "04_multihead")

for group in reversed(GROUPS):
    path = str(HERE / group)
    if path not in sys.path:
        sys.path.insert(0, path)
