"""The reference implementation (``solutions/``) and the fixture data, loaded for the TEST process only.

Hidden tests compute their expected values here, never through ``impl``. The reference modules are
loaded by file path under private module names (``kata_reference_<module>``), without touching
``sys.path`` or the bare module names (``causal_attention``, ...), so they can never be confused
with the implementation under test, which ``LocalImpl`` imports under those bare names.

A reference module that imports a sibling by bare name (``from causal_attention import
CausalAttention`` in ``multihead_wrapper.py``) gets the REFERENCE sibling: the module is executed
with an ``__import__`` that resolves exercise module names to the reference modules, or, for the
names in ``standins``, to the stand-ins a re-grade gives the student (``tests/standins/``): then
the reference dependent computes the expected values over the same stand-ins as the student's.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
import types
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import torch

TESTS_DIR = Path(__file__).resolve().parent
SOLUTIONS_DIR = TESTS_DIR.parent / "solutions"
FIXTURES_DIR = TESTS_DIR / "fixtures"
STANDINS_DIR = TESTS_DIR / "standins"
PREFIX = "kata_reference_"


@cache
def _module_files() -> dict[str, Path]:
    """Bare module name (``causal_attention``) -> its file in ``solutions/``."""
    return {p.stem: p for p in sorted(SOLUTIONS_DIR.glob("*/*.py")) if not p.stem.startswith("_")}


def _importer(standins: frozenset[str]):
    """An ``__import__`` resolving kata module names to reference modules (stand-ins for ``standins``)."""
    def reference_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name in _module_files():
            return standin(name) if name in standins else ref(name, standins)
        return builtins.__import__(name, globals, locals, fromlist, level)

    return reference_import


def _load(private_name: str, path: Path, standins: frozenset[str]) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(private_name, path)
    mod = importlib.util.module_from_spec(spec)
    # Sibling imports inside the module resolve to reference modules (or stand-ins), not to sys.path.
    mod.__dict__["__builtins__"] = {**builtins.__dict__, "__import__": _importer(standins)}
    mod.kata_standins = standins  # the stand-ins it was built over (none: the plain reference)
    sys.modules[private_name] = mod  # under the private name only (classes need a home module)
    spec.loader.exec_module(mod)
    return mod


def ref(module: str, standins: Iterable[str] = ()) -> types.ModuleType:
    """The reference module ``solutions/<group>/<module>.py``, as ``kata_reference_<module>``; with
    ``standins``, its sibling imports of those modules get their stand-ins (a re-grade's reference)."""
    return _ref(module, frozenset(standins) & set(_module_files()) - {module})


@cache
def _ref(module: str, standins: frozenset[str]) -> types.ModuleType:
    suffix = "".join(f"__over_{name}" for name in sorted(standins))
    return _load(PREFIX + module + suffix, _module_files()[module], standins)


@cache
def standin(module: str) -> types.ModuleType:
    """The stand-in ``tests/standins/<module>.py`` (README.md there), as ``kata_standin_<module>``."""
    return _load("kata_standin_" + module, STANDINS_DIR / f"{module}.py", frozenset())


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
