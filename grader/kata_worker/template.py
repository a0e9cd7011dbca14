"""The template: torch imported once; every domain is a fork of it.

Control messages are JSON on a SOCK_SEQPACKET socket from the grader (never reachable from a
domain: each fork closes it first). ``spawn`` carries the domain's spec and three descriptors (its
protocol socket, the write end of its output pipe, the memfd holding the submission's files) and
answers the fork's pid; ``kill`` and ``wait`` act on such a pid. The template is not dumpable and
runs as root in the isolating modes, while student code runs under another uid: it can neither
read the template's memory nor signal it.
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

PR_SET_DUMPABLE = 4


def serve(ctl_fd: int, serve_worker, warm_up_meta) -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    ctl = socket.socket(fileno=ctl_fd)
    ctl.sendall(json.dumps({"ready": {"pid": os.getpid()}}).encode())
    meta_ready = False
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 3)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        op = msg.get("op")
        if op == "spawn" and len(fds) == 3:
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
        if op == "spawn" and not meta_ready:  # the first fork is already at work; later ones get this
            warm_up_meta()
            meta_ready = True


def _spawn(spec: dict, fds: list, serve_worker) -> int:
    sock_fd, out_fd, bundle_fd = fds
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            domain.run(spec, sock_fd, out_fd, bundle_fd, serve_worker)
        except BaseException:
            traceback.print_exc()
            code = 71
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _wait(pid: int, timeout: float):
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
