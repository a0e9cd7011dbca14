"""The worker's sandbox: bubblewrap, when it is there and can start.

A separate process is not enough against a student who reads the grader's files (code that walks
the file system finds ``solutions/``) or signals its parent. Under bubblewrap the worker gets:

* its own network namespace (no network: even the host's loopback is out of reach),
* its own pid namespace (it cannot see or signal the grader; its parent is bubblewrap's init),
* a read-only view of the system directories and of the Python it runs on, in which the
  instructor's repository (``solutions/``, ``tests/``, ``grader/`` but ``worker.py`` and
  ``wire_codec.py``) and the rest of the instructor's home do not exist,
* write access to nothing but its private copy of the submission and a scratch directory.

``choose_launcher("auto")`` uses bubblewrap when it starts here and falls back to a plain process
with a warning; ``"bwrap"`` refuses to fall back (SandboxUnavailable, exit 2 at the command line).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from grader.worker_client import Launcher

# System directories the interpreter and its libraries need, bound read-only where they exist.
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives", "/etc/ld.so.cache",
               "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/ssl")
NO_SANDBOX_WARNING = "graded without a sandbox: the student's code ran as a plain process of this user"


class SandboxUnavailable(Exception):
    """``--sandbox bwrap`` was asked for and bubblewrap cannot start here; one line says why."""


class BwrapLauncher(Launcher):
    """Starts the worker inside bubblewrap (see the module docstring)."""

    isolation = "bwrap"

    def __init__(self, bwrap: str):
        self.bwrap = bwrap

    def command(self, worker_argv: list[str], copy_dir: Path, scratch: Path) -> list[str]:
        worker_py = Path(worker_argv[worker_argv.index("-B") + 1])
        paths = self.visible_paths(worker_py, copy_dir, scratch)
        argv = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for path in SYSTEM_DIRS:
            argv += ["--ro-bind-try", path, path]
        for path in paths["read_only"]:
            argv += ["--ro-bind", path, path]
        for path in paths["writable"]:
            argv += ["--bind", path, path]
        argv += ["--chdir", str(scratch), "--"]
        return argv + super().command(worker_argv, copy_dir, scratch)

    def visible_paths(self, worker_py: Path, copy_dir: Path, scratch: Path) -> dict[str, list[str]]:
        paths = super().visible_paths(worker_py, copy_dir, scratch)
        existing = sorted({os.path.normpath(p) for p in paths["read_only"] if os.path.exists(p)}, key=len)
        # A path inside an already-bound directory is visible through it (and binding a symlink
        # onto itself there fails).
        outermost = [p for i, p in enumerate(existing) if not any(p.startswith(q + os.sep) for q in existing[:i])]
        return {"read_only": outermost, "writable": paths["writable"]}


class ProcessLauncher(Launcher):
    """No sandbox: the worker is a plain process of the grader's user."""


@cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can start a sandbox here; else why not, in a few words."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        proc = subprocess.run([bwrap, "--unshare-all", "--ro-bind", "/", "/", "--", "/bin/true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap cannot run: {err}"
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        return f"bwrap cannot create namespaces here ({reason})"
    return None


def choose_launcher(mode: str) -> tuple[Launcher, list[str]]:
    """The launcher for ``--sandbox auto|bwrap|none`` and the warnings the report must carry."""
    if mode == "none":
        return ProcessLauncher(), [NO_SANDBOX_WARNING + " (--sandbox none)"]
    problem = bwrap_problem()
    if problem is None:
        return BwrapLauncher(shutil.which("bwrap")), []
    if mode == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {problem}")
    return ProcessLauncher(), [f"{NO_SANDBOX_WARNING} ({problem})"]
