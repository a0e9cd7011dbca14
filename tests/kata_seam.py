"""The one seam between the hidden tests and an implementation.

Hidden tests never import a student's module. They receive an ``impl`` object (the fixture in
``conftest.py``) and use only the operations below, so that the same tests run against

* ``LocalImpl`` -- the implementation imported into this process (``pytest tests --impl DIR``,
  for developing the tests and for the mutant suite), and
* the grader's remote implementation -- the student's code living in an isolated worker process,
  with only plain data (tensors, numbers, strings, containers of them) crossing back.

Portable operations (the whole contract; a test that needs more extends this file and both sides):

* ``impl.<public name>`` -- a function or class from ``rubric.json``'s ``names``; call it.
* Objects a call returns are either plain data (tensors, numbers, str, None, tuples, lists,
  dicts of them) or opaque objects (modules). On an opaque object a test may: call it,
  read an attribute (plain data or another opaque object), call its methods (``state_dict``,
  ``load_state_dict``, ``eval``, ``train``, ``to``, ``named_parameters``, ...), ``len``, index
  and iterate it. Generators come back as lists, so wrap them: ``dict(m.named_parameters())``.
* Tensors read from an object are snapshots: mutating them changes nothing in the object. Do
  not set attributes, compare identities or use ``isinstance`` on opaque objects; use
  ``impl.type_name(obj)`` instead.
* ``impl.manual_seed(seed)`` seeds the generator the implementation draws from.
* ``impl.call_and_inputs(fn, *args)`` returns ``(result, args_after_the_call)`` so that a test can
  see whether the implementation modified its inputs in place.
* ``impl.forward_backward(module, x, grad_output)`` runs ``backward_with(module(x), grad_output)``
  (below) and returns ``(output, {parameter name: grad or None})``.
* Exceptions raised by the implementation arrive as the same built-in exception type
  (``ValueError``, ``NotImplementedError``, ...) with the original message.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import torch

RUBRIC_PATH = Path(__file__).with_name("rubric.json")
_RUBRIC = json.loads(RUBRIC_PATH.read_text())
GROUPS = tuple(_RUBRIC["groups"])
# Every hidden test carries exactly one of these pytest markers; rubric.json names them and splits an
# exercise's points over them (see conftest.py and grader/rubric.py, which reads the same file).
TEST_KINDS: dict[str, str] = dict(_RUBRIC["kinds"])


def load_rubric() -> dict[str, Any]:
    """The parsed ``rubric.json`` (this file stands alone: the hidden tests run where the grader's
    package is not importable; grader/tests/test_rubric_fairness.py checks both read the same)."""
    return _RUBRIC


def kind_points(exercise: dict[str, Any]) -> dict[str, float]:
    """An exercise's points per test kind, from its ``rubric.json`` entry (all core when it names none)."""
    return {kind: float(points) for kind, points in exercise.get("kinds", {"core": exercise["points"]}).items()}


def name_to_exercise() -> dict[str, str]:
    """Map every public name (``CausalAttention``) to its exercise id (``03_causal/causal_attention``)."""
    return {name: ex_id for ex_id, ex in load_rubric()["exercises"].items() for name in ex["names"]}


def call_and_inputs(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[Any]]:
    """Call ``fn`` and hand back its positional arguments as they are afterwards."""
    result = fn(*args, **kwargs)
    return result, list(args)


def forward_backward(
    module: torch.nn.Module, x: torch.Tensor, grad_output: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor | None]]:
    """Forward, then backward with ``grad_output``; the gradient of every named parameter."""
    module.zero_grad(set_to_none=True)
    out = module(x)
    backward_with(out, grad_output)
    grads = {name: (None if p.grad is None else p.grad.detach().clone()) for name, p in module.named_parameters()}
    return out.detach(), grads


def backward_with(out: torch.Tensor, grad_output: torch.Tensor) -> None:
    """``out.backward(grad_output)`` computed as ``(out * grad_output).sum().backward()``.

    The same gradients bit for bit (the product's backward hands ``grad_output`` on unchanged),
    without what a tensor argument to ``backward`` costs on its first use in torch 2.13: an import of
    sympy, 0.4 s, in the grader and again in every worker. ``kata_worker/worker.py`` (the worker) does the same.
    """
    if out.shape != grad_output.shape:
        raise ValueError(f"the output has shape {tuple(out.shape)}; the gradient given has {tuple(grad_output.shape)}")
    (out * grad_output).sum().backward()


def type_name(obj: Any) -> str:
    """``module.QualName`` of the object's type, e.g. ``torch.nn.modules.container.ModuleList``."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class LocalImpl:
    """An implementation directory imported into this process (trusted code only).

    The group folders go on ``sys.path`` so that exercises can import each other by bare
    module name (``from causal_attention import CausalAttention``), as they do under pytest and in
    the grader's worker. One process holds one implementation.
    """

    def __init__(self, root: Path):
        self.root = root
        self._where = name_to_exercise()
        for group in reversed(GROUPS):
            sys.path.insert(0, str(root / group))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._where:
            raise AttributeError(name)
        module = importlib.import_module(self._where[name].split("/")[1])
        if not Path(module.__file__).resolve().is_relative_to(self.root.resolve()):
            # Another directory's module of that name came first (a copied solutions/conftest.py that
            # ``--impl DIR`` with a space made pytest load): grading it would grade the wrong code.
            raise RuntimeError(f"{name}: {module.__file__} was imported, not {self.root}'s; pass --impl={self.root}")
        return getattr(module, name)

    manual_seed = staticmethod(torch.manual_seed)
    call_and_inputs = staticmethod(call_and_inputs)
    forward_backward = staticmethod(forward_backward)
    type_name = staticmethod(type_name)
