"""The requests the grader may make of a worker, and the values that go back.

Values are plain data (``codec``); anything else stays here in a ref table and travels as
``{"__ref__": n, "label", "calls"}``. Tensors travel as detached plain ``torch.Tensor`` copies,
tuples (namedtuples included) as tuples, iterators as lists. Errors travel as ``{"type", "base",
"message", "where"}`` with paths made relative to the private copy.

Nothing here decides a grade: the grader compares what comes back with the reference. The
``device_run`` probe reports what it saw on a device (the output, or the error and where it came
from; where tensors ended up); the grader judges it (grader/grading/gpu_check.py).
"""

import collections
import collections.abc
import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import signal
import sys
import threading
import time
import traceback
import types

import kata_gpu
from kata_worker import public_tests
from kata_worker.imports import ImportRecorder

from kata_worker.tracing import Tracer

MAX_DEPTH = 50
_torch = None  # set by init() once torch is imported
_SCALARS = ()


_NOT_STUDENT = ()  # the folders of torch and of this package, and the simulated GPU's file


def init(torch) -> None:
    global _torch, _SCALARS, _NOT_STUDENT
    _torch = torch
    _NOT_STUDENT = (os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__)),
                    os.path.abspath(kata_gpu.__file__))
    kata_gpu.TOOL_FOLDERS.add(os.path.dirname(os.path.abspath(__file__)))  # where a tensor was made: never here
    _SCALARS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)


class _Watchdog:
    """Writes where the main thread is when a request runs past its time (the grader quotes it).

    One long-lived thread polling a deadline: arming it costs an assignment per request, where
    faulthandler's per-call timer started and joined a thread each time (1.5 ms a request). It
    needs the GIL, so a hang inside C code that holds it goes unlocated (still timed out).
    """

    def __init__(self):
        self.deadline = None
        self.main = threading.main_thread().ident
        threading.Thread(target=self._run, name="kata-watchdog", daemon=True).start()

    def _run(self):
        while True:
            time.sleep(0.05)
            deadline = self.deadline
            if deadline is None or time.monotonic() < deadline:
                continue
            self.deadline = None
            frame = sys._current_frames().get(self.main)
            lines = ["Timeout: the main thread (most recent call first):"]
            while frame is not None:
                lines.append(f'  File "{frame.f_code.co_filename}", line {frame.f_lineno} in {frame.f_code.co_name}')
                frame = frame.f_back
            try:
                sys.__stderr__.write("\n".join(lines) + "\n")
                sys.__stderr__.flush()
            except Exception:
                pass


class KataModules:
    """How a kata module is found, decided once for every request of this worker (the hidden tests'
    and the GPU-run check's alike): the module object that its own file in the copy executed into.

    A meta-path finder ahead of all others loads ``<group>/<name>.py`` for an import of ``name`` and
    keeps the module it made; :meth:`get` returns that one, never whatever student code may have put
    into ``sys.modules`` under the name (a class planted there by another file). The modules the grader
    names in :meth:`refuse` (their import broke an earlier worker) fail to import at once, wherever
    imported; which student module imports which is noted as the code runs (imports.py).
    """

    def __init__(self, copy_dir, groups):
        self.files = {}
        for group in groups:  # the order the group folders stand on sys.path
            folder = os.path.join(copy_dir, group)
            for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
                if entry.endswith(".py"):
                    self.files.setdefault(entry[:-3], os.path.join(folder, entry))
        self.loaded = {}
        self.refused = {}
        self.imports = ImportRecorder(self.files)
        self.imports.install()
        sys.meta_path.insert(0, self)

    def refuse(self, why):
        """``{module: why}``: modules whose import the grader saw break a worker."""
        self.refused = {str(k): str(v) for k, v in dict(why).items()}

    def find_spec(self, name, path=None, target=None):
        file = self.files.get(name) if path is None else None
        if file is None:
            return None
        self.imports.note(name)
        if name in self.refused:
            raise ImportError(self.refused[name], name=name)
        return importlib.util.spec_from_file_location(name, file, loader=_RecordingLoader(name, file, self.loaded))

    def get(self, name):
        module = self.loaded.get(name)
        if module is not None:
            return module
        if name not in self.files:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.modules.pop(name, None)  # not made by its file: whatever stands there was put there by hand
        importlib.import_module(name)
        if name not in self.loaded:
            raise ImportError(f"{name} was not loaded from its file (the import system was changed)")
        return self.loaded[name]


class _RecordingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name, path, loaded):
        super().__init__(name, path)
        self.loaded = loaded

    def exec_module(self, module):
        self.loaded[module.__name__] = module
        try:
            super().exec_module(module)
        except BaseException:
            self.loaded.pop(module.__name__, None)
            raise


class Worker:
    def __init__(self, channel, copy_dir, watch_parent=True, groups=()):
        self.channel = channel
        self.copy_dir = copy_dir
        self.modules = KataModules(copy_dir, groups)
        self.refs = {}
        self.next_ref = 1
        self.tracer = Tracer(copy_dir)  # which torch operations each request's student code ran (tracing.py)
        self.watchdog = _Watchdog()
        # Only a parent of the student's own uid can be killed by its code (a domain without a uid of its own).
        self.parent = os.getppid() if watch_parent else None

    # ---- values going out ----------------------------------------------------------------
    def ref(self, obj):
        n = self.next_ref
        self.next_ref += 1
        self.refs[n] = obj
        self.tracer.owners[n] = self.tracer.owner
        label, calls = _describe(obj)
        return {"__ref__": n, "label": label, "calls": calls}

    def out(self, obj, depth=0):
        torch = _torch
        tp = type(obj)
        if tp in _SCALARS or tp is torch.Size:
            return obj
        if isinstance(obj, torch.Tensor):
            return _snapshot(obj)
        if depth > MAX_DEPTH:
            return self.ref(obj)
        if tp is list or tp is tuple:
            return tp(self.out(x, depth + 1) for x in obj)
        if isinstance(obj, tuple) and not isinstance(obj, torch.Size):
            return tuple(self.out(x, depth + 1) for x in tuple.__iter__(obj))  # namedtuples too, as plain tuples
        if tp is dict or tp is collections.OrderedDict:
            if all(type(k) in (str, int) for k in obj):
                return {k: self.out(v, depth + 1) for k, v in obj.items()}
            return self.ref(obj)
        if isinstance(obj, (types.GeneratorType, collections.abc.Iterator)) and not isinstance(obj, torch.nn.Module):
            return [self.out(x, depth + 1) for x in list(obj)]
        return self.ref(obj)

    # ---- values coming in ----------------------------------------------------------------
    def inp(self, obj):
        tp = type(obj)
        if tp is dict:
            if "__ref__" in obj:
                try:
                    return self.refs[obj["__ref__"]]
                except KeyError:
                    raise LookupError("the grader referred to an object this worker does not hold") from None
            if "__slice__" in obj:
                return slice(*obj["__slice__"])
            if "__ellipsis__" in obj:
                return Ellipsis
            return {k: self.inp(v) for k, v in obj.items()}
        if tp is list or tp is tuple:
            return tp(self.inp(x) for x in obj)
        return obj

    # ---- requests ------------------------------------------------------------------------
    def handle(self, req):
        torch = _torch
        op = req["op"]
        if op == "ping":
            return None
        if op == "module_attr":
            return getattr(self.modules.get(req["module"]), req["name"])
        if op == "import":  # once per domain, before any test (grader/grading/preload.py)
            self.modules.refuse(req.get("refuse", {}))
            self.modules.get(req["module"])
            return None
        if op == "imports":
            return self.modules.imports.recorded()
        if op == "public_tests":  # for a flag, after everything that decides points (public_tests.py)
            return public_tests.run(req, torch)
        if op == "seed":
            torch.manual_seed(req["seed"])
            return None
        if op == "cuda_info":
            available = torch.cuda.is_available()
            return {"available": available, "name": torch.cuda.get_device_name(0) if available else ""}
        if op == "type_name":
            cls = type(self.inp(req["obj"]))
            return f"{cls.__module__}.{cls.__qualname__}"
        target = self.inp(req["obj"])
        if op == "call":
            return target(*self.inp(req["args"]), **self.inp(req["kwargs"]))
        if op == "getattr":
            return getattr(target, req["name"])
        if op == "call_method":  # a getattr and a call in one request (grader/grading/remote_impl.py)
            return getattr(target, req["name"])(*self.inp(req["args"]), **self.inp(req["kwargs"]))
        if op == "len":
            return len(target)
        if op == "bool":
            return bool(target)
        if op == "getitem":
            return target[self.inp(req["key"])]
        if op == "iter":
            return list(iter(target))
        if op == "call_and_inputs":
            args = self.inp(req["args"])
            result = target(*args, **self.inp(req["kwargs"]))
            return result, list(args)
        if op == "device_run":
            return _device_run(target, self.inp(req["x"]), req["device"])
        if op == "forward_backward":
            x, grad_output = self.inp(req["x"]), self.inp(req["grad_output"])
            target.zero_grad(set_to_none=True)
            out = target(x)
            if not isinstance(out, torch.Tensor) or out.shape != grad_output.shape:
                shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(f"the output has shape {shape}; the gradient given has {tuple(grad_output.shape)}")
            (out * grad_output).sum().backward()  # = out.backward(grad_output); see kata_seam.backward_with
            with torch._C.DisableTorchFunction():  # the worker's own copies: not the trace's to watch (tracing.py)
                grads = {name: (None if p.grad is None else p.grad.detach().clone())
                         for name, p in target.named_parameters()}
            return out.detach(), grads
        raise ValueError(f"unknown operation {op!r}")

    def serve(self):
        while True:
            req = self.channel.recv()
            if req is None:
                return
            for n in req.get("release", ()):
                self.refs.pop(n, None)
                self.tracer.forget(n)
            timeout = req.get("t")
            if timeout:
                # Where a hung call is stuck: the grader reads this from the output tail after killing us.
                self.watchdog.deadline = time.monotonic() + max(0.05, timeout - 0.25)
            context = self.tracer.begin(req)
            try:
                with context:  # the answer's conversion may run student code too (a generator)
                    response = {"ok": self.out(self.handle(req))}
            except BaseException as exc:  # the student's code may raise anything, SystemExit included
                response = {"error": self.error(exc)}
            finally:
                self.watchdog.deadline = None
            trace = self.tracer.finish(context)
            if trace is not None:
                response["trace"] = trace
            if self.parent is not None and _parent_doomed(self.parent):
                # The code just run killed our parent (the template, or the launcher's shell). Under
                # bubblewrap the sandbox is being torn down around us; how many answers get out first
                # must not decide a grade. Stop now, in every launcher: the grader sees a dead worker.
                sys.__stderr__.write("the worker's parent process was killed (by the code it ran?): the worker stops\n")
                sys.__stderr__.flush()
                os._exit(70)
            try:
                self.channel.send(response)
            except Exception as exc:  # e.g. a tensor that cannot be serialized
                self.channel.send({"error": self.error(exc)})

    def error(self, exc):
        tp = type(exc)
        base = "BaseException"
        for cls in tp.__mro__:
            if cls.__module__ == "builtins":
                base = cls.__name__
                break
        try:
            if isinstance(exc, KeyError) and len(exc.args) == 1 and type(exc.args[0]) is str:
                message = exc.args[0]
            else:
                message = str(exc)
        except BaseException:
            message = "<the exception could not be turned into text>"
        prefix = self.copy_dir.rstrip("/") + "/"
        message = str(message).replace(prefix, "")[:4000]
        where = []
        try:
            for frame in traceback.extract_tb(exc.__traceback__):
                if frame.filename.startswith(prefix):
                    where.append(f"{frame.filename[len(prefix):]}:{frame.lineno} in {frame.name}")
            if isinstance(exc, SyntaxError) and isinstance(exc.filename, str) and exc.filename.startswith(prefix):
                where.append(f"{exc.filename[len(prefix):]}:{exc.lineno}")
        except BaseException:
            pass
        try:
            name = f"{tp.__module__}.{tp.__qualname__}" if tp.__module__ != "builtins" else tp.__qualname__
        except BaseException:
            name = base
        return {"type": str(name)[:200], "base": base, "message": message, "where": "; ".join(where[-3:])[:1000]}


_FATAL_PENDING = (1 << (signal.SIGKILL - 1)) | (1 << (signal.SIGTERM - 1))


def _parent_doomed(parent):
    """True when ``parent`` is gone, a zombie, or has SIGKILL or SIGTERM pending.

    ``kill()`` returns before its target is gone, but it has marked the signal pending by then: read
    right after a request, this does not depend on how soon the parent is scheduled to die.
    """
    if os.getppid() != parent:
        return True
    try:
        with open(f"/proc/{parent}/status", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return True
    pending = 0
    for line in lines:
        if line.startswith((b"SigPnd:", b"ShdPnd:")):
            pending |= int(line.split()[1], 16)
        elif line.startswith(b"State:") and line.split()[1] in (b"Z", b"X"):
            return True
    return bool(pending & _FATAL_PENDING)


def _snapshot(t):
    torch = _torch
    with torch._C.DisableTorchFunction():  # subclasses' and the trace's (the worker's own copy: tracing.py)
        c = torch.Tensor.detach(t)
        if c.layout != torch.strided:
            raise TypeError(f"a tensor with layout {c.layout} cannot be sent to the grader")
        c = c.resolve_conj().resolve_neg().clone()
        if c.device.type != "cpu":
            c = c.to("cpu")  # a meta tensor cannot be: the error tells the grader
    c = c.as_subclass(torch.Tensor)
    if type(c) is not torch.Tensor:
        raise TypeError("a tensor subclass could not be turned into a plain tensor")
    return c


def _describe(obj):
    """(label, what calling it runs): ``("CausalAttention", "CausalAttention()")``, ..."""
    try:
        torch = _torch
        if isinstance(obj, type):
            name = str(obj.__qualname__)
            return name, f"{name}()"
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            name = str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "function"))
            return name, name
        cls = str(type(obj).__qualname__)
        if isinstance(obj, torch.nn.Module):
            return f"{cls} object", f"{cls}.forward"
        return f"{cls} object", f"{cls}.__call__"
    except BaseException:
        return "object", "object"


def _plain_tensor_attributes(module):
    """Tensors kept in plain attributes (not parameters, not buffers): they do not follow .to()."""
    found = {}
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, _torch.Tensor):
                found[f"{prefix}.{name}" if prefix else name] = value
    return found


def _device_run(module, x, device):
    """The GPU-run check's probe: move ``module`` and ``x`` to ``device`` ("cuda", or "simulated": the
    simulated GPU of the students' kata_gpu.py, see tools.py), run forward without gradients, and report what happened as plain
    data: the output (a CPU copy) and its device, or the error and the line of student code it came
    from; the tensors that stayed behind. The grader compares the output with the CPU's."""
    torch = _torch
    plain_attributes = _plain_tensor_attributes(module)
    report = {"plain_tensor_attributes": sorted(plain_attributes), "stray_tensors": [], "output_device": None,
              "output": None, "error": None, "detections": []}
    simulated = device == "simulated"
    target = kata_gpu.DEVICE if simulated else torch.device(device)
    gpu = None
    try:
        with torch.no_grad(), (kata_gpu.simulated_gpu() if simulated else contextlib.nullcontext()) as gpu:
            for name, tensor in plain_attributes.items():
                if gpu is not None:
                    gpu.name(tensor, f"self.{name}, a plain attribute (not a registered buffer)")
            moved = module.to(target)
            report["stray_tensors"] = [
                name for name, t in [*moved.named_parameters(), *moved.named_buffers()] if t.device != target]
            out = moved(x.to(target))
            report["output_device"] = str(out.device)
            report["output"] = kata_gpu.plain(out.detach()).to("cpu")
    except Exception as exc:
        report["error"] = {"type": type(exc).__name__, "message": str(exc)[:1000], "where": _student_line(exc)}
    finally:  # how the code told the simulation from CUDA, where no honest code needs to (kata_gpu.py)
        report["detections"] = [str(d)[:300] for d in list(getattr(gpu, "detections", None) or ())[:10]]
    return report


def _student_line(exc):
    """``file.py, line N: code`` of the last frame of the traceback outside torch and this package."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if not frame.filename.startswith(_NOT_STUDENT):
            return f"{os.path.basename(frame.filename)}, line {frame.lineno}: {(frame.line or '').strip()}"
    return ""
