"""The template's bubblewrap sandbox (the ``bwrap`` mode): its command line, and whether it can start here.

The template runs as root inside it, with the capabilities it needs to build each domain's namespaces
and drop to the student's uid (kata_worker/domain.py): no network, its own pid namespace, a read-only
system in which this repository (``solutions/`` and ``tests/`` included) does not exist; only
Python, the worker package and the folders each domain mounts its own tmpfs on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from functools import cache
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/sbin", "/etc/alternatives", "/etc/ld.so.cache",
               "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/ssl")
TEMPLATE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")


def python_paths() -> list[str]:
    """The folders and files this Python runs from (its prefixes, standard library and site-packages)."""
    paths = sysconfig.get_paths()
    found = {sys.prefix, sys.base_prefix, sys.executable, os.path.realpath(sys.executable)}
    found.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    existing = sorted({os.path.normpath(p) for p in found if os.path.exists(p)}, key=len)
    # A path inside an already-bound directory is visible through it (and binding a symlink onto itself fails).
    return [p for i, p in enumerate(existing) if not any(p.startswith(q + os.sep) for q in existing[:i])]


def bwrap_argv(shown: dict[str, str], folders: list[str]) -> list[str]:
    """bubblewrap's command line up to its ``--``: each file or folder of ``shown`` (the worker package,
    the students' tools it imports) shown read-only where it maps to, ``folders`` made empty (0755) for the
    domains to mount on."""
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for cap in TEMPLATE_CAPS:
        argv += ["--cap-add", cap]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for dev in sorted(Path("/dev").glob("nvidia*")):  # the GPU-run check on CUDA needs the devices
        argv += ["--dev-bind", str(dev), str(dev)]
    if any(Path("/dev").glob("nvidia*")):
        argv += ["--ro-bind-try", "/sys", "/sys", "--ro-bind-try", "/proc/driver/nvidia", "/proc/driver/nvidia"]
    binds = [(p, p) for p in SYSTEM_DIRS] + [(p, p) for p in python_paths()]
    binds += [(str(src), dest) for src, dest in shown.items()]
    made: set[str] = set()
    for _src, dest in binds:  # bubblewrap makes missing parents 0700: make them 0755 first
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p != "/" and p not in made and not any(p == d or p.startswith(d + "/") for d, _ in binds):
                argv += ["--perms", "0755", "--dir", p]
                made.add(p)
    for src, dest in binds:
        argv += ["--ro-bind-try" if src in SYSTEM_DIRS else "--ro-bind", src, dest]
    for path in folders:
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
