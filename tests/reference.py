"""The reference implementation (``solutions/``) and the fixture data, loaded for the TEST process only.

Hidden tests compute their expected values here, never through ``impl``. The reference modules are
loaded by file path under private module names (``kata_reference_<module>``), without touching
``sys.path`` or the bare module names (``causal_attention``, ...), so they can never be confused
with the implementation under test, which ``LocalImpl`` imports under those bare names.

A reference module that imports a sibling by bare name (``from causal_attention import
CausalAttention`` in ``multihead_wrapper.py``) gets the REFERENCE sibling: the module is executed
with an ``__import__`` that resolves exercise module names to the reference modules.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
import types
from functools import cache
from pathlib import Path

import torch

TESTS_DIR = Path(__file__).resolve().parent
SOLUTIONS_DIR = TESTS_DIR.parent / "solutions"
FIXTURES_DIR = TESTS_DIR / "fixtures"
PREFIX = "kata_reference_"


def _module_files() -> dict[str, Path]:
    """Bare module name (``causal_attention``) -> its file in ``solutions/``."""
    return {p.stem: p for p in sorted(SOLUTIONS_DIR.glob("*/*.py")) if not p.stem.startswith("_")}


def _reference_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name in _module_files():
        return ref(name)
    return builtins.__import__(name, globals, locals, fromlist, level)


@cache
def ref(module: str) -> types.ModuleType:
    """The reference module ``solutions/<group>/<module>.py``, as ``kata_reference_<module>``."""
    path = _module_files()[module]
    private_name = PREFIX + module
    spec = importlib.util.spec_from_file_location(private_name, path)
    mod = importlib.util.module_from_spec(spec)
    # Sibling imports inside the reference resolve to reference modules, not to sys.path.
    mod.__dict__["__builtins__"] = {**builtins.__dict__, "__import__": _reference_import}
    sys.modules[private_name] = mod  # under the private name only (classes need a home module)
    spec.loader.exec_module(mod)
    return mod


@cache
def printed() -> types.ModuleType:
    """``tests/fixtures/printed_tensors.py``: the documents' printed tensors, with provenance."""
    private_name = "kata_fixtures_printed_tensors"
    spec = importlib.util.spec_from_file_location(private_name, FIXTURES_DIR / "printed_tensors.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[private_name] = mod
    spec.loader.exec_module(mod)
    return mod


def seed_reference(seed: int) -> None:
    """``torch.manual_seed(seed)`` for the reference, which runs on the CPU: the CPU generator only.

    ``torch.manual_seed`` also queues the seed for CUDA, XPU and MTIA, formatting the caller's stack
    each time: about 1 ms a call this deep in pytest, for generators the reference never uses.
    """
    torch.default_generator.manual_seed(seed)
