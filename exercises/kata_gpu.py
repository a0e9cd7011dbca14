"""A simulated GPU: tensors that say they are on ``cuda:0`` and hold real values in CPU memory.

Most machines that grade or run this kata have no CUDA, and PyTorch's ``meta`` device holds no values
(``.item()``, ``nonzero`` and a branch on a value cannot run there). Inside ``with simulated_gpu():``
tensors on :data:`DEVICE` follow CUDA's rules and compute with the CPU's kernels:

* a factory given the device (``torch.ones(T, T, device=x.device)``) makes its tensor there; without
  ``device=`` it makes a CPU tensor, as on CUDA;
* ``.to(device)``, ``.cuda()`` and ``Module.to(device)`` move tensors, parameters and registered buffers
  (persistent or not); a tensor kept in a plain attribute stays where it is, as on CUDA;
* an operation given a tensor on the device and a CPU tensor of one or more dimensions raises
  RuntimeError, as CUDA does ("Expected all tensors to be on the same device"); 0-dim CPU tensors
  mix with it (CUDA takes them as scalars), the copies between devices (``to``, ``copy_``) and
  indexing a device tensor with CPU indices run, as on CUDA;
* values are real: results equal the CPU's, and ``.item()``, ``nonzero`` and branches on values work.
  (A random op draws from the CPU's generator: CUDA's own draws other numbers.)

How: a tensor subclass made with ``_make_wrapper_subclass`` (it reports the device) holding a CPU tensor,
and a ``TorchDispatchMode`` that runs every aten operation on the held tensors and wraps the results,
the way ``torch._subclasses.fake_tensor.FakeTensorMode`` pretends to be on CUDA in a CPU-only build,
with its three switches: the mode sits in the FAKE slot (factories may then name CUDA without
initialising it), a no-op CUDA device guard, and ``torch.tensor`` lifted on the CPU before it moves.
Not simulated: in-place operations that change a tensor's shape (``unsqueeze_``, ``resize_``) on the device.

Every CPU tensor made while the mode is on is remembered with the line of code that made it (the first
caller outside torch and outside the kata's own tools), so that the error names the tensor that stayed
on the CPU and where it came from.

The public tests use this file, and the grader's worker imports the same one
(grader/sandbox/kata_worker/tools.py; the sandbox shows the worker this file and its own package only).
It imports nothing but torch and the standard library.
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakIdKeyDictionary

DEVICE = torch.device("cuda", 0)
_aten = torch.ops.aten
# Operations CUDA runs with tensors on two devices: copies between them, and CPU indices into a device tensor.
_MOVES = {_aten._to_copy.default, _aten.copy_.default}
_INDEXING = {_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default, _aten._index_put_impl_.default}
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
# The kata's own tools, whose frames are never "where a tensor was made": this file's folder, and the grader's
# worker package, which adds its own when it imports this file.
TOOL_FOLDERS = {os.path.dirname(os.path.abspath(__file__))}


class OnDevice(torch.Tensor):
    """A tensor on the simulated :data:`DEVICE`; ``values`` is the CPU tensor that holds its data."""

    values: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, values: torch.Tensor) -> "OnDevice":
        made = torch.Tensor._make_wrapper_subclass(
            cls, values.shape, strides=values.stride(), storage_offset=values.storage_offset(), dtype=values.dtype,
            layout=values.layout, device=DEVICE, requires_grad=values.requires_grad)
        made.values = values
        return made

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func}: a tensor of the simulated GPU was used outside simulated_gpu()")

    def __repr__(self, *, tensor_contents=None) -> str:
        with torch.utils._python_dispatch._disable_current_modes():
            text = repr(self.values)
        return f"{text[:-1]}, device='{DEVICE}')" if text.endswith(")") else text


def plain(value: Any) -> Any:
    """``value`` with every tensor of the simulated device replaced by a CPU copy of its values."""
    return tree_map(lambda t: t.values.detach().clone() if isinstance(t, OnDevice) else t, value)


def _caller() -> str:
    """``file.py, line N: <code>``: the first frame that is not torch's nor the kata's own tools (the
    files of TOOL_FOLDERS, and any ``kata_*.py``)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        ours = os.path.dirname(name) in TOOL_FOLDERS or os.path.basename(name).startswith("kata_")
        if not (name.startswith(_TORCH) or ours):
            code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f"{os.path.basename(name)}, line {frame.f_lineno}" + (f": {code}" if code else "")
        frame = frame.f_back
    return "an unknown place"


class SimulatedGpu(TorchDispatchMode):
    """The mode; ``origins`` maps each CPU tensor made while it is on to where it came from."""

    def __init__(self) -> None:
        super().__init__()
        self._mode_key = torch._C._TorchDispatchModeKey.FAKE  # as FakeTensorMode: factories may name CUDA
        self.origins: WeakIdKeyDictionary = WeakIdKeyDictionary()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: wrapping __torch_dispatch__ to skip torch.compile imports torch._dynamo (2 s) on first use,
        and nothing is compiled here."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        mixes = func not in _MOVES and func not in _INDEXING
        on_device, on_cpu = self.one_device(func.overloadpacket.__name__, args, kwargs, mixes)
        out = _on_values(func, args, kwargs, on_device)
        if _lands_on_device(kwargs, on_device):
            return out
        site = _caller()
        parent = next((self.origins[t] for t in on_cpu if t in self.origins), None)
        source = None
        if parent is not None:  # computed from a tensor whose origin is known: keep where it all began
            parent_site, source = parent
            if source is None and parent_site != site:
                source = f"the tensor made at {parent_site}"
        for t in tree_flatten(out)[0]:
            if type(t) is torch.Tensor and t not in self.origins:
                self.origins[t] = (site, source)
        return out

    def one_device(self, name: str, args: Any, kwargs: dict, mixes: bool = True) -> tuple[list, list]:
        """The tensors of the call on the device and on the CPU; raises as CUDA does where ``mixes``
        (CPU indices into a device tensor and copies between devices do not mix) and both hold tensors."""
        leaves = tree_flatten((args, kwargs))[0]
        on_device = [t for t in leaves if isinstance(t, OnDevice)]
        on_cpu = [t for t in leaves if isinstance(t, torch.Tensor) and not isinstance(t, OnDevice)]
        if not mixes and on_device and args and args[0] is on_device[0]:
            return on_device, on_cpu
        stray = next((t for t in on_cpu if t.dim() > 0), None) if on_device else None
        if stray is not None:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {DEVICE} and cpu! "
                f"({name} got a cpu tensor of shape {tuple(stray.shape)}, {self.origin(stray)})")
        return on_device, on_cpu

    def name(self, tensor: torch.Tensor, what: str) -> None:
        """Say what ``tensor`` is (``self.mask, a plain attribute``) in the errors that involve it and
        the tensors computed from it."""
        self.origins[tensor] = (None, what)

    def origin(self, tensor: torch.Tensor) -> str:
        """Where ``tensor`` came from: ``made at causal_attention.py, line 30: ... from self.mask, ...``."""
        site, source = self.origins.get(tensor, (None, None))
        if site is None:
            return source or "made before this run (in __init__, or passed in)"
        return f"made at {site}" + (f" from {source}" if source else "")


def _lands_on_device(kwargs: dict, on_device: list) -> bool:
    """Whether an op's result is on the device: where ``device=`` says, else where its tensors are."""
    target = kwargs.get("device")
    return bool(on_device) if target is None else torch.device(target).type == DEVICE.type


def _on_values(func, args: Any, kwargs: dict, on_device: list) -> Any:
    """``func`` run by the CPU's kernels on the values; its tensors on the device when an argument is,
    or when ``device=`` names it. An in-place op returns the very tensor it was given."""
    values = {id(t): t.values for t in on_device}
    back = {id(t.values): t for t in on_device}

    def unwrap(x: Any) -> Any:
        if isinstance(x, OnDevice):
            return values[id(x)]
        return torch.device("cpu") if isinstance(x, torch.device) and x.type == DEVICE.type else x

    out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
    if not _lands_on_device(kwargs, on_device):
        return out
    return tree_map(lambda t: (back[id(t)] if id(t) in back else OnDevice(t)) if type(t) is torch.Tensor else t, out)


class _DeviceCalls(TorchFunctionMode):
    """The calls that cannot reach the dispatcher as they are.

    * ``.to("cuda")`` and ``.cuda()`` name :data:`DEVICE` (a device without an index asks CUDA which is current).
    * Tensors on the device never require grad: autograd would ask CUDA for a stream (a CPU-only build
      aborts), so ``requires_grad_`` on one, which ``Module.to`` calls for every parameter, does nothing.
    * A call whose Python binding sets CUDA's device guard first (indexing, ``nonzero``) fails in a build
      without CUDA: it runs on the values here, with the same rule on devices.
    """

    def __init__(self, gpu: SimulatedGpu) -> None:
        super().__init__()
        self.gpu = gpu

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _REQUIRES_GRAD and isinstance(args[0], OnDevice):
            return args[0] if func is torch.Tensor.requires_grad_ else None
        if func is torch.Tensor.cuda:
            return args[0].to(DEVICE, non_blocking=kwargs.get("non_blocking", False))
        if func is torch.Tensor.to:
            args = tuple(DEVICE if _is_cuda(a) else a for a in args)
            kwargs = {k: DEVICE if _is_cuda(v) else v for k, v in kwargs.items()}
        try:
            return func(*args, **kwargs)
        except RuntimeError as err:
            if "not linked with support for cuda" not in str(err):
                raise
        name = getattr(func, "__name__", str(func))
        on_device, _ = self.gpu.one_device(name, args, kwargs, mixes=name not in _MIXING_CALLS)
        with torch.utils._python_dispatch._disable_current_modes():
            return _on_values(func, args, kwargs, on_device)


_REQUIRES_GRAD = (torch.Tensor.requires_grad_, torch.Tensor.requires_grad.__set__)
_MIXING_CALLS = {"__getitem__", "__setitem__", "index_put_", "index_put", "to", "copy_"}  # as _MOVES, _INDEXING


def _is_cuda(value: Any) -> bool:
    return (isinstance(value, str) and value.split(":")[0] == "cuda") or (
        isinstance(value, torch.device) and value.type == "cuda")


class simulated_gpu:
    """``with simulated_gpu() as gpu:`` tensors and modules moved to :data:`DEVICE` behave as on CUDA."""

    def __enter__(self) -> SimulatedGpu:
        torch._C._ensureCUDADeviceGuardSet()  # a no-op guard where no CUDA is linked, as FakeTensorMode does
        self._lift = torch._C._only_lift_cpu_tensors()
        torch._C._set_only_lift_cpu_tensors(True)
        # Module.to makes new Parameters of the moved tensors, not CPU Parameters whose data is a device
        # tensor, which would require grad (see _DeviceCalls).
        self._overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
        torch.__future__.set_overwrite_module_params_on_conversion(True)
        self.mode = SimulatedGpu()
        self._calls = _DeviceCalls(self.mode)
        self._calls.__enter__()
        return self.mode.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(*exc)
        self._calls.__exit__(*exc)
        torch._C._set_only_lift_cpu_tensors(self._lift)
        torch.__future__.set_overwrite_module_params_on_conversion(self._overwrite)
