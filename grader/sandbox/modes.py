"""How student code is isolated here: the modes, the one chosen, the template's command line, the clean-up.

Three modes (``--sandbox bwrap|uid|none``; ``isolated`` takes the best of bwrap and uid or refuses,
``auto`` the same or none with a warning; the report's ``isolation`` names the mode used). Each is a
:class:`Mode`, whose attributes are everything the grader and the worker do differently in it: the
worker never sees a mode's name, only the flags, layout and group list of the spawn spec
(grader/sandbox/domains.py). A new mode is one more :class:`Mode` in :data:`MODES`.

* ``bwrap``: the template runs as root inside bubblewrap (no network, its own pid namespace, a
  read-only system in which this repository, ``solutions/`` and ``tests/`` included, does not exist;
  grader/sandbox/bubblewrap.py). Each domain then gets namespaces of its own and a uid of its own
  (kata_worker/domain.py).
* ``uid``: root without user namespaces (Gradescope's and most CI containers: bubblewrap cannot
  start). Each domain drops to a uid of this grading process alone, IP sockets are refused by a
  seccomp filter, the reference, hidden tests and ``.git`` are made unreadable to other users
  (``chmod o-rwx``, said in the report), and after every domain :func:`reap` kills every process of
  that uid and removes its files; no result is written while one survives.
* ``none``: a plain process of the grader's own user. A student grading their own work may use it
  (``score`` falls back to it with a warning); ``score-all`` and the Gradescope autograder refuse
  to unless it is asked for by name.

What a mode cannot hold is said in docs and the report's warnings, not hidden: ``uid`` shares the
machine's ``/tmp`` (emptied of the uid's files after each domain) and has no disk quota beyond the
64 MB file-size limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from grader.rubric import EXERCISES_DIR, REPO_ROOT, WORKER_TOOLS
from grader.sandbox.bubblewrap import bwrap_argv, bwrap_problem, python_paths
from grader.sandbox.cgroups import RLIMITS, MemoryBound, find_bound
from grader.sandbox.limits import DOMAIN_HEADROOM_MB, NPROC, NPROC_WITHOUT_CGROUP
from grader.sandbox.reaper import UID_BASE, processes_of

WORKER_LIB = Path(__file__).resolve().parent  # holds the kata_worker package
REAPER = WORKER_LIB / "reaper.py"  # the uid-mode clean-up, started once per domain
WORKER_PACKAGE = WORKER_LIB / "kata_worker"
# The sandbox's file layout. A domain's folders lie under its root: SANDBOX_ROOT inside bubblewrap
# (made empty there; the domain mounts a tmpfs on each), else a fresh folder of the grader's (the
# domain makes them). COPY: the private copy of the submission, read-only; SCRATCH: the student's
# working folder, HOME and TMPDIR; STAGING: where a domain with namespaces builds its fresh /tmp.
SANDBOX_ROOT = "/kata"
SANDBOX_LIB = f"{SANDBOX_ROOT}/lib"  # where bubblewrap shows the kata_worker package
SANDBOX_TOOLS = f"{SANDBOX_LIB}/kata_tools"  # and the students' tools the worker imports (grader/rubric.py)
COPY, SCRATCH, STAGING = "copy", "scratch", "tmp"
SECRETS = ("solutions", "tests", ".git")  # what student code must not read (relative to the repository)
NO_SANDBOX_WARNING = "graded without isolation: the student's code ran as a plain process of this user"


def domain_folders(root: str | Path) -> dict[str, str]:
    """A domain's folders under ``root`` (see the layout above), as the spawn spec names them."""
    return {"copy": f"{root}/{COPY}", "scratch": f"{root}/{SCRATCH}", "tmp": f"{root}/{STAGING}"}


class SandboxUnavailable(Exception):
    """The isolation asked for cannot be had here; one line says why (exit 2 at the command line)."""


@dataclass(frozen=True)
class Filter:
    """What a mode's seccomp filter allows beyond Docker's profile less ours (kata_worker/seccomp.py),
    as ``seccomp.install`` takes it: a domain that shares the host's network or IPC namespace may not
    make IP sockets or SysV IPC objects and POSIX message queues."""

    ip_sockets: bool  # sockets of other families than AF_UNIX
    ipc: bool  # SysV IPC and POSIX message queues


@dataclass(frozen=True)
class Mode:
    """An isolation mode: what the grader and the worker do differently in it, said once."""

    name: str  # --sandbox's word for it, and what the report's ``isolation`` says
    about: str  # how --sandbox's help describes it
    label: str  # how a warning names it when it cannot run here ("bubblewrap: ...")
    problem: Callable[[], str | None]  # None when it can run here; else why not, in a few words
    isolates: bool  # the student's code runs apart from this user: other people's work may be graded in it
    # The command line the template starts inside (grader/sandbox/bubblewrap.py's), up to the template's own,
    # from what it shows the template ({host path: where}) and the folders it makes; None: a plain process.
    launcher: Callable[[dict[str, str], list[str]], list[str]] | None
    namespaces: bool  # each domain has mount, pid, network and IPC namespaces of its own, and a fresh /tmp
    own_uid: bool  # each domain drops to the student's uid, a uid of this grading process alone
    seccomp: Filter | None  # the domains' seccomp filter; None: none
    warning: str = ""  # the report's warning in this mode; {why}: asked by name, or why no better mode runs

    @property
    def shares_the_machine(self) -> bool:
        """The student's uid sees this machine's files, processes and IPC (no namespaces of its own):
        what other users may read it may read, and what it leaves is found by its uid and removed
        (:func:`reap`) after each domain."""
        return self.own_uid and not self.namespaces

    @property
    def pid_namespace(self) -> bool:
        """The template runs in a pid namespace of its own, a launcher's: a domain's host pid is looked up."""
        return self.launcher is not None


# (A mode's problem is looked up when it is asked for, so that a test may replace bwrap_problem or uid_problem.)
BWRAP = Mode("bwrap", "bwrap", "bubblewrap", lambda: bwrap_problem(), isolates=True,
             launcher=lambda shown, folders: [*bwrap_argv(shown, folders), "--"],
             namespaces=True, own_uid=True, seccomp=Filter(ip_sockets=True, ipc=True))
UID = Mode("uid", "uid (root without user namespaces)", "uid", lambda: uid_problem(), isolates=True,
           launcher=None, namespaces=False, own_uid=True, seccomp=Filter(ip_sockets=False, ipc=False),
           warning="isolated by uid only{why}: no network or pid namespace, IP sockets refused, the uid's "
                   "processes and files removed after each domain")
NONE = Mode("none", "none (a plain process)", "none", lambda: None, isolates=False, launcher=None,
            namespaces=False, own_uid=False, seccomp=None, warning=NO_SANDBOX_WARNING + "{why}")
# The modes, the best first: ``isolated`` and ``auto`` take the first isolating one that runs here.
MODES = {mode.name: mode for mode in (BWRAP, UID, NONE)}
# What --sandbox accepts, and its help.
SANDBOX_CHOICES = ("auto", "isolated", *MODES)
SANDBOX_HELP = ("how to isolate the student's code: "
                + ", ".join(m.about for m in MODES.values() if m.isolates)
                + ", isolated (the best of those, or exit 2), auto (as isolated, else none with a warning), "
                + ", ".join(m.about for m in MODES.values() if not m.isolates))


@dataclass(frozen=True)
class Isolation:
    """The chosen mode, and what the report must say about it."""

    mode: Mode
    warnings: tuple[str, ...] = ()
    uid: int | None = None  # the student's uid, in a mode with one
    memory: MemoryBound = RLIMITS  # how a domain's total memory is bounded here (grader/sandbox/cgroups.py)

    @property
    def nproc(self) -> int:
        """Processes and threads a domain may run: fewer where no cgroup bounds their total memory
        (grader/sandbox/limits.py; without a uid of its own, the limit counts this user's processes)."""
        return NPROC if self.memory.parents or not self.mode.own_uid else NPROC_WITHOUT_CGROUP

    def memory_line(self, memory_mb: int) -> str:
        """Which bound holds a domain's memory here, in one line for the report and ``grader isolation``."""
        if self.memory.parents:
            return self.memory.describe(memory_mb + DOMAIN_HEADROOM_MB, self.nproc, "")
        return self.memory.describe(memory_mb, self.nproc, f"the template's address space + {memory_mb} MB (none "
                                    "with CUDA)" + ("" if self.mode.own_uid else "; no total bound: none isolates nothing"))

    def template_command(self, fd: int) -> list[str]:
        if self.mode.launcher is None:
            return [sys.executable, "-I", "-B", "-c", _boot(str(WORKER_LIB), str(EXERCISES_DIR)), "--fd", str(fd)]
        boot = [sys.executable, "-I", "-B", "-c", _boot(SANDBOX_LIB, SANDBOX_TOOLS), "--fd", str(fd)]
        folders = [SANDBOX_ROOT, *domain_folders(SANDBOX_ROOT).values()]
        shown = {str(WORKER_PACKAGE): f"{SANDBOX_LIB}/kata_worker",
                 **{str(EXERCISES_DIR / f"{name}.py"): f"{SANDBOX_TOOLS}/{name}.py" for name in WORKER_TOOLS}}
        return [*self.mode.launcher(shown, folders), *boot]

    def domain_spec(self, root: Path | None) -> dict:
        """The mode's part of a spawn spec (kata_worker/domain.py): the flags the worker acts on, the
        student's uid and the domain's folders (under ``root``, the folder made for it, where the
        template shows no SANDBOX_ROOT)."""
        return {"namespaces": self.mode.namespaces, "uid": self.uid,
                "seccomp": None if self.mode.seccomp is None else asdict(self.mode.seccomp),
                **domain_folders(SANDBOX_ROOT if root is None else root), "tmp_binds": self._tmp_binds()}

    def _tmp_binds(self) -> list[str]:
        """What the template shows under /tmp (a Python in a checkout there): a domain with a fresh /tmp
        of its own binds it again there."""
        if not self.mode.namespaces:
            return []
        return [p for p in python_paths() if p.startswith("/tmp/")]

    def env(self) -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                # torch.cuda.is_available() without initializing CUDA (fork-safe, no driver context)
                "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


def _boot(lib: str, tools: str) -> str:
    """The template's program: the worker package from ``lib``, the students' tools from the folder ``tools``
    (loaded by their file names only: nothing else of that folder becomes importable), then its main."""
    return (f"import sys; sys.path.insert(0, {lib!r}); from kata_worker import tools; "
            f"tools.load({tools!r}, {WORKER_TOOLS!r}); from kata_worker.main import main; main()")


@cache
def uid_problem() -> str | None:
    """None when domains can run under a uid of their own here: root, and a Python that such a uid can
    run (its worker forks from a template that imported it as root, but then loads more of it as that
    uid). Else what to do, in one line."""
    if os.geteuid() != 0:
        return "dropping to another uid needs root"
    try:
        probe = subprocess.run([sys.executable, "-I", "-S", "-c", "import os, sys; print('ok')"], capture_output=True, text=True,
                               user=student_uid(), group=student_uid(), extra_groups=[], timeout=30,
                               env={"PATH": "/usr/bin:/bin"})
        reached = probe.stdout.strip() == "ok"
    except OSError:  # the uid cannot even start this Python
        reached = False
    if reached:
        return None
    closed = _closed_folders([Path(sys.executable), Path(os.path.realpath(sys.executable)), Path(sys.base_prefix)])
    where = (f"other users cannot enter {closed[0]} (run chmod o+x on it"
             + (f" and on {', '.join(map(str, closed[1:4]))}" if len(closed) > 1 else "") + ")") if closed else (
        f"the Python at {sys.executable} is not readable by other users")
    return f"uid isolation runs student code as another user, who must be able to run this Python: {where}"


def _closed_folders(paths: list[Path]) -> list[Path]:
    """The folders on the way to ``paths`` that other users cannot enter (no o+x), nearest the root first."""
    closed: list[Path] = []
    for path in paths:
        for folder in [*reversed(path.parents), *([path] if path.is_dir() else [])]:
            try:
                if not folder.stat().st_mode & 0o001 and folder not in closed:
                    closed.append(folder)
            except OSError:
                continue
    return closed


def student_uid() -> int:
    """The uid every domain of this grading process runs under: no other process on the machine has it."""
    return UID_BASE + os.getpid()


def choose_isolation(requested: str, *, for_class: bool = False, protect: bool = True) -> Isolation:
    """The mode for ``--sandbox`` (see the module docstring); SandboxUnavailable when it cannot be had.

    ``for_class``: grading other people's work (score-all, Gradescope), where ``auto`` must not fall
    back to no isolation at all (``isolated`` never does). ``protect=False`` (``grader isolation``, a
    question): change nothing on disk, only say what grading in this mode would change.
    """
    if requested not in SANDBOX_CHOICES:
        raise ValueError(f"not an isolation mode: {requested!r} (one of {', '.join(SANDBOX_CHOICES)})")
    for_class = for_class or requested == "isolated"
    if requested in MODES:  # that mode or none at all
        mode = MODES[requested]
        problem = mode.problem()
        if problem is not None:
            raise SandboxUnavailable(f"--sandbox {requested}: {problem}")
        return _chosen(mode, "" if mode.isolates else f" (--sandbox {requested})", protect)
    passed_over: list[tuple[Mode, str]] = []  # the better modes that cannot run here, and why
    for mode in (m for m in MODES.values() if m.isolates):
        problem = mode.problem()
        if problem is None:
            why = "; ".join(f"{m.label}: {p}" for m, p in passed_over)
            return _chosen(mode, f" ({why})" if why else "", protect)
        passed_over.append((mode, problem))
    reasons = "; ".join(problem for _, problem in passed_over)
    if for_class:
        raise SandboxUnavailable(f"no isolation is possible here ({reasons}): grading other people's code needs "
                                 "it; pass --sandbox none to grade without it anyway")
    return _chosen(NONE, f" ({reasons})", protect)


def _chosen(mode: Mode, why: str, protect: bool) -> Isolation:
    """``mode``, its warning (``why`` in it), and where its uid shares this machine the secrets hidden
    from it (or, with ``protect=False``, what hiding them would change)."""
    warnings = [mode.warning.format(why=why)] if mode.warning else []
    if mode.shares_the_machine:
        warnings += protect_secrets() if protect else [
            f"grading in {mode.name} mode makes {path} unreadable to other users (chmod o-rwx)"
            for path in exposed_secrets()]
    return Isolation(mode, tuple(warnings), student_uid() if mode.own_uid else None, find_bound())


def exposed_secrets() -> list[Path]:
    """The reference, hidden tests and history, where other users may still read them."""
    exposed = []
    for name in SECRETS:
        try:
            if (REPO_ROOT / name).stat().st_mode & 0o007:
                exposed.append(REPO_ROOT / name)
        except OSError:
            continue
    return exposed


def protect_secrets() -> list[str]:
    """Make the reference, hidden tests and history unreadable to other users (where a student's uid
    shares the machine)."""
    notes = []
    for path in exposed_secrets():
        path.chmod(path.stat().st_mode & ~0o007)
        notes.append(f"made {path} unreadable to other users (chmod o-rwx) so the student's uid cannot read it")
    return notes


def wait_gone(uid: int, timeout: float = 10.0) -> None:
    """Wait until no process of ``uid`` is left, zombies included: they count against the next
    domain's process limit until reaped (a pid namespace's teardown takes the kernel a moment; without
    one the template reaps them). Survivors if one is still there after ``timeout``."""
    deadline, pause = time.monotonic() + timeout, 0.001
    while processes_of(uid):
        if time.monotonic() > deadline:
            raise Survivors(f"processes of the student's uid {uid} outlived their domain (or were never reaped)")
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


class Survivors(Exception):
    """Processes of the student's uid survived the clean-up: no result may be written."""


# The world-writable places a uid without a namespace of its own can leave files in (POSIX message
# queues live in the mqueue filesystem where one is mounted; the worker's seccomp filter refuses
# mq_open and SysV IPC in uid mode, so that nothing can be made where it cannot be listed).
SHARED_TOPS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm", "/dev/mqueue")


def reap(uid: int, scratch_dirs: list[Path] = ()) -> None:
    """Kill every process of ``uid``, remove its files from the shared places (whatever their modes)
    and from ``scratch_dirs``, and its SysV IPC objects, all as ``uid`` itself (it can only touch what
    that uid owns): grader/sandbox/reaper.py, started as root, drops to ``uid`` and does it.
    Survivors if a process, a file or an IPC object of the uid is still there afterwards."""
    tops = [*SHARED_TOPS, *map(str, scratch_dirs)]
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", str(REAPER), str(uid), *tops], capture_output=True,
                              text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        raise Survivors(f"the clean-up of uid {uid} did not finish") from None
    if proc.returncode != 0 or proc.stdout.strip() != "0 0":
        left = proc.stdout.strip().split()
        what = (f"{left[0]} processes and {left[1]} files or IPC objects" if len(left) == 2
                else proc.stderr.strip()[-200:] or f"exit {proc.returncode}")
        raise Survivors(f"the student's uid {uid} outlived its clean-up: {what} left")
