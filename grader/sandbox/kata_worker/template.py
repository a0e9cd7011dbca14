"""The template: torch imported once; every domain is a fork of it.

Control messages are JSON on a SOCK_SEQPACKET socket from the grader (never reachable from a
domain: each fork closes it first). ``spawn`` carries the domain's spec and three descriptors (its
protocol socket, the write end of its output pipe, the memfd holding the submission's files) and
answers the fork's pid (after them come the ``cgroup.procs`` of the domain's cgroups, if any, which
the fork joins first: grader/sandbox/cgroups.py); ``kill`` and ``wait`` act on such a pid. The template is not dumpable and runs as root in the isolating modes, while student
code runs under another uid: it can neither read the template's memory nor signal it.

The template is a child subreaper and reaps every child as soon as it ends (SIGCHLD): without a pid
namespace (``uid`` mode) the processes a domain leaves behind would otherwise become pid 1's
zombies when the clean-up kills them, and zombies count against the next domain's process limit
(the same uid) until pid 1 gets round to them, in a container perhaps never.
"""

import ctypes
import json
import os
import signal
import socket
import sys
import time
import traceback

from kata_worker import domain

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
MAX_FDS = 5  # a spawn's: socket, output pipe, bundle, and a cgroup.procs per hierarchy (v1: memory, pids)
_exited: dict[int, int] = {}  # domain pid -> exit status, reaped but not yet asked for by ``wait``
_domains: set[int] = set()  # the domains started and not yet waited for


def serve(ctl_fd: int, serve_worker) -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGCHLD, lambda *_: _reap_children())
    ctl = socket.socket(fileno=ctl_fd)
    ctl.sendall(json.dumps({"ready": {"pid": os.getpid()}}).encode())
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, MAX_FDS)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        op = msg.get("op")
        if op == "spawn" and len(fds) >= 3:
            answer = {"pid": _spawn(msg["spec"], fds, serve_worker)}
        elif op == "kill":
            _kill(int(msg["pid"]))
            answer = {}
        elif op == "wait":
            answer = {"rc": _wait(int(msg["pid"]), float(msg["timeout"]))}
        else:
            for fd in fds:
                os.close(fd)
            answer = {"error": f"unknown template operation {op!r}"}
        ctl.sendall(json.dumps(answer).encode())


def _spawn(spec: dict, fds: list, serve_worker) -> int:
    sock_fd, out_fd, bundle_fd, *cgroup_fds = fds
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the domain waits for its own children
        code = 0
        try:
            domain.run(spec, sock_fd, out_fd, bundle_fd, serve_worker, cgroup_fds)
        except BaseException:
            traceback.print_exc()
            code = 71
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    _domains.add(pid)
    return pid


def _reap_children() -> None:
    """Reap every child that has ended: keep a domain's status for ``wait``, drop an orphan's."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in _domains:
            _exited[pid] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _wait(pid: int, timeout: float):
    """The domain's exit status as subprocess reports it (-N for signal N), or None if still running."""
    deadline, pause = time.monotonic() + timeout, 0.0005
    while True:
        _reap_children()
        if pid in _exited or pid not in _domains:
            _domains.discard(pid)
            return _exited.pop(pid, 0)
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)  # a killed fork is gone within milliseconds: poll fast, then back off
        pause = min(2 * pause, 0.01)
