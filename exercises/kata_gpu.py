"""A simulated GPU: tensors that say they are on ``cuda:0`` and hold real values in CPU memory.

Most machines that grade or run this kata have no CUDA, and PyTorch's ``meta`` device holds no values
(``.item()``, ``nonzero`` and a branch on a value cannot run there). Inside ``with simulated_gpu():``
tensors on :data:`DEVICE` follow CUDA's rules and compute with the CPU's kernels:

* ``torch.cuda`` answers as one GPU does (``is_available()``, ``device_count()`` 1, ``current_device()``
  0, ...: ONE_GPU); a factory given the device (``device=x.device``, ``"cuda"``) makes its tensor there,
  without ``device=`` on the CPU; ``cuda:1`` fails ("invalid device ordinal");
* ``.to(device)``, ``.cuda()`` and ``Module.to(device)`` move tensors, parameters and registered buffers
  (persistent or not); a tensor kept in a plain attribute stays where it is;
* an operation given a tensor on the device and a CPU tensor of one or more dimensions raises
  RuntimeError ("Expected all tensors to be on the same device"), ``index_put_`` with CPU values too;
  0-dim CPU tensors mix with it (as scalars), copies run either way (``to``, ``.cpu()``, ``copy_``,
  ``cpu_buffer[..., a:b] = on_device``), CPU indices into a device tensor run;
* values are real: results equal the CPU's; ``.item()``, ``tolist()``, ``nonzero`` and branches on values
  work, ``.numpy()`` fails. (A random op draws from the CPU's generator: CUDA's own draws other numbers.)
* what no honest code needs to ask, asked by code outside torch and the kata's tools (dispatch internals,
  this module's names, a storage), is recorded in ``detections`` (see _asked_directly).

How: a tensor made with ``_make_wrapper_subclass`` (it reports the device; its class then set back to
torch.Tensor's) holding a CPU tensor,
and a ``TorchDispatchMode`` that runs every aten operation on the held tensors and wraps the results,
the way ``torch._subclasses.fake_tensor.FakeTensorMode`` pretends to be on CUDA in a CPU-only build,
with its three switches: the mode sits in the FAKE slot (factories may then name CUDA without
initialising it), a no-op CUDA device guard, and ``torch.tensor`` lifted on the CPU before it moves.
Not simulated: in-place operations that change a tensor's shape (``unsqueeze_``, ``resize_``) on the device.

Every CPU tensor made while the mode is on is remembered with the line of code that made it (the first
caller outside torch and the kata's own tools), so that an error names the tensor that stayed on the CPU.
The public tests use this file, and the grader's worker imports the same one (kata_worker/tools.py; the
sandbox shows the worker this file and its own package only). It imports only torch and the standard library.
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
# Operations CUDA runs with tensors on two devices: copies between them (either way), and CPU indices into a
# device tensor (not CPU values put into one: index_put_ refuses them).
_MOVES = {_aten._to_copy.default, _aten.copy_.default}
_INDEXING = {_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default, _aten._index_put_impl_.default}
# What a one-GPU CUDA machine says of a device it does not have (torch.AcceleratorError since PyTorch 2.8).
INVALID_ORDINAL = "CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough GPUs?"
_CUDA_ERROR = getattr(torch, "AcceleratorError", RuntimeError)
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
# The kata's own tools, whose frames are never "where a tensor was made": this file's folder, and the grader's
# worker package, which adds its own when it imports this file.
TOOL_FOLDERS = {os.path.dirname(os.path.abspath(__file__))}
_ACTIVE: list = []  # the SimulatedGpu modes running now (see _asked_directly)
# Asked only to learn whether a dispatch mode or a tensor subclass is there: calls from outside torch are recorded.
INTROSPECTION = {
    "torch._C": ("_get_dispatch_mode", "_len_torch_dispatch_stack", "_get_dispatch_stack_at", "_dispatch_keys",
                 "_len_torch_function_stack", "_get_function_stack_at", "_is_torch_function_mode_enabled"),
    "torch.utils._python_dispatch": ("_get_current_dispatch_mode", "_get_current_dispatch_mode_stack",
                                     "is_traceable_wrapper_subclass", "is_in_torch_dispatch_mode"),
    "torch.overrides": ("_get_current_function_mode_stack", "_get_current_function_mode"),
}


class OnDevice(torch.Tensor):
    """Makes a tensor on the simulated :data:`DEVICE`; ``_held`` is the CPU tensor that holds its data (a name
    no method of a tensor has: ``x.values`` is still the method). Its class is then torch.Tensor's, as on
    CUDA (``type(x) is torch.Tensor``; a Parameter's is Parameter's, see _parameter): the modes run it."""

    _held: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, values: torch.Tensor) -> "OnDevice":
        made = torch.Tensor._make_wrapper_subclass(
            cls, values.shape, strides=values.stride(), storage_offset=values.storage_offset(), dtype=values.dtype,
            layout=values.layout, device=DEVICE, requires_grad=values.requires_grad)
        made._held = values
        made.__class__ = torch.Tensor  # type(x) is torch.Tensor, as on CUDA: the mode runs it all the same
        return made

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func}: a tensor of the simulated GPU was used outside simulated_gpu()")


def _is_held(t: Any) -> bool:
    """Whether ``t`` is a tensor of the simulated device (its class is torch.Tensor's, or Parameter's)."""
    return isinstance(t, torch.Tensor) and "_held" in t.__dict__


def _parameter(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
    """``Parameter(data)`` (Module.to makes them): of a device tensor, a Parameter on the device."""
    if not _is_held(data):
        return _PARAMETER_NEW(cls, data, requires_grad)
    made = OnDevice(data._held)
    made.__class__, made._wants_grad = cls, requires_grad
    return made


_PARAMETER_NEW = torch.nn.Parameter.__new__


def plain(value: Any) -> Any:
    """``value`` with every tensor of the simulated device replaced by a CPU copy of its values."""
    return tree_map(lambda t: t._held.detach().clone() if _is_held(t) else t, value)


def _site(frame: Any) -> str:
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{os.path.basename(frame.f_code.co_filename)}, line {frame.f_lineno}" + (f": {code}" if code else "")


def _caller() -> str:
    """``file.py, line N: <code>``: the first frame that is not torch's nor the kata's own tools (the
    files of TOOL_FOLDERS, and any ``kata_*.py``)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        ours = os.path.dirname(name) in TOOL_FOLDERS or os.path.basename(name).startswith("kata_")
        if not (name.startswith(_TORCH) or ours):
            return _site(frame)
        frame = frame.f_back
    return "an unknown place"


def _asked_directly(what: str) -> None:
    """Record, in every simulation running, that code outside torch and the kata's tools asked ``what``
    itself (its own frame, the caller's caller, did): nothing honest code needs, so the grader shows it for review."""
    frame = sys._getframe(2)
    name = os.path.abspath(frame.f_code.co_filename)
    if not (name.startswith(_TORCH) or os.path.dirname(name) in TOOL_FOLDERS):
        note = f"{what} at {_site(frame)}"
        for gpu in _ACTIVE:
            if note not in gpu.detections:
                gpu.detections.append(note)


class _Watched(type(sys)):
    """This module, as student code sees it: reading its names during a simulation is recorded."""

    def __getattribute__(self, name: str) -> Any:
        if _ACTIVE and not name.startswith("__"):
            _asked_directly(f"the simulator's own module (kata_gpu.{name})")
        return super().__getattribute__(name)


def _introspection(module: Any, name: str) -> Any:
    """``module.name`` wrapped to record a direct call from student code (see _asked_directly)."""
    inner = getattr(module, name)

    def asked(*args: Any, **kwargs: Any) -> Any:
        _asked_directly(f"torch's dispatch internals ({module.__name__}.{name})")
        return inner(*args, **kwargs)
    return asked


class SimulatedGpu(TorchDispatchMode):
    """The mode; ``origins`` maps each CPU tensor made while it is on to where it came from."""

    def __init__(self) -> None:
        super().__init__()
        self._mode_key = torch._C._TorchDispatchModeKey.FAKE  # as FakeTensorMode: factories may name CUDA
        self.origins: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.detections: list[str] = []  # how code told it from CUDA, as no honest code needs (see _asked_directly)

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: wrapping __torch_dispatch__ to skip torch.compile imports torch._dynamo (2 s) on first use,
        and nothing is compiled here."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        on_device, on_cpu = self.one_device(func.overloadpacket.__name__, args, kwargs, _crossing(func, args))
        lands = _lands_on_device(func, args, kwargs, on_device)
        out = _on_values(func, args, kwargs, on_device, lands)
        if lands:
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

    def one_device(self, name: str, args: Any, kwargs: dict, crossing: Any = ()) -> tuple[list, list]:
        """The tensors of the call on the device and on the CPU; raises as CUDA does where both hold tensors
        and a CPU tensor of one or more dimensions is not one that ``crossing`` lets stand there (see _crossing)."""
        leaves = tree_flatten((args, kwargs))[0]
        on_device = [t for t in leaves if _is_held(t)]
        on_cpu = [t for t in leaves if isinstance(t, torch.Tensor) and not _is_held(t)]
        if crossing is ALL:
            return on_device, on_cpu
        allowed = {id(t) for t in crossing}
        stray = next((t for t in on_cpu if t.dim() > 0 and id(t) not in allowed), None) if on_device else None
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


ALL = object()  # _crossing: every tensor of the call may stand on either device


def _crossing(func, args: Any) -> Any:
    """The tensors of an aten call that CUDA lets stand on the CPU beside a device tensor (0-dim ones always
    may): all of a copy (``to``, ``copy_`` either way), the CPU indices into a device tensor (not values)."""
    if func in _MOVES:
        return ALL
    if func in _INDEXING and _is_held(args[0]):
        return [t for t in tree_flatten(args[1])[0] if isinstance(t, torch.Tensor)]
    return ()


def _lands_on_device(func, args: Any, kwargs: dict, on_device: list) -> bool:
    """Whether an op's result is on the device: where ``device=`` says (``cuda:1`` fails), else where ``self``
    is for an in-place op (``copy_`` into a CPU tensor stays there), else where its tensors are."""
    target = kwargs.get("device")
    if target is not None:
        check_ordinal(target)
        return torch.device(target).type == DEVICE.type
    if func.overloadpacket.__name__.endswith("_") and args and isinstance(args[0], torch.Tensor):
        return _is_held(args[0])
    return bool(on_device)


def check_ordinal(device: Any) -> None:
    """Raise as a one-GPU CUDA machine does for a CUDA device other than :data:`DEVICE` (``cuda:1``)."""
    if _is_cuda(device) and torch.device(device).index not in (None, DEVICE.index):
        raise _CUDA_ERROR(INVALID_ORDINAL)


def _on_values(func, args: Any, kwargs: dict, on_device: list, lands: bool) -> Any:
    """``func`` run by the CPU's kernels on the values; its tensors on the device where ``lands``.
    An in-place op returns the very tensor it was given."""
    values = {id(t): t._held for t in on_device}
    back = {id(t._held): t for t in on_device}

    def unwrap(x: Any) -> Any:
        if _is_held(x):
            return values[id(x)]
        return torch.device("cpu") if isinstance(x, torch.device) and x.type == DEVICE.type else x

    out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
    if not lands:
        return out
    return tree_map(lambda t: (back[id(t)] if id(t) in back else OnDevice(t)) if type(t) is torch.Tensor else t, out)


class _DeviceCalls(TorchFunctionMode):
    """The calls that cannot reach the dispatcher as they are.

    * ``.to("cuda")`` and ``.cuda()`` name :data:`DEVICE` (no index asks CUDA which is current); ``cuda:1`` fails.
    * Tensors on the device never require grad (autograd would ask CUDA for a stream); ``requires_grad``
      says what ``requires_grad_``/``Parameter`` asked for. _HOST_VIEWS: ``tolist()``, ``data_ptr()``, ...
    * A call whose Python binding sets CUDA's device guard first (indexing, ``nonzero``) fails in a build
      without CUDA: it runs on the values here, with the same rule on devices (_crossing_call).
    """

    def __init__(self, gpu: SimulatedGpu) -> None:
        super().__init__()
        self.gpu = gpu

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        held = args[0] if args and _is_held(args[0]) else None
        if func in _REQUIRES_GRAD and held is not None:  # what was asked for is what it says
            if func == _REQUIRES_GRAD[2]:  # a method-wrapper: a new one each time
                return held.__dict__.get("_wants_grad", False)
            held._wants_grad = bool(args[1] if len(args) > 1 else kwargs.get("requires_grad", True))
            return held if func is torch.Tensor.requires_grad_ else None
        if held is not None and func in _HOST_VIEWS:
            return _HOST_VIEWS[func](held)
        if func is torch.Tensor.cuda:
            device = args[1] if len(args) > 1 else kwargs.get("device")
            check_ordinal(torch.device("cuda", device) if isinstance(device, int) else device)
            return args[0].to(DEVICE, non_blocking=kwargs.get("non_blocking", False))
        if func is torch.Tensor.to:
            for value in (*args[1:], *kwargs.values()):
                check_ordinal(value)
            args = tuple(DEVICE if _is_cuda(a) else a for a in args)
            kwargs = {k: DEVICE if _is_cuda(v) else v for k, v in kwargs.items()}
        try:
            return func(*args, **kwargs)
        except RuntimeError as err:
            if "not linked with support for cuda" not in str(err):
                raise
        name = getattr(func, "__name__", str(func))
        on_device, _ = self.gpu.one_device(name, args, kwargs, _crossing_call(name, args))
        with torch.utils._python_dispatch._disable_current_modes():
            return _on_values(func, args, kwargs, on_device, bool(on_device))


def _repr(t: torch.Tensor) -> str:
    """repr of a device tensor (torch's own turns the modes off first): its values', on the device."""
    with torch.utils._python_dispatch._disable_current_modes():
        text = repr(t._held)
    return f"{text[:-1]}, device='{DEVICE}')" if text.endswith(")") else text


def _no_numpy(t: torch.Tensor) -> Any:
    raise TypeError(f"can't convert {DEVICE} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                    "to host memory first.")


_REQUIRES_GRAD = (torch.Tensor.requires_grad_, torch.Tensor.requires_grad.__set__, torch.Tensor.requires_grad.__get__)
def _storage(t: torch.Tensor) -> Any:
    """The held values' storage (a CPU one: recorded when code outside torch asked for it)."""
    frame = sys._getframe(2)  # past __torch_function__ (and torch's overrides.py where a method calls it)
    while frame.f_code.co_filename.endswith("overrides.py") and frame.f_back is not None:
        frame = frame.f_back
    if not os.path.abspath(frame.f_code.co_filename).startswith(_TORCH):
        for gpu in _ACTIVE:
            gpu.detections.append(f"the tensor's storage (x.untyped_storage()) at {_site(frame)}")
    return t._held.untyped_storage()


_HOST_VIEWS = {torch.Tensor.tolist: lambda t: t._held.tolist(), torch.Tensor.data_ptr: lambda t: t._held.data_ptr(),
               torch.Tensor.numpy: _no_numpy, torch.Tensor.__array__: _no_numpy, torch.Tensor.__repr__: _repr,
               torch.Tensor.untyped_storage: _storage}
_INDEXING_CALLS = {"__getitem__", "__setitem__", "index_put_", "index_put"}


def _crossing_call(name: str, args: Any) -> Any:
    """As _crossing, for the calls that run here: the CPU indices into a device tensor, and a CPU value
    assigned to a slice of one (``x[:, 1] = cpu_values`` is a ``copy_``; ``x[index] = cpu_values`` an
    ``index_put_``, which refuses it)."""
    if name in ("to", "copy_"):
        return ALL
    if name not in _INDEXING_CALLS or len(args) < 2 or not _is_held(args[0]):
        return ()
    crossing = [t for t in tree_flatten(args[1])[0] if isinstance(t, torch.Tensor)]
    key = args[1] if isinstance(args[1], tuple) else (args[1],)
    if name == "__setitem__" and len(args) > 2 and not crossing and not any(isinstance(k, list) for k in key):
        crossing.append(args[2])  # basic indexing (a list, as a tensor, makes it advanced)
    return crossing


def _is_cuda(value: Any) -> bool:
    return (isinstance(value, str) and value.split(":")[0] == "cuda") or (
        isinstance(value, torch.device) and value.type == "cuda")


# What the public API answers on a one-GPU CUDA machine once a tensor is on it: while the simulation runs, each
# function named here has its code swapped for the lambda's (same parameters, constants only), so that every
# reference answers so (``from torch.cuda import is_available`` too); put back on exit. The seeds touch only
# CUDA's generators (the simulation draws from the CPU's). _one_gpu_values(): attributes set for the while.
ONE_GPU = {
    "torch.cuda": dict(
        is_available=lambda: True, device_count=lambda: 1, current_device=lambda: 0, is_initialized=lambda: True,
        get_device_name=lambda device=None: "NVIDIA A100-SXM4-80GB", get_device_capability=lambda device=None: (8, 0),
        get_device_properties=lambda device=None: type("_CudaDeviceProperties", (), dict(
            name="NVIDIA A100-SXM4-80GB", major=8, minor=0, total_memory=85096005632, multi_processor_count=108,
            is_integrated=False))(),
        get_arch_list=lambda: ["sm_80", "sm_90"], is_bf16_supported=lambda including_emulation=True: True,
        synchronize=lambda device=None: None, empty_cache=lambda: None, mem_get_info=lambda device=None: (
            84000000000, 85096005632), memory_allocated=lambda device=None: 0, memory_reserved=lambda device=None: 0,
        max_memory_allocated=lambda device=None: 0, manual_seed=lambda seed: None, manual_seed_all=lambda seed: None,
        seed=lambda: None, seed_all=lambda: None,
        set_device=lambda device: None if (device if isinstance(device, int) else torch.device(device).index) in (
            0, None) else (_ for _ in ()).throw(getattr(torch, "AcceleratorError", RuntimeError)("CUDA error: invalid "
                                                                                                  "device ordinal"))),
    "torch.backends.cuda": dict(is_built=lambda: True),
    "torch.backends.cudnn": dict(is_available=lambda: True, version=lambda: 91002),
}


def _one_gpu_values() -> dict:
    version = str(torch.__version__).split("+")[0] + "+cu128"
    return {(torch.version, "cuda"): "12.8", (torch, "__version__"): type(torch.__version__)(version),
            (torch.version, "__version__"): type(torch.__version__)(version)}


def _answer_as_one_gpu() -> list:
    """Swap in ONE_GPU's code, set _one_gpu_values(), _parameter and INTROSPECTION's wrappers; what to put
    back (a function of ONE_GPU whose parameters differ in this torch is left as it is)."""
    swapped = []
    for module, answers in ONE_GPU.items():
        for name, answer in answers.items():
            target, code = getattr(sys.modules.get(module), name, None), answer.__code__
            if getattr(getattr(target, "__code__", None), "co_freevars", True):
                continue
            if target.__code__.co_varnames[:target.__code__.co_argcount] == code.co_varnames[:code.co_argcount]:
                swapped.append((target, "__code__", target.__code__))
                target.__code__ = code
    values = {**_one_gpu_values(), (torch.nn.Parameter, "__new__"): staticmethod(_parameter)}
    for module, names in ((sys.modules.get(m), names) for m, names in INTROSPECTION.items()):
        values.update({(module, name): _introspection(module, name) for name in names if hasattr(module, name)})
    for (owner, name), value in values.items():
        swapped.append((owner, name, vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)
    return swapped


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
        self._swapped = _answer_as_one_gpu()
        self.mode = SimulatedGpu()
        _ACTIVE.append(self.mode)
        self._calls = _DeviceCalls(self.mode)
        self._calls.__enter__()
        return self.mode.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(*exc)
        self._calls.__exit__(*exc)
        torch._C._set_only_lift_cpu_tensors(self._lift)
        torch.__future__.set_overwrite_module_params_on_conversion(self._overwrite)
        for owner, name, value in reversed(self._swapped):
            setattr(owner, name, value)
        _ACTIVE.remove(self.mode)


if __name__ in sys.modules:  # loaded by file name (the worker, the tests) or imported: reads are watched
    sys.modules[__name__].__class__ = _Watched
