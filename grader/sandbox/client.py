"""The grader's side of a worker: start its domain, talk to it, end it.

``WorkerClient(submission_dir, domains=...).start()`` reads the submission's module files (see
``grader.sandbox.bundle.read_module_files``) into a memfd, has ``domains`` fork an isolation domain
from the template (grader/sandbox/domains.py) and returns at once. ``request()`` sends one operation and
waits at most ``call_timeout`` seconds; a timeout, a dead worker or a malformed answer ends the
domain and raises :class:`WorkerFailure` saying what happened and where. The next request starts a
fresh domain from the same files; refs held from the dead one then raise
``WorkerFailure("the worker restarted; this object is gone")``.

Everything that comes back is decoded by ``grader.sandbox.wire`` (plain data, bounded in bytes and values)
and nothing is cached beyond the names the hidden tests look up. Text the student's code controls
and the grader shows (exception types, messages and locations, object labels, the output tail) has
its control characters, terminal escapes and bidi overrides escaped here (grader.safe_text), as it
enters.
"""

from __future__ import annotations

import builtins
import os
import select
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from grader.sandbox.limits import CALL_TIMEOUT, DOMAIN_HEADROOM_MB, MEMORY_MB, STARTUP_TIMEOUT, WALL_CEILING, WALL_FACTOR
from grader.rubric import STANDINS_DIR
from grader.safe_text import escape_controls
from grader.sandbox.bundle import bundle_fd, read_module_files
from grader.sandbox.domains import Domains
from grader.sandbox.modes import choose_isolation
from grader.sandbox.process import RunningDomain

# No torch here at import time: a grading starts its template (grader/grading/grade.py) before the
# grader itself pays for importing torch, so that the two imports overlap, and the command line imports
# the modules that import this one. grader.sandbox.wire imports torch (its codec builds tensors): the
# functions that need it import it when first called.


MAX_REVIEW = 50  # lines a worker may put up for review

# Builtin exception types re-raised by name in the grader; others become StudentError.
_NOT_RERAISED = {"Exception", "StopIteration", "StopAsyncIteration", "GeneratorExit", "SystemExit", "KeyboardInterrupt",
                 "BaseException", "BaseExceptionGroup", "ExceptionGroup"}
BUILTIN_EXCEPTIONS = {
    name: obj for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, Exception) and name not in _NOT_RERAISED
}


class WorkerFailure(Exception):
    """The worker timed out, died or broke the protocol; the message says what and where."""

    def __init__(self, message: str, kind: str = "failure"):
        super().__init__(message)
        self.kind = kind  # "timeout", "died", "protocol", "gone", "poisoned", "budget", "failure"


class StudentError(RuntimeError):
    """An exception of a non-builtin type raised by the student's code (its type named in the message)."""


@dataclass(frozen=True)
class Ref:
    """An object that lives in the worker: its number there, and words for messages."""

    generation: int
    n: int
    label: str
    calls: str


class WorkerClient:
    """A worker for one submission; restarts it (from a fresh copy) after a failure."""

    def __init__(self, submission_dir: Path, *, call_timeout: float = CALL_TIMEOUT, memory_mb: int = MEMORY_MB,
                 domains: Domains | None = None, substitutes: Mapping[str, Path] | None = None,
                 max_starts: int | None = None, startup_timeout: float = STARTUP_TIMEOUT,
                 review: set[str] | None = None):
        self.submission_dir = Path(submission_dir)
        self.call_timeout = call_timeout
        self.memory_mb = memory_mb
        self.own_domains = domains is None  # then this client starts (and closes) a template of its own
        self.domains = domains or Domains(choose_isolation("auto"))
        self.substitutes = dict(substitutes or {})
        foreign = [str(f) for f in self.substitutes.values() if Path(f).resolve().parent != STANDINS_DIR]
        if foreign:  # the one door into a domain for files not the student's: stand-ins only, never the reference
            raise ValueError(f"only stand-ins (tests/standins/) may replace a student's module: {', '.join(foreign)}")
        self.max_starts = max_starts
        self.startup_timeout = startup_timeout
        # Seconds spent starting workers (a template replaced on a loaded machine imports torch again):
        # the grader's time, not the student's; a test's time budget leaves it out (grader/grading/engine.py).
        self.startup_seconds = 0.0
        self.starts = 0
        self.generation = 0
        self.imported: set[str] = set()
        self.cache: dict[tuple[int, str, str], Any] = {}
        # What each new domain imports before anything else (grader/grading/preload.py; None: nothing).
        self.preload: Any = None
        self._proc: RunningDomain | None = None
        self._release: list[int] = []
        self._lock = threading.RLock()
        self.closed = False
        # What the student's code ran in the last request, (owner, {kind of operation: routes}) or None, and what
        # the worker found that could hide operations from that record (grader/sandbox/kata_worker/tracing.py).
        self.last_trace: tuple[str, dict[str, tuple[str, ...]]] | None = None
        self.review: set[str] = set() if review is None else review

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> WorkerClient:
        """Spawn the worker if none is running; returns at once (torch loads in the background)."""
        with self._lock:
            if self._proc is None:
                self._spawn()
        return self

    def _spawn(self) -> None:
        if self.closed:
            raise WorkerFailure("the worker client is closed", "gone")
        if self.max_starts is not None and self.starts >= self.max_starts:
            raise WorkerFailure(f"not run: the worker was restarted too often ({self.starts} starts)", "budget")
        self.starts += 1
        self.generation += 1
        self.imported = set()
        self._release = []
        files = read_module_files(self.submission_dir, self.substitutes)[0]  # its notes are intake's to report
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        bundle = bundle_fd(files)
        try:
            proc = self.domains.spawn(bundle, theirs, self.memory_mb)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
            os.close(bundle)
        self._proc = RunningDomain(self.generation, proc, ours)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._kill()
            if self.own_domains:
                self.domains.close()

    def __enter__(self) -> WorkerClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _kill(self) -> None:
        self.cache.clear()
        self.imported = set()
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:
            pass

    # ---- requests ------------------------------------------------------------------------
    def release(self, ref: Ref) -> None:
        if ref.generation == self.generation and self._proc is not None:
            self._release.append(ref.n)

    def check(self, ref: Ref) -> None:
        if ref.generation != self.generation or self._proc is None:
            raise WorkerFailure("the worker restarted; this object is gone", "gone")

    def request(self, message: dict[str, Any], what: str, timeout: float | None = None) -> Any:
        """Send one operation (plain data and this worker's Refs); the decoded answer (``Ref`` for
        opaque objects) or its exception."""
        from grader.sandbox import wire  # imports torch (see above)

        with self._lock:
            self.last_trace = None
            timeout = self.call_timeout if timeout is None else timeout
            # Refs of a dead worker fail here, before anything is spawned or killed.
            payload = _to_wire(message, self.generation if self._proc is not None else -1)
            started = time.monotonic()
            if self._proc is None:
                self._spawn()
            proc = self._proc
            try:
                if not proc.ready:
                    self._await_ready(proc, started)
                payload.update(release=self._release, t=float(timeout))
                self._release = []
                start, usage0 = time.monotonic(), proc.usage()
                self._send(proc, wire.encode(payload), start + timeout, what, timeout)
                await_answer(proc, start, usage0, timeout, what)
                answer = self._receive(proc, max(start + WALL_FACTOR * timeout, time.monotonic() + timeout), what,
                                       timeout)
            except BaseException:
                self._kill_if_over_memory(proc, what)
                self._kill()
                raise
            self._kill_if_over_memory(proc, what)
        if isinstance(answer, dict) and "trace" in answer:
            self.last_trace = _trace(answer.pop("trace"), self.review)
        if isinstance(answer, dict) and len(answer) == 1:
            if "ok" in answer:
                return _from_wire(answer["ok"], self.generation)
            if "error" in answer:
                raise self._memory_named(_exception(answer["error"]))
        self._kill()
        raise WorkerFailure(f"protocol error: malformed answer during {what}", "protocol")

    def _kill_if_over_memory(self, proc: RunningDomain, what: str) -> None:
        """End a domain the kernel stopped for going over its memory limit in all (a cgroup's: one of its
        processes was killed), whatever the request's outcome looked like: the domain is stopped, and says why."""
        if proc.proc.out_of_memory():
            self._kill()
            raise WorkerFailure(f"stopped: the domain went over its memory limit ({self.memory_mb + DOMAIN_HEADROOM_MB} "
                                f"MB for all its processes together) during {what}", "died")

    def _memory_named(self, exc: BaseException) -> BaseException:
        """A MemoryError from the student's code, with the limit it ran into (RLIMIT_AS, per process)."""
        if type(exc) is not MemoryError:
            return exc
        head, newline, where = str(exc).partition("\n")
        return MemoryError(f"{head} (over the memory limit: {self.memory_mb} MB of address space per process beyond "
                           f"torch's)".lstrip() + newline + where)

    def _await_ready(self, proc: RunningDomain, started: float) -> None:
        """Wait for a new domain's worker to announce itself (its startup is the grader's time)."""
        from grader.sandbox import wire  # imports torch (see above)

        ready = self._receive(proc, time.monotonic() + self.startup_timeout, "startup")
        if not isinstance(ready, dict) or not isinstance(ready.get("ready"), dict):
            raise wire.ProtocolError("the worker did not announce itself")
        proc.pid = proc.proc.pid  # a host pid to read CPU time from (None in a pid namespace)
        proc.ready = True
        self.startup_seconds += time.monotonic() - started

    def _receive(self, proc: RunningDomain, deadline: float, what: str, timeout: float | None = None) -> Any:
        from grader.sandbox import wire  # imports torch (see above)

        try:
            return wire.decode(wire.recv_frame(proc.sock, deadline))
        except TimeoutError:
            if timeout is None:
                raise WorkerFailure(f"timed out after {self.startup_timeout:g} s during {what}", "timeout") from None
            raise WorkerFailure(f"timed out after {timeout:g} s in {what}{proc.hang_location()}", "timeout") from None
        except (EOFError, ConnectionError):
            proc.let_die()
            raise WorkerFailure(f"{proc.exit_description()} during {what}{proc.last_lines()}", "died") from None
        except wire.ProtocolError as exc:
            raise WorkerFailure(f"protocol error: {exc} (during {what})", "protocol") from None

    def _send(self, proc: RunningDomain, data: bytes, deadline: float, what: str, timeout: float) -> None:
        """Send a frame; a worker that stops reading (SIGSTOP, a full buffer) times out like a hung one."""
        from grader.sandbox import wire  # imports torch (see above)

        try:
            proc.sock.settimeout(max(0.5, deadline - time.monotonic()))
            wire.send_frame(proc.sock, data)
        except TimeoutError:
            raise WorkerFailure(f"timed out after {timeout:g} s sending {what} (the worker stopped reading)",
                                "timeout") from None
        except (BrokenPipeError, ConnectionError):
            proc.let_die()
            raise WorkerFailure(f"{proc.exit_description()} before {what}{proc.last_lines()}", "died") from None
        finally:
            try:
                proc.sock.settimeout(None)
            except OSError:
                pass


# ---- conversions -------------------------------------------------------------------------
def await_answer(proc: RunningDomain, start: float, usage0: tuple[float, float] | None, timeout: float,
                 what: str) -> None:
    """Wait until the answer starts arriving; time out on CPU used, or on WALL_FACTOR x wall clock not
    counting the time the domain waited for a CPU: a busy machine delays a correct student's call, it
    does not fail it, and a hang that spins reads the same on a quiet machine and a busy one. A domain
    the kernel stopped a process of for its memory (its cgroup's) is stopped at once."""
    deadline = start + timeout
    oom = [] if proc.oom_fd is None else [proc.oom_fd]
    while True:
        left = deadline - time.monotonic()
        ready = select.select([proc.sock, *oom], [], [], left)[0] if left > 0 else []
        if oom and oom[0] in ready:  # the caller names the limit (WorkerClient._kill_if_over_memory)
            raise WorkerFailure(f"stopped: the domain went over its memory limit in {what}", "died")
        if ready:
            return
        now = time.monotonic()
        usage = proc.usage(rescan=True)
        used, waited = (None, 0.0) if usage is None or usage0 is None else \
            (usage[0] - usage0[0], usage[1] - usage0[1])
        if used is None or used >= 0.9 * timeout:
            raise WorkerFailure(f"timed out after {timeout:g} s in {what}{proc.hang_location()}", "timeout")
        hard = start + min(WALL_FACTOR * timeout + waited, WALL_CEILING * timeout)
        if now >= hard:
            queued = f"; {waited:.0f} s more waiting for a CPU" if waited >= 0.5 else ""
            raise WorkerFailure(f"timed out after {now - start - waited:.0f} s of wall-clock time ({used:.1f} s "
                                f"of CPU{queued}) in {what}{proc.hang_location()}", "timeout")
        deadline = min(hard, now + max(0.1, timeout - used))


def _to_wire(obj: Any, generation: int, depth: int = 0) -> Any:
    """Grader-side values to plain data: Refs become markers (only this worker's), slices too."""
    import torch  # costly: see above

    from grader.sandbox import wire  # imports torch (see above)

    if depth > wire.MAX_DEPTH:
        raise TypeError("argument nested too deeply to send to the worker")
    tp = type(obj)
    if tp is Ref:
        if obj.generation != generation:
            raise WorkerFailure("the worker restarted; this object is gone", "gone")
        return {"__ref__": obj.n}
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.untyped_storage().nbytes() > 2 * t.numel() * t.element_size() + 4096:
            t = t.clone()  # do not ship a whole storage for a small view
        t = t.as_subclass(torch.Tensor)
        if obj.requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        return t
    if tp in (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size):
        return obj
    if tp is slice:
        return {"__slice__": [_to_wire(x, generation, depth + 1) for x in (obj.start, obj.stop, obj.step)]}
    if obj is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(obj, (list, tuple)):
        return (list if isinstance(obj, list) else tuple)(_to_wire(x, generation, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return {k: _to_wire(v, generation, depth + 1) for k, v in obj.items()}
    raise TypeError(f"cannot send an object of type {tp.__module__}.{tp.__qualname__} to the worker")


def _from_wire(obj: Any, generation: int) -> Any:
    tp = type(obj)
    if tp is list:
        return [_from_wire(x, generation) for x in obj]
    if tp is tuple:
        return tuple(_from_wire(x, generation) for x in obj)
    if tp is dict:
        if "__ref__" in obj and type(obj["__ref__"]) is int:
            return Ref(generation, obj["__ref__"], escape_controls(str(obj.get("label", "object"))[:200]),
                       escape_controls(str(obj.get("calls", "object"))[:200]))
        return {k: _from_wire(v, generation) for k, v in obj.items()}
    return obj


def _trace(raw: Any, review: set[str]) -> tuple[str, dict[str, tuple[str, ...]]] | None:
    """An answer's ``trace`` as checked plain data: ``(owner, {kind of operation: routes})``, or None without
    an owner or a record; its review lines go into ``review`` (bounded: the student's code shapes them)."""
    if not isinstance(raw, dict):
        return None
    lines = raw.get("review")
    if isinstance(lines, list) and len(review) < MAX_REVIEW:
        review.update(escape_controls(str(line))[:300] for line in lines[:MAX_REVIEW - len(review)])
    owner, ran = raw.get("owner"), raw.get("ran")
    if type(owner) is not str or not isinstance(ran, dict) or not ran:
        return None
    return owner[:200], {str(kind)[:80]: tuple(escape_controls(str(route))[:120] for route in routes[:10])
                         for kind, routes in list(ran.items())[:10] if isinstance(routes, list)}


def _exception(err: Any) -> BaseException:
    if not isinstance(err, dict):
        return WorkerFailure("protocol error: malformed error report", "protocol")
    type_name = escape_controls(str(err.get("type", "Exception"))[:200])
    base = str(err.get("base", "Exception"))
    message = escape_controls(str(err.get("message", ""))[:4000])
    where = escape_controls(str(err.get("where", ""))[:1000])
    suffix = f"\n  (raised at {where})" if where else ""
    cls = BUILTIN_EXCEPTIONS.get(base)
    if cls is not None:
        text = message if type_name == base else f"{type_name}: {message}"
        try:
            return cls(text + suffix)
        except Exception:
            pass
    return StudentError(f"{type_name}: {message}{suffix}")
