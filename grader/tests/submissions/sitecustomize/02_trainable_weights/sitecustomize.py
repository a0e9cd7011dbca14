"""Attack: a sitecustomize.py inside a group folder (on the worker's sys.path) that must never run."""

import os

open("/tmp/KATA_SITECUSTOMIZE_RAN", "w").write(os.getcwd())
import torch  # noqa: E402

torch.allclose = lambda *a, **k: True
