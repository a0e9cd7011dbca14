"""A domain's memory bounded in all: a cgroup of its own where this machine lets us make one.

Rlimits bound each process (``RLIMIT_AS``) and the uid's process count (``RLIMIT_NPROC``), never
their total: a domain that forks may hold the product. Where a cgroup can be made here (cgroup v2
with the memory and pids controllers, or cgroup v1's memory hierarchy, with pids where mounted), the
grader (root, on the host side of every wall) makes one per domain under its own cgroup, writes its
limits (``memory.max``, no swap, ``pids.max``; v1: ``memory.limit_in_bytes`` and
``memory.memsw.limit_in_bytes``), and closes it to other users (0700: no student reads another
domain's files). The domain joins it as the first step of its life (kata_worker/domain.py), through
``cgroup.procs`` descriptors this module opened and the spawn passed along: bubblewrap hides /sys and
the student's uid could not write there anyway. After the domain's clean-up, its cgroup is emptied
(every process left is killed) and removed: nothing of it outlives the domain.

Where none can be made (a container's read-only cgroupfs, not root), :data:`RLIMITS` says so and the
process-count bound of grader/sandbox/limits.py holds instead.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PREFIX = "kata-"  # a domain's cgroup is named by cgroup_name, under the grading process's own cgroup
V2_LIMITS = {"memory.max": "{memory}", "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "{nproc}"}
V1_LIMITS = {"memory.limit_in_bytes": "{memory}", "memory.memsw.limit_in_bytes": "{memory}", "pids.max": "{nproc}"}


@dataclass(frozen=True)
class MemoryBound:
    """How a domain's total memory is bounded here: ``kind`` ("cgroup v2", "cgroup v1" or "rlimits"),
    the folders under which each domain's cgroups are made (one per hierarchy), and why no cgroup."""

    kind: str
    parents: tuple[Path, ...] = ()
    why: str = ""

    def describe(self, memory_mb: int, nproc: int, per_process: str) -> str:
        """The one line the reports and ``grader isolation`` give: which bound holds, with its numbers."""
        if self.parents:
            return (f"memory: each domain in a cgroup of its own ({self.kind}), at most {memory_mb} MB "
                    f"and {nproc} processes and threads in all")
        return (f"memory: no cgroup ({self.why}): each domain at most {nproc} processes and threads, each "
                f"within {per_process}")


RLIMITS = MemoryBound("rlimits", why="not probed")


def _own_cgroups() -> dict[str, str]:
    """``{controller: path}`` of this process's cgroups ("" the v2 one), from /proc/self/cgroup."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _id, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _mounts() -> dict[str, Path]:
    """Where this process's own cgroups lie on disk: ``{"": v2 folder, "memory": v1 folder, "pids": ...}``."""
    own, found = _own_cgroups(), {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        fields, tail = fields.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup") or "rw" not in fields[5].split(","):
            continue
        keys = [""] if tail[0] == "cgroup2" else [k for k in ("memory", "pids") if k in tail[2].split(",")]
        for key in keys:
            root, path = fields[3], own.get(key)
            if path is not None and (path + "/").startswith(root.rstrip("/") + "/"):
                found.setdefault(key, Path(fields[4] + path[len(root.rstrip("/")):]))
    return found


def _try_parent(kind: str, parents: tuple[Path, ...], limits: dict[str, str]) -> MemoryBound:
    """``kind`` if a cgroup with ``limits`` can be made under each of ``parents``, else RLIMITS and why."""
    probe = PREFIX + f"probe-{os.getpid()}"
    try:
        for parent in parents:
            (parent / probe).mkdir()
            try:
                _write_limits(parent / probe, limits, 64 * 2**20, 64, memory=parent == parents[0])
            finally:
                (parent / probe).rmdir()
    except OSError as err:
        return MemoryBound("rlimits", why=f"{kind} at {parents[0]}: {err.strerror or err}")
    return MemoryBound(kind, parents)


@cache
def find_bound() -> MemoryBound:
    """The best bound this machine allows (cgroup v2, v1, else rlimits), found once by making a probe cgroup."""
    mounts = _mounts()
    if "" in mounts:
        bound = _v2_bound(mounts[""])
        if bound.parents or "memory" not in mounts:
            return bound
    if "memory" in mounts:
        return _try_parent("cgroup v1", tuple(mounts[k] for k in ("memory", "pids") if k in mounts), V1_LIMITS)
    return MemoryBound("rlimits", why="no cgroup v2 memory controller or v1 memory hierarchy is mounted writable")


def _v2_bound(own: Path) -> MemoryBound:
    """Domains' cgroups under our own v2 cgroup, else beside it (v2 enables a controller for a cgroup's
    children only while the cgroup itself holds no process: a systemd scope's or a container's does)."""
    why = ""
    for parent in (own, own.parent):
        if not (parent / "cgroup.controllers").exists():
            continue
        try:
            for controller in ("memory", "pids"):
                if controller not in (parent / "cgroup.subtree_control").read_text().split():
                    (parent / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError as err:
            why = why or f"cgroup v2 at {parent}: no {controller} controller for its children ({err.strerror or err})"
            continue
        bound = _try_parent("cgroup v2", (parent,), V2_LIMITS)
        if bound.parents:
            return bound
        why = why or bound.why
    return MemoryBound("rlimits", why=why)


def _write_limits(folder: Path, limits: dict[str, str], size: int, nproc: int, memory: bool) -> None:
    """Write the limits that this hierarchy's folder has (``memory``: it must have the memory limit)."""
    for name, value in limits.items():
        target = folder / name
        if not target.exists():
            if memory and name in ("memory.max", "memory.limit_in_bytes"):
                raise OSError(0, f"no {name}")
            continue
        target.write_text(value.format(memory=size, nproc=nproc))


def cgroup_name(pid: int, n: int | str) -> str:
    """The name of the ``n``-th domain cgroup of the grading process ``pid`` of our pid namespace: a sweep
    of what a killed grading left (:func:`remove_orphans`) then never touches another namespace's."""
    return f"{PREFIX}{os.stat('/proc/self/ns/pid').st_ino}-{pid}-{n}"


class DomainCgroup:
    """One domain's cgroup (a folder in each hierarchy), made with its limits; ``procs_fds`` are what
    the domain writes itself into (passed at spawn, closed here by :meth:`close_fds` once passed)."""

    _count = 0

    def __init__(self, bound: MemoryBound, memory_mb: int, nproc: int):
        DomainCgroup._count += 1
        self.bound, self.memory_mb = bound, memory_mb
        self.folders = [parent / cgroup_name(os.getpid(), DomainCgroup._count) for parent in bound.parents]
        self.procs_fds: list[int] = []
        # Readable when the kernel kills a process of the domain for its memory (v1's eventfd: it kills one
        # process at a time, a second apart; v2's memory.oom.group kills them all at once, so none is needed).
        self.oom_fd: int | None = None
        limits = V2_LIMITS if bound.kind == "cgroup v2" else V1_LIMITS
        try:
            for folder in self.folders:
                folder.mkdir(mode=0o700)
                folder.chmod(0o700)  # (cgroupfs ignores mkdir's mode)
                _write_limits(folder, limits, memory_mb * 2**20, nproc, memory=folder == self.folders[0])
                self.procs_fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
            if bound.kind == "cgroup v1":
                self.oom_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
                control = os.open(self.folders[0] / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
                try:
                    (self.folders[0] / "cgroup.event_control").write_text(f"{self.oom_fd} {control}")
                finally:
                    os.close(control)
        except OSError:
            self.remove()
            raise

    def close_fds(self) -> None:
        fds, self.procs_fds = self.procs_fds, []
        for fd in fds:
            os.close(fd)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the domain for going over its memory limit (or, v1's
        eventfd, is about to: it signals the OOM before the kill is counted)."""
        if self.oom_fd is not None and select.select([self.oom_fd], [], [], 0)[0]:
            return True
        events = self.folders[0] / ("memory.events" if self.bound.kind == "cgroup v2" else "memory.oom_control")
        try:
            counts = dict(line.split() for line in events.read_text().splitlines() if len(line.split()) == 2)
            return int(counts.get("oom_kill", 0)) > 0
        except (OSError, ValueError):
            return False

    def remove(self) -> bool:
        """Kill whatever the cgroup still holds, then remove it; False if it could not be removed."""
        self.close_fds()
        if self.oom_fd is not None:
            os.close(self.oom_fd)
            self.oom_fd = None
        gone = True
        for folder in self.folders:
            gone = remove_cgroup(folder) and gone
        return gone


def remove_cgroup(folder: Path, timeout: float = 10.0) -> bool:
    """Kill every process of ``folder`` (a cgroup) until it is empty, then remove it; False if it stays."""
    deadline, pause = time.monotonic() + timeout, 0.001
    while folder.exists():
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if not pids:
                folder.rmdir()
                return True
        except FileNotFoundError:
            return True
        except OSError:  # EBUSY: a dying process is still being accounted
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
    return True


def remove_orphans(bound: MemoryBound) -> None:
    """Remove the domains' cgroups that a grading process which no longer runs left (killed before its clean-up)."""
    ours = cgroup_name(0, 0).rsplit("-", 2)[0] + "-"  # kata-<our pid namespace>-
    for parent in bound.parents:
        for folder in parent.glob(f"{ours}*-*"):
            owner = folder.name[len(ours):].split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                remove_cgroup(folder)
