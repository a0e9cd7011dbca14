"""Which torch operations ran: the trace behind the from-scratch rule.

Some exercises ask you to write, by hand, what PyTorch already has: a softmax, dropout, the attention
itself. ``exercises/shortcuts.json`` says, for each function or class you write, which kinds of
operation must not run inside it (``softmax`` in ``softmax_naive``, ``dropout`` in ``dropout``,
``scaled_dot_product_attention`` in ``CausalAttention``). Elsewhere they are fine: CausalAttention may
use ``nn.Dropout``, since ``dropout`` is written by hand in its own exercise.

What counts is what runs, never how the source looks: a call that never runs (a debugging method) costs
nothing, and every way of reaching the operation counts the same (``F.softmax``, ``x.softmax``,
``F.softmin(-x)``, ``log_softmax(...).exp()``, an alias, a star import, ``torch.ops.aten._softmax``,
``torch._C._nn.scaled_dot_product_attention``). :class:`Trace` watches at two levels while it is entered:
the torch functions Python called (a ``TorchFunctionMode``: ``softmin``, ``dropout`` even with
``training=False``, ``multi_head_attention_forward``) and the aten operations the dispatcher ran (a
``TorchDispatchMode``: ``_softmax``, ``_log_softmax``, ``native_dropout``,
``_scaled_dot_product_flash_attention_for_cpu``). :data:`CATEGORIES` says, in one place, which names
each kind of operation covers. Code that switches the trace off or hides from it (popping torch's mode
stacks, disabling torch functions, tensor subclasses or modes of its own) is named by :meth:`Trace.tampered`.

The public tests (``assert_does_its_own_work``) and the grader's worker use this one file. It imports
nothing but torch and the standard library.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

TABLE = Path(__file__).resolve().with_name("shortcuts.json")  # tests/kata_trace.py links here

# The one place that says what each kind of operation tests/rubric.json may forbid ("forbidden") covers: a
# pattern over the names of the torch functions called and of the aten operations run (torch 2.13: F.dropout
# runs as bernoulli_ on the CPU, so dropout is seen as a function; log_softmax().exp() as aten _log_softmax).
CATEGORIES = {
    "softmax": r"softm(?:ax|in)",  # softmax, softmin, log_softmax, special_softmax, _softmax, _safe_softmax, ...
    "dropout": r"dropout",  # dropout, dropout1d, alpha_dropout, feature_dropout, native_dropout, _fused_dropout
    "scaled_dot_product_attention": r"scaled_dot_product|flash_attention|efficient_attention|cudnn_attention|fused_sdp",
    "multi_head_attention": r"multi_?head_attention|transformer_(?:encoder|decoder)",
}
_PATTERNS = [(category, re.compile(pattern)) for category, pattern in CATEGORIES.items()]
# Tensor types whose __torch_function__/__torch_dispatch__ are torch's own, or the simulated GPU's.
_OWN_TYPES = ("torch.", "kata_gpu.")


def table() -> dict[str, dict[str, list[str]]]:
    """``{module: {public name: [kinds of operation that must not run in it]}}``, from ``shortcuts.json``."""
    return json.loads(TABLE.read_text())


def category_of(name: str) -> str | None:
    """The kind of operation a torch function or aten operation name belongs to, or None."""
    for category, pattern in _PATTERNS:
        if pattern.search(name):
            return category
    return None


class _Functions(TorchFunctionMode):
    def __init__(self, trace: Trace):
        super().__init__()
        self.trace = trace

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.trace.note(getattr(func, "__name__", ""), "torch function", types)
        return func(*args, **(kwargs or {}))


class _Dispatch(TorchDispatchMode):
    def __init__(self, trace: Trace):
        super().__init__()
        self.trace = trace

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: that wrapping imports torch._dynamo (2 s of CPU) on first use, and nothing is compiled here."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.trace.note(func.__name__.split(".")[0], "aten op", types)
        return func(*args, **(kwargs or {}))


class Trace:
    """``with trace:`` records which :data:`CATEGORIES` ran, and by which route: ``trace.ran`` is
    ``{"softmax": ["torch function softmin", "aten op _softmax"]}``. Entering starts a new record.

    ``trace.deep`` (True by default) says whether the next entry watches the aten level too. The torch
    functions are watched always (every public route is one, and it costs about 1 us a call); the aten level
    (about 20 us an operation, a Python call each) is a second witness, for code that goes under the
    torch functions: the grader's worker turns it on for part of the requests (kata_worker/tracing.py)."""

    def __init__(self) -> None:
        self.ran: dict[str, list[str]] = {}
        self.foreign: set[str] = set()  # tensor types with a __torch_function__/__torch_dispatch__ of their own
        self._known: dict[str, str | None] = {}
        self._modes = (_Functions(self), _Dispatch(self))
        self.deep = True
        self._deep = True  # whether the current entry watches the aten level
        self.left: list[str] = []

    def note(self, name: str, level: str, types: Any = ()) -> None:
        category = self._known.get(name, "")
        if category == "":
            category = self._known[name] = category_of(str(name))
        if category is not None:
            routes = self.ran.setdefault(category, [])
            if f"{level} {name}" not in routes:
                routes.append(f"{level} {name}")
        for tp in types:
            if not f"{tp.__module__}.".startswith(_OWN_TYPES):
                self.foreign.add(f"{tp.__module__}.{tp.__qualname__}")

    def __enter__(self) -> Trace:
        self.ran, self.foreign, self._deep = {}, set(), self.deep
        self._modes[0].__enter__()
        if self._deep:
            self._modes[1].__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.left = self.tampered()
        functions, dispatch = self._modes
        if not self.left:
            if self._deep:
                dispatch.__exit__(None, None, None)
            functions.__exit__(None, None, None)
            return
        while torch._C._len_torch_dispatch_stack():  # put torch back as it was before we entered
            torch._C._pop_torch_dispatch_stack(None)
        while torch._C._len_torch_function_stack():
            torch._C._pop_torch_function_stack()

    def tampered(self) -> list[str]:
        """What, now, shows that the code run inside hid something from the trace (empty: nothing)."""
        functions, dispatch = self._modes
        signs = [f"a tensor type with its own __torch_function__ or __torch_dispatch__ ran: {name}"
                 for name in sorted(self.foreign)]
        if not torch._C._is_torch_function_enabled() or torch._C._is_torch_function_all_disabled():
            signs.append("torch functions were left disabled (torch._C.DisableTorchFunction)")
        stack = torch._C._len_torch_function_stack()
        if stack == 0 or torch._C._get_function_stack_at(stack - 1) is not functions:
            signs.append("the torch function mode stack was changed (a mode popped or pushed)")
        depth = torch._C._len_torch_dispatch_stack()
        if depth != self._deep or (depth and torch._C._get_dispatch_stack_at(depth - 1) is not dispatch):
            signs.append("the torch dispatch mode stack was changed (a mode popped or pushed)")
        if type(functions).__torch_function__ is not _FUNCTION_HOOK or type(dispatch).__torch_dispatch__ is not _DISPATCH_HOOK \
                or type(self).note is not _NOTE:
            signs.append("the trace's own code was replaced")
        return signs


_FUNCTION_HOOK, _DISPATCH_HOOK, _NOTE = _Functions.__torch_function__, _Dispatch.__torch_dispatch__, Trace.note

# Small arguments by parameter name, for running a public name in assert_does_its_own_work (any other
# parameter without a default gets a tensor).
_ARGUMENTS = {"p": 0.5, "training": True, "dropout": 0.5, "num_heads": 2, "qkv_bias": False, "d_in": 4, "d_out": 4,
              "context_length": 6, "num_tokens": 6, "d_k": 4, "dim": -1}


def _arguments(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: _ARGUMENTS.get(p.name, torch.rand(2, 6, 4)) for p in parameters
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def run_names(module: Any, names: list[str]) -> dict[str, dict[str, list[str]]]:
    """``{name: trace.ran}``: each public name of ``module`` run on small inputs under a trace (a class
    built, then called in training mode and in eval mode). NotImplementedError (a stub) propagates; other
    errors end that name's run (its own tests say why), keeping what ran until then."""
    found = {}
    for name in names:
        obj = getattr(module, name, None)
        if obj is None:
            continue
        trace = Trace()
        with trace:
            try:
                _run(obj)
            except NotImplementedError:
                raise
            except Exception:  # noqa: BLE001 - the name's own tests report its errors
                pass
        found[name] = {**trace.ran, **({"hidden": trace.left} if trace.left else {})}
    return found


def forbidden_runs(module: Any, forbidden: dict[str, list[str]]) -> list[str]:
    """One line per public name of ``module`` in which a ``forbidden`` kind of operation ran (``likely cause:
    softmax_naive ran softmax (torch function softmin, aten op _softmax)``), and per sign of a hidden trace."""
    ran = run_names(module, list(forbidden))
    lines = []
    for name, kinds in forbidden.items():
        hits = [f"{kind} ({', '.join(ran[name][kind])})" for kind in kinds if kind in ran.get(name, {})]
        if hits:
            lines.append(f"likely cause: {name} ran {', '.join(hits)}")
        lines.extend(f"{name} hid operations from the trace: {sign}" for sign in ran.get(name, {}).get("hidden", ()))
    return lines


def _run(obj: Any) -> None:
    kwargs = _arguments(obj)
    made = obj(**kwargs)
    if isinstance(obj, type) and isinstance(made, torch.nn.Module):
        x = torch.rand(2, 6, kwargs.get("d_in", 4))
        made.train()(x)
        made.eval()(x)
