"""What a request's student code ran, as plain values beside its answer: the from-scratch rule's record.

Every request for a public name the grader asks to trace (``module_attr`` with ``traced``: the names its rubric
forbids operations in) runs under ``kata_trace.Trace`` (exercises/kata_trace.py, the file the public tests use
too); the others run as they are (nothing of theirs is charged). Its answer then carries ``"trace": {"owner", "ran", "review"}`` when there is
something to say:

* ``owner``: the public name whose call made the object the request acted on (``module_attr`` of
  ``CausalAttention`` makes the class, calling it an instance, calling that its output: all
  ``CausalAttention``'s). The grader charges a kind of operation only to a name its rubric forbids it in;
  nothing is decided here.
* ``ran``: ``{kind of operation: [routes]}`` from the trace (``{"softmax": ["torch function softmin"]}``):
  the torch functions called, always; the aten operations run, in the first requests for each public name
  and in a share of the others drawn at random (``DEEP_FIRST``, ``DEEP_ODDS``: the aten level costs 20 us
  an operation, and every public route is a torch function).
* ``review``: what, in this domain, could hide operations from the trace, each said once: what the trace
  found at the end of the request (:meth:`kata_trace.Trace.tampered`), a thread or a process started by the
  student's code (the trace's modes are the calling thread's, and a child's operations are not ours to
  see), and names of torch's dispatch internals, of the trace or of threads and processes in the code
  objects of the student's modules once they are loaded (``_DisableTorchFunction``, ``__torch_dispatch__``,
  ``kata_trace``: no attention code needs them).
"""

import _thread
import collections
import contextlib
import os
import sys
import threading

import kata_trace

# Names no attention code needs: torch's dispatch internals, the trace itself, threads and processes. Found in
# the student's code (the names and identifier-like string constants of the code of its modules' functions and
# classes, the classes' attributes and bases), they are worth a reviewer's look.
# Parts of names (torch's internals) and whole names (modules and functions that also name honest things:
# ``fork_rng`` is fine, ``os.fork`` is not).
SUSPECT = ("DisableTorch", "torch_function", "torch_dispatch", "TorchFunctionMode", "TorchDispatchMode",
           "_python_dispatch", "dispatch_stack", "function_stack", "_pop_mode", "_push_mode", "disable_current_modes",
           "DispatchKey", "dispatch_mode", "skip_one_hop", "skip_next_torch", "kata_trace", "kata_worker",
           "_dispatch_", "torch_function_state")
SUSPECT_NAMES = frozenset({"_thread", "threading", "multiprocessing", "concurrent", "subprocess", "_posixsubprocess",
                           "fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "ctypes",
                           "get_referrers", "get_objects"})
MAX_REVIEW = 20
_UNTRACED = contextlib.nullcontext()
# The aten level (kata_trace.Trace.deep, 20 us an operation) watches the first requests for each public name and
# then one request in DEEP_ODDS, drawn from os.urandom (never torch's generator: no seeded result moves): code that
# gets under the torch functions (watched always) cannot tell ahead which of its calls are watched twice.
DEEP_FIRST, DEEP_ODDS = 2, 16


class Tracer:
    """One domain's tracing: the trace, who owns each ref, and what was found for review (each said once)."""

    def __init__(self, copy_dir):
        self.trace = kata_trace.Trace()
        self.prefix = copy_dir.rstrip("/") + "/"
        self.owner = None  # the public name the current request acts for
        self.owners = {}  # ref number -> public name
        self.said = set()
        self.new = []  # review lines not yet sent
        self.started = []  # threads or processes started during the current request
        self.scanned = set()
        self.modules_seen = 0
        self.requests = collections.Counter()  # requests per owner so far
        self.traced = set()  # the public names whose requests run under the trace
        _watch_threads_and_processes(self.started)

    def begin(self, req):
        """Before a request: whose call it is, and whether it runs under the trace (the context to run it in):
        the grader asks for the trace when it looks a public name up (``module_attr`` with ``traced``), for
        the names its rubric forbids operations in; the others' requests run as they are."""
        obj = req.get("obj")
        if req["op"] == "module_attr":
            self.owner = req.get("name")
            if req.get("traced") is True:
                self.traced.add(self.owner)
        else:
            self.owner = self.owners.get(obj.get("__ref__")) if type(obj) is dict else None
        del self.started[:]
        if self.owner not in self.traced:
            return _UNTRACED
        self.requests[self.owner] += 1
        self.trace.deep = self.requests[self.owner] <= DEEP_FIRST or os.urandom(1)[0] < 256 // DEEP_ODDS
        return self.trace

    def finish(self, context):
        """After a request run in ``context`` (and its answer's conversion): the answer's ``trace``, or None."""
        ran = self.trace.ran if context is self.trace else {}
        for sign in (self.trace.left if context is self.trace else ()):
            self._review(sign)
        for what in self.started:
            self._review(f"the student's code started {what} while a test ran (the trace sees this thread only)")
        if len(sys.modules) != self.modules_seen:
            self._scan_modules()
        if not ran and not self.new:
            return None
        trace = {"owner": self.owner, "ran": ran}
        if self.new:
            trace["review"], self.new = self.new, []
        return trace

    def forget(self, n):
        self.owners.pop(n, None)

    def _review(self, line):
        if line not in self.said and len(self.said) < MAX_REVIEW:
            self.said.add(line)
            self.new.append(line)

    def _scan_modules(self):
        """Look once into each module loaded from the student's copy for SUSPECT names (its functions' and
        classes' code: compiling the file again would double what importing it cost)."""
        self.modules_seen = len(sys.modules)
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if not isinstance(file, str) or not file.startswith(self.prefix) or file in self.scanned:
                continue
            self.scanned.add(file)
            names = _names_in(list(vars(module).values()), file, module.__name__)
            found = sorted({token for name in names for token in SUSPECT if token in name} | (names & SUSPECT_NAMES))
            if found:
                self._review(f"{file[len(self.prefix):]} names {', '.join(found)} (torch's dispatch internals, "
                             "the trace, threads or processes: code that could hide operations from the trace)")


def _names_in(values, file, module, depth=0):
    """The names used by the code of the functions and classes among ``values`` that ``module`` (its ``file``)
    defines."""
    names = set()
    for value in values:
        if isinstance(value, type) and value.__module__ == module and depth < 5:  # its attributes and bases too
            names |= set(vars(value)) | {base.__name__ for base in value.__mro__}
            names |= _names_in(list(vars(value).values()), file, module, depth + 1)
        for code in (getattr(value, "__code__", None), getattr(getattr(value, "__func__", None), "__code__", None)):
            if code is not None and getattr(code, "co_filename", None) == file:
                names |= _names(code)
    return names


def _names(code, depth=0):
    """The names a code object and those nested in it use, and its identifier-like string constants."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, str) and len(const) < 80 and " " not in const:
            names.add(const)
        elif hasattr(const, "co_names") and depth < 50:
            names |= _names(const, depth + 1)
    return names


def _watch_threads_and_processes(started):
    """Note each thread or process started from now on (the trace's modes are per thread, and a child's
    operations are its own): by wrapping the functions that start them, and a hook before every fork. (Not an
    audit hook: a Python call per audited event cost 15% of a forward pass.)"""
    def wrap(start, what):
        def watched(*args, **kwargs):
            started.append(what)
            return start(*args, **kwargs)
        watched.kata_watched = True
        return watched

    import _posixsubprocess

    for owner, name, what in ((_thread, "start_new_thread", "a thread"), (_thread, "start_new", "a thread"),
                              (threading, "_start_new_thread", "a thread"), (os, "posix_spawn", "a process"),
                              (os, "posix_spawnp", "a process"), (os, "system", "a process"), (os, "execv", "a process"),
                              (os, "execve", "a process"), (_posixsubprocess, "fork_exec", "a process")):
        original = getattr(owner, name, None)
        if original is not None and not getattr(original, "kata_watched", False):
            setattr(owner, name, wrap(original, what))
    os.register_at_fork(before=lambda: started.append("a process"))
