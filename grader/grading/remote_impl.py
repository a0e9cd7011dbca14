"""``RemoteImpl``: the ``impl`` of ``tests/kata_seam.py`` with the student's code in a worker.

Everything the hidden tests may do (see the contract in ``kata_seam.py``) becomes one request to
the worker: ``impl.Name`` looks the name up in its module (imported when the domain started, before
any request: grader/grading/preload.py) and hands back a proxy; proxies
(:class:`RemoteObject`) forward calls, attribute reads (a module's methods the tests call, read and
called in one request: :data:`CALLED_METHODS`), ``len``, indexing and iteration; plain data
(tensors, numbers, containers) comes back as real local objects, never as the student's types. A proxy
the tests pass back (``impl.f(module)``) travels as the worker's reference to its object: the client
(grader/sandbox/client.py) knows :class:`~grader.sandbox.client.Ref` s, not proxies.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from grader.grading.preload import preload_of
from grader.sandbox.client import Ref, WorkerClient, WorkerFailure
from grader.sandbox.wire import MAX_DEPTH


# Methods the hidden tests only ever call (kata_seam.py: ``m.state_dict()``, ``dict(m.named_parameters())``):
# reading one and calling it is one request, ``call_method``, not a ``getattr`` then a ``call`` (about 80 of
# the 550 round trips of a grading). What it finds there is called in the worker as the two requests would
# have: a missing method or one that is not callable raises the same built-in exception, at the call.
CALLED_METHODS = frozenset({"state_dict", "load_state_dict", "named_parameters", "named_buffers", "parameters",
                            "buffers", "to", "eval", "train", "zero_grad"})


class RemoteObject:
    """A proxy for an object living in the worker (a function, class, module instance, method...)."""

    __slots__ = ("_kata_ref", "_kata_impl", "__weakref__")

    def __init__(self, ref: Ref, impl: RemoteImpl):
        object.__setattr__(self, "_kata_ref", ref)
        object.__setattr__(self, "_kata_impl", impl)

    def _kata_do(self, op: str, what: str, **fields: Any) -> Any:
        return self._kata_impl._kata_request({"op": op, "obj": self._kata_ref, **fields}, what)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._kata_do("call", self._kata_ref.calls, args=list(args), kwargs=kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_kata_") or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        if name in CALLED_METHODS:
            return RemoteMethod(self, name)
        return self._kata_do("getattr", f"{self._kata_ref.label}.{name}", name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("objects from the implementation are read-only in the hidden tests (see kata_seam.py)")

    def __len__(self) -> int:
        return self._kata_do("len", f"len({self._kata_ref.label})")

    def __bool__(self) -> bool:
        return self._kata_do("bool", f"bool({self._kata_ref.label})")

    def __getitem__(self, key: Any) -> Any:
        return self._kata_do("getitem", f"{self._kata_ref.label}[...]", key=key)

    def __iter__(self):
        return iter(self._kata_do("iter", f"iter({self._kata_ref.label})"))

    def __repr__(self) -> str:
        return f"<remote {self._kata_ref.label}>"

    def __del__(self) -> None:
        try:
            self._kata_impl._kata_client.release(self._kata_ref)
        except Exception:
            pass


class RemoteMethod:
    """``obj.name`` for a name in :data:`CALLED_METHODS`: calling it runs ``obj.name(...)`` in the worker."""

    __slots__ = ("_kata_obj", "_kata_name")

    def __init__(self, obj: RemoteObject, name: str):
        self._kata_obj = obj
        self._kata_name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        obj, name = self._kata_obj, self._kata_name
        owner = obj._kata_ref.label.removesuffix(" object")  # "CausalAttention object" -> CausalAttention
        return obj._kata_do("call_method", f"{owner}.{name}", name=name, args=list(args), kwargs=kwargs)

    def __repr__(self) -> str:
        return f"<remote method {self._kata_name} of {self._kata_obj._kata_ref.label}>"


def _unwrapped(value: Any, depth: int = 0) -> Any:
    """``value`` with every :class:`RemoteObject` in it replaced by its Ref, containers rebuilt as the
    client sends them (lists, tuples, dicts, slices); past the wire's depth it is left for the client to refuse."""
    if isinstance(value, RemoteObject):
        return value._kata_ref
    if depth > MAX_DEPTH or isinstance(value, torch.Size):
        return value
    if isinstance(value, (list, tuple)):
        return (list if isinstance(value, list) else tuple)(_unwrapped(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return {k: _unwrapped(v, depth + 1) for k, v in value.items()}
    if type(value) is slice:
        return slice(*(_unwrapped(x, depth + 1) for x in (value.start, value.stop, value.step)))
    return value


class RemoteImpl:
    """The seam's ``impl`` over a :class:`WorkerClient` (one per test, and one without an observer for the
    GPU-run check; cheap to make).

    ``where`` maps public names to exercise ids (``CausalAttention`` -> ``03_causal/causal_attention``).
    ``observer`` (optional) is told about every :class:`WorkerFailure` (``observer.on_failure(failure,
    module)`` with the module being imported, or None), may refuse a public name before it is reached
    (``observer.check_use(name, module)``: a broken import, a function that timed out) and
    sets each call's timeout (``observer.call_timeout(client)``) and hears which kinds of operation each request
    ran, for which public name (``observer.on_trace(owner, {kind: routes})``).
    """

    def __init__(self, client: WorkerClient, where: Mapping[str, str], observer: Any = None,
                 traced: frozenset[str] = frozenset()):
        self._kata_client = client
        self._kata_where = where
        self._kata_observer = observer
        self._kata_traced = traced  # the public names whose calls run under the trace (the rubric's ``forbidden``)

    def _kata_request(self, message: dict[str, Any], what: str, importing: str | None = None) -> Any:
        try:
            preload = preload_of(self._kata_client)
            if preload is not None:  # a new domain imports every module first
                preload.ensure(self._kata_client)
            timeout = None if self._kata_observer is None else self._kata_observer.call_timeout(self._kata_client)
            value = self._kata_client.request(_unwrapped(message), what, timeout)
        except WorkerFailure as failure:
            if self._kata_observer is not None:
                self._kata_observer.on_failure(failure, importing)
            raise
        finally:  # what the student's code ran, raised or not (grader/sandbox/kata_worker/tracing.py)
            if self._kata_observer is not None and self._kata_client.last_trace is not None:
                self._kata_observer.on_trace(*self._kata_client.last_trace)
        return self._kata_wrap(value)

    def _kata_wrap(self, value: Any) -> Any:
        tp = type(value)
        if tp is Ref:
            return RemoteObject(value, self)
        if tp is list:
            return [self._kata_wrap(v) for v in value]
        if tp is dict:
            return {k: self._kata_wrap(v) for k, v in value.items()}
        if isinstance(value, tuple) and tp is not torch.Size:
            items = [self._kata_wrap(v) for v in value]
            return tuple(items) if tp is tuple else tp(*items)
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._kata_where:
            raise AttributeError(name)
        module = self._kata_where[name].split("/")[1]
        client = self._kata_client
        if self._kata_observer is not None:
            self._kata_observer.check_use(name, module)
        with client._lock:
            cached = client.cache.get((client.generation, module, name))
        if cached is not None:
            return cached
        importing = module not in client.imported or client._proc is None
        what = f"import of {module}" if importing else f"{module}.{name}"
        value = self._kata_request({"op": "module_attr", "module": module, "name": name,
                                    "traced": name in self._kata_traced}, what, importing=module if importing else None)
        client.imported.add(module)
        if isinstance(value, RemoteObject):
            client.cache[(value._kata_ref.generation, module, name)] = value
        return value

    # ---- the seam's helpers ----------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self._kata_request({"op": "seed", "seed": int(seed)}, "manual_seed")

    def call_and_inputs(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[Any]]:
        if not isinstance(fn, RemoteObject):
            return fn(*args, **kwargs), list(args)
        return self._kata_request({"op": "call_and_inputs", "obj": fn._kata_ref, "args": list(args),
                                   "kwargs": kwargs}, fn._kata_ref.calls)

    def forward_backward(self, module: Any, x: torch.Tensor, grad_output: torch.Tensor) -> tuple[Any, dict]:
        if not isinstance(module, RemoteObject):
            raise TypeError("forward_backward needs a module made by the implementation")
        ref = module._kata_ref
        return self._kata_request({"op": "forward_backward", "obj": ref, "x": x, "grad_output": grad_output},
                                  f"forward/backward of {ref.calls}")

    # ---- the GPU-run check's probes (grader/grading/gpu_check.py) -------------------------------------
    def cuda_info(self) -> dict[str, Any]:
        """``{"available": bool, "name": str}`` as the worker's torch sees it."""
        return self._kata_request({"op": "cuda_info"}, "cuda_info")

    def device_run(self, module: Any, x: torch.Tensor, device: str) -> dict[str, Any]:
        """Move ``module`` and ``x`` to ``device`` in the worker, run forward, report (plain data)."""
        if not isinstance(module, RemoteObject):
            raise TypeError("device_run needs a module made by the implementation")
        ref = module._kata_ref
        return self._kata_request({"op": "device_run", "obj": ref, "x": x, "device": device},
                                  f"{ref.calls} on {device}")

    def type_name(self, obj: Any) -> str:
        if isinstance(obj, RemoteObject):
            return self._kata_request({"op": "type_name", "obj": obj._kata_ref}, "type_name")
        cls = type(obj)
        return f"{cls.__module__}.{cls.__qualname__}"
