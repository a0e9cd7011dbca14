"""The students' tools the worker imports as its own: ``kata_gpu`` (the simulated GPU).

One file serves both sides: the public tests import ``exercises/kata_gpu.py``, and the grader shows the
same file to the template (bubblewrap binds it into the sandbox; without it the template, still the
grader's own user, reads it from the repository before any domain is forked). Loaded by file name before
anything else of the worker, so every module here that imports it gets that file, never a student's
module of the same name (a student's folders reach ``sys.path`` only when a domain serves).
"""

import importlib.util
import os
import sys


def load(folder, names) -> None:
    """Import each ``<folder>/<name>.py`` as the module ``name``."""
    for name in names:
        spec = importlib.util.spec_from_file_location(name, os.path.join(folder, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
