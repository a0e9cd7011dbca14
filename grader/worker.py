"""The grader's worker: runs a student's code in its own process and answers with plain data.

Self-contained on purpose (the standard library and torch only; nothing from ``grader/`` or
``tests/``): the grader starts it as ``python -I -B worker.py --fd N --copy DIR --memory-mb M``
with a clean environment, its cwd in a scratch directory and the protocol on the inherited socket
``N``. Order matters: resource limits, then ``import torch``, then the four group folders of the
submission copy go in front of ``sys.path`` (so a student's ``torch.py`` cannot shadow torch).

Protocol: 8-byte big-endian length + a payload each way, encoded by ``wire_codec.py`` (loaded
by path from this file's folder: plain data only, no pickle; the grader's side is
``grader/wire.py``). First frame from the worker: ``{"ready": {...}}``. Then one response per request ``{"op": ..., "release": [refs], "t":
seconds}``: ``{"ok": value}`` or ``{"error": {"type", "base", "message", "where"}}``. Values are
plain data; anything else stays here in a ref table and travels as ``{"__ref__": n, "label",
"calls"}``. Tensors travel as detached plain-``torch.Tensor`` copies; iterators as lists.
"""

import collections
import collections.abc
import faulthandler
import gc
import importlib
import importlib.util
import os
import resource
import signal
import socket
import sys
import threading
import time
import traceback
import types

GROUPS = ("01_simple_attention", "02_trainable_weights", "03_causal", "04_multihead")
FSIZE_LIMIT = 64 * 2**20
MAX_DEPTH = 50
CODEC_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wire_codec.py")
_torch = _codec = None  # set in _prepare() once torch is imported
_SCALARS = ()


def _vm_size() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _set_limit(which, value):
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))
    except (ValueError, OSError):
        pass


def _user_tasks() -> int:
    uid, n = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                pass
    return n


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


class Worker:
    def __init__(self, sock, copy_dir):
        self.sock = sock
        self.copy_dir = copy_dir
        self.refs = {}
        self.next_ref = 1
        self.watchdog = _Watchdog()
        self.parent = os.getppid()

    # ---- framing -------------------------------------------------------------------------
    def recv(self):
        head = self._recv_exact(_codec.HEADER.size)
        if head is None:
            return None
        (size,) = _codec.HEADER.unpack(head)
        if size > _codec.MAX_FRAME:
            raise SystemExit(3)
        return _codec.decode(self._recv_exact(size), allow_grad=True)

    def _recv_exact(self, n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                return None
            got += k
        return bytes(buf)

    def send(self, obj):
        data = _codec.encode(obj)
        if len(data) > _codec.MAX_FRAME:
            err = {"type": "ValueError", "base": "ValueError", "where": "",
                   "message": f"the result is too large to send to the grader ({len(data)} bytes)"}
            data = _codec.encode({"error": err})
        self.sock.sendall(_codec.HEADER.pack(len(data)) + data)

    # ---- values going out ----------------------------------------------------------------
    def ref(self, obj):
        n = self.next_ref
        self.next_ref += 1
        self.refs[n] = obj
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
        if isinstance(obj, tuple) and _is_namedtuple(tp):
            return {"__namedtuple__": str(tp.__name__), "fields": list(tp._fields),
                    "values": [self.out(x, depth + 1) for x in tuple.__iter__(obj)]}
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
            name = req["module"]
            module = sys.modules.get(name) or importlib.import_module(name)
            return getattr(module, req["name"])
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
            grads = {name: (None if p.grad is None else p.grad.detach().clone())
                     for name, p in target.named_parameters()}
            return out.detach(), grads
        raise ValueError(f"unknown operation {op!r}")

    def serve(self):
        while True:
            req = self.recv()
            if req is None:
                return
            for n in req.get("release", ()):
                self.refs.pop(n, None)
            timeout = req.get("t")
            if timeout:
                # Where a hung call is stuck: the grader reads this from the output tail after killing us.
                self.watchdog.deadline = time.monotonic() + max(0.05, timeout - 0.25)
            try:
                response = {"ok": self.out(self.handle(req))}
            except BaseException as exc:  # the student's code may raise anything, SystemExit included
                response = {"error": self.error(exc)}
            finally:
                self.watchdog.deadline = None
            if _parent_doomed(self.parent):
                # The code just run killed our parent (the template, or the launcher's shell). Under
                # bubblewrap the sandbox is being torn down around us; how many answers get out first
                # must not decide a grade. Stop now, in every launcher: the grader sees a dead worker.
                sys.__stderr__.write("the worker's parent process was killed (by the code it ran?): the worker stops\n")
                sys.__stderr__.flush()
                os._exit(70)
            try:
                self.send(response)
            except Exception as exc:  # e.g. a tensor that cannot be serialized
                self.send({"error": self.error(exc)})

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


def _is_namedtuple(tp):
    fields = getattr(tp, "_fields", None)
    return type(fields) is tuple and all(type(f) is str and f.isidentifier() for f in fields)


def _snapshot(t):
    torch = _torch
    with torch._C.DisableTorchFunctionSubclass():
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
    found = []
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, _torch.Tensor):
                found.append(f"{prefix}.{name}" if prefix else name)
    return found


def _mixed_device_mode(device):
    """A TorchFunctionMode recording ops that mix tensors on ``device`` with tensors elsewhere.

    Such an op fails on a real GPU (a CPU mask used with CUDA scores); the meta device lets some of
    them through, so the simulation looks for them explicitly. 0-dim tensors are allowed anywhere.
    """
    from torch.overrides import TorchFunctionMode

    class MixedDeviceMode(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            tensors = [a for a in _flatten((args, kwargs)) if isinstance(a, _torch.Tensor)]
            here = any(t.device.type == device.type for t in tensors)
            foreign = [t for t in tensors if t.device.type != device.type and t.dim() > 0]
            if here and foreign and len(self.seen) < 5:
                name = getattr(func, "__name__", str(func))
                self.seen.append(f"{name} got a {foreign[0].device.type} tensor of shape {tuple(foreign[0].shape)}")
            return func(*args, **kwargs)

    return MixedDeviceMode()


def _flatten(obj):
    if isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _flatten(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _flatten(item)
    else:
        yield obj


def _device_run(module, x, device):
    """The GPU-run check's probe: move ``module`` and ``x`` to ``device``, run forward, report."""
    torch = _torch
    device = torch.device(device)
    report = {"plain_tensor_attributes": _plain_tensor_attributes(module), "stray_tensors": [],
              "mixed_device_ops": [], "output_device": None, "output": None, "error": None}
    mode = _mixed_device_mode(device)
    try:
        moved = module.to(device)
        report["stray_tensors"] = [
            name for name, t in [*moved.named_parameters(), *moved.named_buffers()] if t.device.type != device.type
        ]
        with torch.no_grad(), mode:
            out = moved(x.to(device))
        report["output_device"] = str(out.device)
        if device.type != "meta":
            report["output"] = out.detach().to("cpu")
    except Exception as exc:
        report["error"] = {"type": type(exc).__name__, "message": str(exc)[:500]}
    report["mixed_device_ops"] = mode.seen
    return report


def main(argv):
    opts = dict(zip(argv[1::2], argv[2::2]))
    fd, memory = int(opts["--fd"]), int(opts["--memory-mb"]) * 2**20
    _prepare()
    if "--template" in opts:
        _serve_template(fd, memory, sweep=opts["--template"] == "sweep")
    else:
        _serve_worker(fd, opts["--copy"], memory)


def _prepare():
    """Limits that hold for every worker, then torch (imported once, also for every forked worker)."""
    global _torch, _codec, _SCALARS
    faulthandler.enable()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing past the size limit fails with EFBIG instead
    _set_limit(resource.RLIMIT_FSIZE, FSIZE_LIMIT)
    _set_limit(resource.RLIMIT_NOFILE, 256)

    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # noise in every failure message
    import torch

    spec = importlib.util.spec_from_file_location("kata_wire_codec", CODEC_PY)
    codec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(codec)
    _torch, _codec = torch, codec
    _SCALARS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)
    _warm_up(torch)


def _warm_up(torch):
    """Use once what every grading uses: autograd, the layers, masking, dropout, state dicts and the
    codec (their first use in a process costs about 0.1 s; a template pays it once for all its forks)."""
    linear, dropout = torch.nn.Linear(3, 4), torch.nn.Dropout(0.5)
    x = torch.rand(2, 5, 3, requires_grad=True)
    scores = linear(x) @ linear(x).transpose(1, 2)
    scores = scores.masked_fill(torch.triu(torch.ones(5, 5), diagonal=1).bool(), float("-inf"))
    weights = dropout(torch.softmax(scores / 2.0, dim=-1))
    torch.cat([weights, torch.tril(weights)], dim=-1).sum().backward()
    torch.empty_like(x).bernoulli_(0.5)
    linear.load_state_dict(linear.state_dict())
    _codec.decode(_codec.encode({"x": x.detach(), "n": [1, "a", None]}))
    gc.freeze()  # torch's objects live as long as we do: full collections need not walk them


def _warm_up_meta(torch):
    """The GPU-run check's simulation on the meta device: its first use imports torch._dynamo (sympy
    and 800 modules, 1.3 s). A template pays it once, after its first fork (which does not wait for
    it); a plain worker pays it in its first ``device_run``."""
    on_meta = torch.nn.Linear(3, 4).to("meta")
    with torch.no_grad(), _mixed_device_mode(torch.device("meta")):
        on_meta(torch.rand(2, 5, 3, device="meta"))
    gc.freeze()


def _serve_worker(fd, copy_dir, memory):
    """Serve one submission: the copy's group folders go on sys.path only now, after torch."""
    torch = _torch
    as_limit = _vm_size() + memory
    # CUDA maps far more address space than any limit we could set: with CUDA, RLIMIT_AS stays off
    # (the NVML-based check does not initialize CUDA in this process).
    if not torch.cuda.is_available():
        _set_limit(resource.RLIMIT_AS, as_limit)
    _set_limit(resource.RLIMIT_NPROC, _user_tasks() + 64)  # no effect for root: a pid namespace is the real fence

    sock = socket.socket(fileno=fd)
    sys.path[:0] = [os.path.join(copy_dir, g) for g in GROUPS]
    worker = Worker(sock, copy_dir)
    worker.send({"ready": {"pid": os.getpid(), "as_limit": as_limit}})
    worker.serve()


def _serve_template(fd, memory, sweep):
    """Template mode: torch is imported once here; every worker of every submission is a fork.

    Control messages are JSON on a SOCK_SEQPACKET socket; ``spawn`` carries two descriptors (the
    new worker's protocol socket, and the write end of its output pipe). With ``sweep`` (only
    inside bubblewrap's pid namespace, where /proc lists nothing but the sandbox) every process
    but this one and its ancestors is killed before the next fork, so nothing a previous
    submission left running can touch the next one.
    """
    import json

    ctl = socket.socket(fileno=fd)
    ctl.sendall(json.dumps({"ready": {"pid": os.getpid()}}).encode())
    meta_ready = False
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 2)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        op = msg["op"]
        if op == "spawn":
            if sweep:
                _kill_everyone_else()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    ctl.close()
                    os.setsid()  # its own process group, killed as one
                    os.dup2(fds[1], 1)
                    os.dup2(fds[1], 2)
                    os.close(fds[1])
                    os.chdir(msg["scratch"])
                    _serve_worker(fds[0], msg["copy"], memory)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(0)
            for f in fds:
                os.close(f)
            answer = {"pid": pid}
        elif op == "kill":
            for kill in (os.killpg, os.kill):
                try:
                    kill(msg["pid"], signal.SIGKILL)
                except OSError:
                    pass
            answer = {}
        elif op == "wait":
            answer = {"rc": _wait(msg["pid"], msg["timeout"])}
        else:
            answer = {"error": f"unknown template operation {op!r}"}
        ctl.sendall(json.dumps(answer).encode())
        if op == "spawn" and not meta_ready:  # the first fork is already at work; later ones get this
            _warm_up_meta(_torch)
            meta_ready = True


def _wait(pid, timeout):
    """The child's exit status as subprocess reports it (-N for signal N), or None if still running."""
    deadline, pause = time.monotonic() + timeout, 0.0005
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)  # a killed fork is gone within milliseconds: poll fast, then back off
        pause = min(2 * pause, 0.01)


def _kill_everyone_else():
    keep = {os.getpid()}
    pid = os.getpid()
    while pid > 1:  # our ancestors in the namespace (the shell, bubblewrap's init)
        with open(f"/proc/{pid}/stat", "rb") as f:
            pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        keep.add(pid)
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    while True:  # reap them
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break


if __name__ == "__main__":
    main(sys.argv)
