"""Attack: a sitecustomize.py (submission root) that would patch torch and drop a marker if ever imported."""

import os

open("/tmp/KATA_SITECUSTOMIZE_RAN", "w").write(os.getcwd())
import torch  # noqa: E402

torch.allclose = lambda *a, **k: True
