"""How student code is isolated here: the mode, the template's command line, and the clean-up.

Three modes (``--sandbox bwrap|uid|none``; ``isolated`` takes the best of bwrap and uid or refuses,
``auto`` the same or none with a warning; the report's ``isolation`` names the mode used):

* ``bwrap``: the template runs as root inside bubblewrap (no network, its own pid namespace, a
  read-only system in which this repository, ``solutions/`` and ``tests/`` included, does not exist).
  Each domain then gets namespaces of its own and a uid of its own (kata_worker/domain.py).
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
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader.rubric import REPO_ROOT

WORKER_LIB = Path(__file__).resolve().parent  # holds the kata_worker package
WORKER_PACKAGE = WORKER_LIB / "kata_worker"
SANDBOX_LIB = "/kata/lib"  # where bubblewrap shows the kata_worker package
# A uid range no real account uses; each grading process gets its own (base + its pid).
UID_BASE = 0x7E000000
SECRETS = ("solutions", "tests", ".git")  # what student code must not read (relative to the repository)
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives", "/etc/ld.so.cache",
               "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/ssl")
TEMPLATE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")
# What --sandbox accepts: the three modes, plus "isolated" (the best of bwrap and uid, or refuse) and
# "auto" (the same, else none with a warning); see choose_isolation.
SANDBOX_CHOICES = ("auto", "isolated", "bwrap", "uid", "none")
NO_SANDBOX_WARNING = "graded without isolation: the student's code ran as a plain process of this user"


class SandboxUnavailable(Exception):
    """The isolation asked for cannot be had here; one line says why (exit 2 at the command line)."""


@dataclass(frozen=True)
class Isolation:
    """The chosen mode, and what the report must say about it."""

    mode: str  # "bwrap" | "uid" | "none"
    warnings: tuple[str, ...] = ()
    uid: int | None = field(default=None)

    def template_command(self, fd: int) -> list[str]:
        python = sys.executable
        if self.mode != "bwrap":
            return [python, "-I", "-B", "-c", _boot(str(WORKER_LIB)), "--fd", str(fd)]
        return [*_bwrap_argv(shutil.which("bwrap") or "bwrap"), "--", python, "-I", "-B", "-c", _boot(SANDBOX_LIB),
                "--fd", str(fd)]

    def tmp_binds(self) -> list[str]:
        """What the sandbox shows under /tmp (a Python in a checkout there): each domain binds it again
        in its own fresh /tmp."""
        if self.mode != "bwrap":
            return []
        return [p for p in _python_paths() if p.startswith("/tmp/")]

    def env(self) -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                # torch.cuda.is_available() without initializing CUDA (fork-safe, no driver context)
                "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


def _boot(lib: str) -> str:
    return f"import sys; sys.path.insert(0, {lib!r}); from kata_worker.main import main; main()"


def _python_paths() -> list[str]:
    paths = sysconfig.get_paths()
    found = {sys.prefix, sys.base_prefix, sys.executable, os.path.realpath(sys.executable)}
    found.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    existing = sorted({os.path.normpath(p) for p in found if os.path.exists(p)}, key=len)
    # A path inside an already-bound directory is visible through it (and binding a symlink onto itself fails).
    return [p for i, p in enumerate(existing) if not any(p.startswith(q + os.sep) for q in existing[:i])]


def _bwrap_argv(bwrap: str) -> list[str]:
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for cap in TEMPLATE_CAPS:
        argv += ["--cap-add", cap]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for dev in sorted(Path("/dev").glob("nvidia*")):  # the GPU-run check on CUDA needs the devices
        argv += ["--dev-bind", str(dev), str(dev)]
    if any(Path("/dev").glob("nvidia*")):
        argv += ["--ro-bind-try", "/sys", "/sys", "--ro-bind-try", "/proc/driver/nvidia", "/proc/driver/nvidia"]
    binds = [(p, p) for p in SYSTEM_DIRS] + [(p, p) for p in _python_paths()]
    binds.append((str(WORKER_PACKAGE), f"{SANDBOX_LIB}/kata_worker"))
    made: set[str] = set()
    for _src, dest in binds:  # bubblewrap makes missing parents 0700: make them 0755 first
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p != "/" and p not in made and not any(p == d or p.startswith(d + "/") for d, _ in binds):
                argv += ["--perms", "0755", "--dir", p]
                made.add(p)
    for src, dest in binds:
        argv += ["--ro-bind-try" if src in SYSTEM_DIRS else "--ro-bind", src, dest]
    for path in ("/kata", "/kata/copy", "/kata/scratch", "/kata/tmp"):
        argv += ["--perms", "0755", "--dir", path]
    return argv + ["--chdir", "/"]


@cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can start the template's sandbox here; else why not, in a few words."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    if os.geteuid() != 0:
        return "bubblewrap's sandbox needs root here (it gives each domain a uid of its own)"
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN",
            "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap cannot run: {err}"
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        return f"bwrap cannot create namespaces here ({reason})"
    return None


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
    for_class = for_class or requested == "isolated"
    if requested == "none":
        return Isolation("none", (f"{NO_SANDBOX_WARNING} (--sandbox none)",))
    if requested in ("auto", "isolated", "bwrap") and bwrap_problem() is None:
        return Isolation("bwrap", (), student_uid())
    if requested == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {bwrap_problem()}")
    problem = uid_problem()
    if problem is None:
        warnings = protect_secrets() if protect else [
            f"grading in uid mode makes {path} unreadable to other users (chmod o-rwx)" for path in exposed_secrets()]
        why = "" if requested == "uid" else f" (bubblewrap: {bwrap_problem()})"
        return Isolation("uid", (f"isolated by uid only{why}: no network or pid namespace, "
                                 "IP sockets refused, the uid's processes and files removed after each domain",
                                 *warnings), student_uid())
    if requested == "uid":
        raise SandboxUnavailable(f"--sandbox uid: {problem}")
    reasons = f"{bwrap_problem()}; {problem}"
    if for_class:
        raise SandboxUnavailable(f"no isolation is possible here ({reasons}): grading other people's code needs "
                                 "it; pass --sandbox none to grade without it anyway")
    return Isolation("none", (f"{NO_SANDBOX_WARNING} ({reasons})",))


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
    """Make the reference, hidden tests and history unreadable to other users (uid mode only)."""
    notes = []
    for path in exposed_secrets():
        path.chmod(path.stat().st_mode & ~0o007)
        notes.append(f"made {path} unreadable to other users (chmod o-rwx) so the student's uid cannot read it")
    return notes


def processes_of(uid: int) -> dict[int, str]:
    """{pid: state letter} of the processes whose real, effective or saved uid is ``uid`` (zombies: "Z")."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except (OSError, ValueError):
            continue
        if str(uid) in fields.get("Uid", "").split()[:3]:
            found[int(name)] = fields.get("State", "").strip()[:1]
    return found


def running_as(uid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose real, effective or saved uid is ``uid``."""
    return [pid for pid, state in processes_of(uid).items() if state != "Z"]


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
# SysV IPC tables: (file under /proc/sysvipc, the column of the id, the columns of the owner and creator).
_SYSV_TABLES = (("shm", 1, (7, 9)), ("msg", 1, (7, 9)), ("sem", 1, (4, 6)))


def reap(uid: int, scratch_dirs: list[Path] = ()) -> None:
    """Kill every process of ``uid``, remove its files from the shared places (whatever their modes)
    and from ``scratch_dirs``, and its SysV IPC objects, all as ``uid`` itself (it can only touch what
    that uid owns): a fresh Python imports :func:`_reap_as_uid` as root, drops to ``uid``, then runs it.
    Survivors if a process, a file or an IPC object of the uid is still there afterwards."""
    tops = [*SHARED_TOPS, *map(str, scratch_dirs)]
    code = (f"import os, sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from grader.sandbox.modes import _reap_as_uid; "
            f"uid = int(sys.argv[1]); os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid); "
            f"_reap_as_uid(uid, sys.argv[2:])")
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(uid), *tops], capture_output=True,
                              text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        raise Survivors(f"the clean-up of uid {uid} did not finish") from None
    if proc.returncode != 0 or proc.stdout.strip() != "0 0":
        left = proc.stdout.strip().split()
        what = (f"{left[0]} processes and {left[1]} files or IPC objects" if len(left) == 2
                else proc.stderr.strip()[-200:] or f"exit {proc.returncode}")
        raise Survivors(f"the student's uid {uid} outlived its clean-up: {what} left")


def _reap_as_uid(uid: int, tops: list[str]) -> None:
    """Run as ``uid``: ``kill(-1)`` reaches every process of that uid and no other; then remove what it
    owns under ``tops`` and in the SysV IPC tables. Prints how many of its processes, and of its
    files and IPC objects, are left. Never raises on what the student made: whatever cannot be
    removed is counted."""
    deadline = time.monotonic() + 5
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        left = [pid for pid in running_as(uid) if pid != os.getpid()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    kept = sum(_remove_owned(os.path.join(top, entry), uid)
               for top in tops for entry in _entries(top))
    kept += _remove_sysv_ipc(uid)
    print(len(left), kept)


def _entries(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _remove_owned(path: str, uid: int) -> int:
    """Remove ``path`` if ``uid`` owns it (a folder with everything in it that the uid owns, after giving
    the owner the right to: a 0077 or 0555 folder of its own no longer stops it); the count of what
    the uid owns and could not remove."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    if st.st_uid != uid:
        return 0
    if stat.S_ISDIR(st.st_mode):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        kept = sum(_remove_owned(os.path.join(path, entry), uid) for entry in _entries(path))
        try:
            os.rmdir(path)
        except OSError:
            return kept + 1
        return kept
    try:
        os.unlink(path)
    except OSError:
        return 1
    return 0


def _remove_sysv_ipc(uid: int) -> int:
    """Remove the SysV shared memory segments, message queues and semaphore sets that ``uid`` owns or
    created (the owner may, whatever their modes); the count of those left."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ipc_rmid = 0
    removers = {"shm": lambda i: libc.shmctl(i, ipc_rmid, None), "msg": lambda i: libc.msgctl(i, ipc_rmid, None),
                "sem": lambda i: libc.semctl(i, 0, ipc_rmid)}
    kept = 0
    for table, id_column, owner_columns in _SYSV_TABLES:
        try:
            with open(f"/proc/sysvipc/{table}") as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            try:
                mine = any(int(row[c]) == uid for c in owner_columns)
                if mine and removers[table](int(row[id_column])) != 0:
                    kept += 1
            except (IndexError, ValueError):
                continue
    return kept
