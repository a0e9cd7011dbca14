"""The worker template: torch is imported once, every worker is a fork.

Starting a worker costs an ``import torch`` (1.5 s here); a class of 50 would pay it 50 times, and
one grading needs several workers (the hidden tests, the GPU-run check, a re-grade). A template
process (``worker.py --template``, started through the same launcher, so inside the same sandbox)
imports torch and nothing of any student, then forks a worker on request. After its first fork it
also warms up the meta device for the GPU-run check (1.3 s, while that first worker is busy).
The forked worker is a fresh child: its own session and process group, its own protocol socket and
output pipe (passed to the template with SCM_RIGHTS), limits set after the fork. CUDA is never
initialized in the template (the NVML-based availability check does not), so the forks may use it.

Under bubblewrap the template also kills every other process in its pid namespace before each
fork, so nothing one worker left running can touch the next: one worker at a time. Code that kills
its worker's parent kills the template, and that worker stops (see ``_parent_doomed`` in worker.py);
the next fork comes from a new template (one more torch import).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from grader.worker_client import WORKER_PY, Launcher

STARTUP_TIMEOUT = 120.0
CONTROL_TIMEOUT = 30.0


class TemplateError(Exception):
    """The template did not start or stopped answering."""


class WorkerTemplate:
    """One template process and its control channel."""

    def __init__(self, base: Launcher, root: Path, memory_mb: int):
        self.sweep = base.isolation == "bwrap"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [base.python, "-I", "-B", str(WORKER_PY), "--fd", str(theirs.fileno()), "--memory-mb", str(memory_mb),
                "--template", "sweep" if self.sweep else "plain"]
        try:
            self.proc = subprocess.Popen(
                base.command(argv, root, root), cwd=root, env=base.env(root), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                start_new_session=True, close_fds=True,
            )
        finally:
            theirs.close()
        self.ctl = ours
        self.lock = threading.Lock()
        self._ready = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _ask(self, message: dict[str, Any], fds: list[int] = ()) -> dict[str, Any]:
        with self.lock:
            try:
                if not self._ready:
                    self.ctl.settimeout(STARTUP_TIMEOUT)
                    if not self.ctl.recv(65536):
                        raise TemplateError("the worker template exited during startup")
                    self._ready = True
                self.ctl.settimeout(CONTROL_TIMEOUT)
                socket.send_fds(self.ctl, [json.dumps(message).encode()], list(fds))
                data = self.ctl.recv(65536)
            except OSError as err:
                raise TemplateError(f"the worker template stopped answering ({err})") from None
        if not data:
            raise TemplateError("the worker template exited")
        return json.loads(data)

    def spawn(self, copy_dir: Path, scratch: Path, sock: socket.socket) -> _ForkedWorker:
        read_end, write_end = os.pipe()
        try:
            answer = self._ask({"op": "spawn", "copy": str(copy_dir), "scratch": str(scratch)},
                               [sock.fileno(), write_end])
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        pid = int(answer["pid"])
        return _ForkedWorker(self, pid, None if self.sweep else pid, os.fdopen(read_end, "rb"))

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        self.ctl.close()


class _ForkedWorker:
    """What WorkerClient needs of a worker process (``pid``, ``stdout``, ``wait``), for a fork."""

    def __init__(self, template: WorkerTemplate, template_pid: int, host_pid: int | None, stdout: Any):
        self.template = template
        self.template_pid = template_pid  # as the template sees it (namespaced under bubblewrap)
        self.pid = host_pid
        self.stdout = stdout

    def kill_tree(self) -> None:
        if self.template.alive():
            try:
                self.template._ask({"op": "kill", "pid": self.template_pid})
                return
            except TemplateError:
                pass
        if self.pid is not None:  # the template is gone; without a pid namespace we can aim ourselves
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass

    def wait(self, timeout: float | None = None) -> int:
        if not self.template.alive():
            return -signal.SIGKILL  # the template (its parent) is gone, and with it our way to ask
        try:
            rc = self.template._ask({"op": "wait", "pid": self.template_pid, "timeout": timeout or 0})["rc"]
        except TemplateError:  # the template died meanwhile (killed by the code this worker ran?)
            try:
                self.template.proc.wait(timeout=max(timeout or 0, 1.0))
            except subprocess.TimeoutExpired:
                pass
            return -signal.SIGKILL
        if rc is None:
            raise subprocess.TimeoutExpired("forked worker", timeout or 0)
        return rc


class TemplateLauncher(Launcher):
    """Forks every worker from one long-lived template started through ``base`` (see module docstring)."""

    def __init__(self, base: Launcher, memory_mb: int = 2048):
        self.base = base
        self.isolation = base.isolation
        self.memory_mb = memory_mb
        self.root = Path(tempfile.mkdtemp(prefix="kata-template-"))
        self._template: WorkerTemplate | None = None

    def work_root(self) -> Path:
        return self.root

    def start_process(self, copy_dir: Path, scratch: Path, sock: socket.socket, memory_mb: int) -> Any:
        if self._template is None or not self._template.alive():
            if self._template is not None:
                self._template.close()
            self._template = WorkerTemplate(self.base, self.root, self.memory_mb)
        return self._template.spawn(copy_dir, scratch, sock)

    def warm_up(self) -> None:
        """Start the template now, so its torch import overlaps whatever comes next."""
        if self._template is None:
            self._template = WorkerTemplate(self.base, self.root, self.memory_mb)

    def close(self) -> None:
        if self._template is not None:
            self._template.close()
            self._template = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TemplateLauncher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
