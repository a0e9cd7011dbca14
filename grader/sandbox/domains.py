"""Isolation domains, forked from a warm template: one per grading, re-grade or GPU-run check.

Starting a worker costs an ``import torch`` (1.5 s here). The template (``kata_worker``, started
through :class:`~grader.sandbox.modes.Isolation`'s command) imports torch once; each domain is a fork
of it that joins a cgroup of its own where this machine allows one (grader/sandbox/cgroups.py: its
memory bounded in all), enters namespaces of its own, gets the submission's files through a memfd
(the grader never writes into anything a domain can reach) and drops to the student's uid
(``kata_worker/domain.py``). Its clean-up removes its cgroup last. A template that stops answering is killed and replaced; every wait on
it is bounded.
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

from grader.rubric import GROUPS
from grader.sandbox.bundle import MODULE_FILE
from grader.sandbox.cgroups import DomainCgroup, remove_orphans
from grader.sandbox.limits import DOMAIN_HEADROOM_MB
from grader.sandbox.modes import SCRATCH, Isolation, Survivors, reap, wait_gone

STARTUP_TIMEOUT = 120.0
CONTROL_TIMEOUT = 10.0
DISK_MB = 64  # each of /tmp, /dev/shm and scratch in a domain with namespaces of its own


class TemplateError(Exception):
    """The template did not start or stopped answering."""


class WorkerTemplate:
    """One template process and its control channel."""

    def __init__(self, isolation: Isolation):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                isolation.template_command(theirs.fileno()), cwd="/", env=isolation.env(), stdin=subprocess.DEVNULL,
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

    def ask(self, message: dict[str, Any], fds: list[int] = ()) -> dict[str, Any]:
        with self.lock:
            try:
                if not self._ready:
                    self.ctl.settimeout(STARTUP_TIMEOUT)
                    if not self.ctl.recv(65536):
                        raise TemplateError("the worker template exited during startup")
                    self._ready = True
                self.ctl.settimeout(CONTROL_TIMEOUT + float(message.get("timeout", 0)))
                socket.send_fds(self.ctl, [json.dumps(message).encode()], list(fds))
                data = self.ctl.recv(65536)
            except OSError as err:
                raise TemplateError(f"the worker template stopped answering ({err})") from None
        if not data:
            raise TemplateError("the worker template exited")
        try:
            return json.loads(data)
        except ValueError:
            raise TemplateError("the worker template answered garbage") from None

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        self.ctl.close()


class Domain:
    """A running domain as WorkerClient sees it: ``pid`` (a host pid, or None), ``stdout``, ``wait``, ``kill_tree``."""

    def __init__(self, owner: Domains, template: WorkerTemplate, template_pid: int, stdout_fd: int,
                 root: Path | None, cgroup: DomainCgroup | None):
        self.owner = owner
        self.cgroup = cgroup
        self.template = template
        self.template_pid = template_pid  # as the template sees it
        # The host pid (to read CPU time from): the same for a plain process, else looked up in its pid namespace.
        self.pid = _host_pid(template.proc.pid, template_pid) if owner.isolation.mode.pid_namespace else template_pid
        self.stdout_fd = stdout_fd
        self.root = root
        self.returncode: int | None = None

    def kill_tree(self) -> None:
        if self.template.alive():
            try:
                self.template.ask({"op": "kill", "pid": self.template_pid})
            except TemplateError:
                self.owner.replace(self.template)
        if self.pid is not None and not self.template.alive():  # no pid namespace: we can aim ourselves
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if not self.template.alive():
            return -signal.SIGKILL  # the template (its parent) is gone, and the domain with it
        try:
            rc = self.template.ask({"op": "wait", "pid": self.template_pid, "timeout": timeout or 0})["rc"]
        except (TemplateError, KeyError, TypeError):
            self.owner.replace(self.template)
            return -signal.SIGKILL
        if rc is None:
            raise subprocess.TimeoutExpired("domain", timeout or 0)
        self.returncode = rc
        return rc

    def end(self) -> None:
        """Kill the domain, wait for it, and (without a pid namespace) kill what it left and remove its files."""
        self.kill_tree()
        try:
            self.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.owner.clean(self.root, self.cgroup)

    @property
    def oom_fd(self) -> int | None:
        """A descriptor that becomes readable when the kernel stops a process of this domain for its memory."""
        return None if self.cgroup is None else self.cgroup.oom_fd

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of this domain for going over the domain's memory limit."""
        return self.cgroup is not None and self.cgroup.out_of_memory()


def _host_pid(root: int, namespaced: int) -> int | None:
    """The host pid of the process that ``root``'s pid namespace calls ``namespaced`` (via NSpid)."""
    todo, seen = [root], set()
    while todo and len(seen) < 64:
        pid = todo.pop()
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/status") as f:
                nspid = next((line.split()[1:] for line in f if line.startswith("NSpid:")), [])
            if len(nspid) >= 2 and nspid[1] == str(namespaced):
                return pid
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split() if int(c) not in seen)
        except (OSError, ValueError):
            continue
    return None


class Domains:
    """Forks domains from one template at a time; replaces a template that broke."""

    def __init__(self, isolation: Isolation):
        self.isolation = isolation
        self.base: Path | None = None
        if not isolation.mode.namespaces:  # the domains' folders: root-owned, traversable by the student's uid
            self.base = Path(tempfile.mkdtemp(prefix="kata-domains-"))
            self.base.chmod(0o711)
        self._template: WorkerTemplate | None = None
        self._count = 0
        self.survivors: list[str] = []  # clean-ups that failed: no result may be written (check_clean)
        self._cgroups: set[DomainCgroup] = set()  # the domains' cgroups not removed yet
        self.clean(None)  # what a crashed grading process with the same uid may have left
        remove_orphans(isolation.memory)  # and the cgroups of grading processes that no longer run

    def warm_up(self) -> None:
        """Start the template now, so its torch import overlaps whatever comes next."""
        if self._template is None or not self._template.alive():
            self.replace(self._template)

    def replace(self, broken: WorkerTemplate | None) -> None:
        if broken is not None:
            broken.close()
        if self._template is broken:
            self._template = WorkerTemplate(self.isolation)

    def spawn(self, bundle_fd: int, sock: socket.socket, memory_mb: int) -> Domain:
        """A new domain serving ``sock`` on the files in ``bundle_fd`` (a memfd the caller closes), with
        ``memory_mb`` of address space beyond what the template already maps (torch), and that much and
        DOMAIN_HEADROOM_MB for all its processes together where a cgroup holds it."""
        self.warm_up()
        template = self._template
        self._count += 1
        root = None
        if self.base is not None:  # reachable by this domain's uid alone (other jobs share the machine)
            root = self.base / f"d{self._count}"
            root.mkdir(mode=0o700)
            if self.isolation.uid is not None:
                os.chown(root, 0, self.isolation.uid)
                root.chmod(0o710)
        # What the worker needs, and nothing it must know by heart: the mode's flags, the layout, the
        # bundle's rule (kata_worker/domain.py).
        spec = {**self.isolation.domain_spec(root), "groups": list(GROUPS), "module_file": MODULE_FILE.pattern,
                "memory_mb": memory_mb, "disk_mb": DISK_MB, "nproc": self.isolation.nproc}
        cgroup = self._cgroup(memory_mb)
        read_end, write_end = os.pipe()
        try:
            answer = template.ask({"op": "spawn", "spec": spec},
                                  [sock.fileno(), write_end, bundle_fd, *(cgroup.procs_fds if cgroup else [])])
            pid = int(answer["pid"])
        except (TemplateError, KeyError, TypeError, ValueError) as err:
            os.close(read_end)
            self.replace(template)
            self._remove_cgroup(cgroup)
            raise TemplateError(f"could not start a domain: {err}") from None
        finally:
            os.close(write_end)
            if cgroup is not None:
                cgroup.close_fds()  # the domain has its own copies, which it closes once it joined
        return Domain(self, template, pid, read_end, root, cgroup)

    def _cgroup(self, memory_mb: int) -> DomainCgroup | None:
        """A new domain's cgroup, where this machine allows one (grader/sandbox/cgroups.py)."""
        if not self.isolation.memory.parents:
            return None
        try:
            cgroup = DomainCgroup(self.isolation.memory, memory_mb + DOMAIN_HEADROOM_MB, self.isolation.nproc)
        except OSError as err:
            raise TemplateError(f"could not make the domain's cgroup: {err}") from None
        self._cgroups.add(cgroup)
        return cgroup

    def _remove_cgroup(self, cgroup: DomainCgroup | None) -> None:
        """Remove a domain's cgroup (after its clean-up: it kills what is left in it); one that stays is a survivor."""
        if cgroup is None:
            return
        if not cgroup.remove():
            self.survivors.append(f"the cgroup {cgroup.folders[0]} of a domain could not be removed")
        self._cgroups.discard(cgroup)

    def clean(self, root: Path | None, cgroup: DomainCgroup | None = None) -> None:
        """Make sure nothing of the domain runs on: without a pid namespace, kill the student's uid's
        processes and remove its files (as that uid); then wait until none is left, not even a zombie
        (the kernel's teardown, or the template's reaping). Then remove the domain's own folder and its
        cgroup (``None``: every cgroup left). A process that outlives it is noted in ``survivors``."""
        mode = self.isolation.mode
        try:
            if mode.shares_the_machine:
                reap(self.isolation.uid, [root / SCRATCH] if root else [])
            if mode.own_uid:  # the next domain shares the uid (and its process limit)
                wait_gone(self.isolation.uid)
        except Survivors as err:
            self.survivors.append(str(err))
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        for left in [cgroup] if cgroup is not None else list(self._cgroups):
            self._remove_cgroup(left)

    def check_clean(self) -> None:
        """Raise Survivors if any domain so far left a process behind (then no result may be written)."""
        if self.survivors:
            raise Survivors(self.survivors[0])

    def close(self) -> None:
        if self._template is not None:
            self._template.close()
            self._template = None
        self.clean(None)
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> Domains:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
