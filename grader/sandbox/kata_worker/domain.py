"""One isolation domain: where one grading (or one re-grade) of one student runs.

The template forks, and the fork calls :func:`run`. What it builds is what the grader's spawn spec
says (grader/sandbox/modes.py: ``Mode``, ``Isolation.domain_spec``; grader/sandbox/domains.py): whether
the domain gets namespaces of its own, the student's uid (or none), the seccomp filter's flags (or
none), the domain's folders, and the group list and module-name rule its bundle is checked against.
This package knows no mode by name and keeps no copy of the layout or the groups.

With ``namespaces`` (the ``bwrap`` mode: the template runs as root inside bubblewrap, with
CAP_SYS_ADMIN/SETUID/SETGID):

    keeper   the fork: joins the domain's cgroups (where the grader made them), unshares mount, pid, network and IPC namespaces, forks the init, waits for it
    init     pid 1 of the new pid namespace, root, dies with the keeper (PR_SET_PDEATHSIG): mounts a
             fresh /proc, a size-capped /tmp, /dev/shm and scratch, and a tmpfs for the private
             copy which it fills from the grader's bundle and remounts read-only; forks the worker
    worker   drops to the student's uid: no capabilities, no_new_privs, the seccomp filter, rlimits;
             serves the grader

When the init exits (its worker ended, or the keeper was killed) the kernel kills every process
left in the namespace, daemons included. Nothing of the domain outlives it; nothing it writes is
seen by the next one.

Without (the ``uid`` mode: root without user namespaces, as in Gradescope's and most CI containers):
the fork writes the copy into a fresh root-owned folder (read-only to the student), makes a scratch
folder owned by the student's uid, then drops to that uid (a uid of this job alone), installs the
seccomp filter (kata_worker/seccomp.py; there it also refuses IP sockets and SysV IPC), and serves.
The grader kills every process of that uid and removes its files after the grading
(grader/sandbox/modes.py: ``reap``). Without a uid and a filter (the ``none`` mode) that is a plain process.
"""

import ctypes
import os
import re
import resource
import signal

import torch

from kata_worker import codec, seccomp

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x20000000, 0x40000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 8192, 16384, 1 << 18)
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class DomainError(Exception):
    """The domain could not be set up (the worker never serves; the grader sees it die)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise DomainError(f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def join_cgroups(fds) -> None:
    """Move this process into the domain's cgroups (``cgroup.procs`` files the grader opened and made;
    "0" is the writer itself) before anything else: every process the domain starts is then in them,
    its memory counted in all. The descriptors are closed at once (the student's uid could use them)."""
    try:
        for fd in fds:
            os.write(fd, b"0")
    except OSError as err:
        raise DomainError(f"could not join the domain's cgroup: {os.strerror(err.errno)}") from None
    finally:
        for fd in fds:
            os.close(fd)


def read_bundle(fd: int, groups, module_file) -> dict:
    """The private copy's files from the grader's memfd: ``{"<group>/<name>.py": bytes}``, each of
    a folder of ``groups`` and named as ``module_file`` (a pattern, the whole name) says; else none."""
    with os.fdopen(fd, "rb") as f:
        files = codec.decode(f.read(codec.MAX_FRAME + 1))
    if type(files) is not dict:
        raise DomainError("malformed bundle")
    for rel, data in files.items():
        group, _, name = str(rel).partition("/")
        if group not in groups or not module_file.fullmatch(name) or type(data) is not bytes:
            raise DomainError(f"malformed bundle entry {rel!r}")
    return files


def write_copy(copy_dir: str, files: dict, groups, group=None) -> None:
    """Write the copy as root, a folder for each of ``groups``: nothing in it the student's uid may
    change. With ``group`` (the student's gid, where no mount namespace hides the copy) only that
    group may read it."""
    dir_mode, file_mode = (0o550, 0o440) if group is not None else (0o555, 0o444)
    paths = [copy_dir]
    for group_dir in groups:
        os.mkdir(os.path.join(copy_dir, group_dir), 0o700)
        paths.append(os.path.join(copy_dir, group_dir))
    for rel, data in files.items():
        path = os.path.join(copy_dir, rel)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, file_mode)
        if group is not None:
            os.chown(path, 0, group)
    for path in reversed(paths):
        os.chmod(path, dir_mode)
        if group is not None:
            os.chown(path, 0, group)


def close_other_fds(keep) -> None:
    """Close every inherited descriptor but stdio and ``keep`` (the template's control socket,
    other domains' sockets and bundles must not reach student code)."""
    last = 2
    for fd in sorted(keep) + [resource.getrlimit(resource.RLIMIT_NOFILE)[0]]:
        if fd > last + 1:
            os.closerange(last + 1, fd)
        last = max(last, fd)


def set_limit(which, value) -> None:
    try:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass


def _vm_size() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def drop_privileges(uid: int) -> None:
    """Become ``uid`` for good: no groups, no capabilities (a setuid from root clears them), and
    no way back (no_new_privs). Verified, not assumed."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    caps = [int(status[k].strip(), 16) for k in ("CapPrm", "CapEff", "CapAmb") if k in status]
    if os.getuid() != uid or os.geteuid() != uid or any(caps):
        raise DomainError("could not drop privileges")


def deny_syscalls(flags: dict) -> None:
    """The seccomp filter of kata_worker/seccomp.py: an allowlist, Docker's default profile (no
    io_uring, no namespaces, no mount, bpf or keyrings), less ptrace and process_vm_*; a refused call
    fails with EPERM. ``flags``: ``seccomp.install``'s (a domain that shares the host's network and
    IPC namespaces makes AF_UNIX sockets only, and has no SysV IPC or POSIX message queues). x86-64
    only (other ABIs are refused outright; on another machine, no filter)."""
    try:
        seccomp.install(**flags)
    except OSError as err:
        raise DomainError(f"seccomp: {err}") from None


def _serve_confined(spec: dict, sock_fd: int, serve) -> None:
    """Under the student's uid (if any): install the filter (if any), work in the scratch folder
    within the worker's limits, and serve."""
    if spec["seccomp"] is not None:
        deny_syscalls(spec["seccomp"])
    scratch = spec["scratch"]
    os.chdir(scratch)
    os.environ.update(HOME=scratch, TMPDIR=scratch)

    # CUDA maps far more address space than any limit we could set: with CUDA, RLIMIT_AS stays off
    # (the NVML-based check does not initialize CUDA in the template).
    if not torch.cuda.is_available():
        set_limit(resource.RLIMIT_AS, _vm_size() + spec["memory_mb"] * 2**20)
    set_limit(resource.RLIMIT_NPROC, spec["nproc"])
    # The worker's parent runs as the student's uid only without one of its own: its code could kill it.
    serve(sock_fd, spec["copy"], spec["groups"], spec["uid"] is None)


def run(spec: dict, sock_fd: int, out_fd: int, bundle_fd: int, serve, cgroup_fds=()) -> None:
    """The fork's life: join its cgroups, build the domain ``spec`` describes, then ``serve(sock_fd,
    copy_dir, groups, watch_parent)`` (watch_parent: whether the worker's parent runs as the student's uid)."""
    join_cgroups(cgroup_fds)
    os.setsid()
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    close_other_fds({sock_fd, bundle_fd})
    files = read_bundle(bundle_fd, spec["groups"], re.compile(spec["module_file"]))
    if spec["namespaces"]:
        _run_namespaced(spec, sock_fd, files, serve)
    else:
        _run_plain(spec, sock_fd, files, serve)


def _run_plain(spec: dict, sock_fd: int, files: dict, serve) -> None:
    """In the fresh folder the grader made for this domain alone (root-owned, 0711)."""
    copy_dir, scratch, uid = spec["copy"], spec["scratch"], spec["uid"]
    os.mkdir(copy_dir, 0o700)
    write_copy(copy_dir, files, spec["groups"], group=uid)
    os.mkdir(scratch, 0o700)
    if uid is not None:
        os.chown(scratch, uid, uid)
        drop_privileges(uid)
    _serve_confined(spec, sock_fd, serve)


def _run_namespaced(spec: dict, sock_fd: int, files: dict, serve) -> None:
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    init = os.fork()
    if init:  # the keeper: the template waits for (and kills) this process; the init dies with it
        os.close(sock_fd)
        _, status = os.waitpid(init, 0)
        os._exit(_exit_code(status))
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    if not _keeper_alive():
        os._exit(1)
    uid, mb = spec["uid"], spec["disk_mb"]
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _fresh_tmp(spec["tmp"], mb, spec["tmp_binds"])
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"size={mb}m,mode=1777")
    copy_dir, scratch = spec["copy"], spec["scratch"]  # empty folders the template's sandbox shows
    _mount("tmpfs", copy_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=32m,mode=0755")
    write_copy(copy_dir, files, spec["groups"])
    _mount(None, copy_dir, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={mb}m,mode=0700,uid={uid},gid={uid}")
    worker = os.fork()
    if worker:  # pid 1: reap whatever the student's code leaves, until the worker itself ends
        os.close(sock_fd)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == worker:
                os._exit(_exit_code(status))
    drop_privileges(uid)
    _serve_confined(spec, sock_fd, serve)


def _fresh_tmp(staging: str, mb: int, keep: list) -> None:
    """A fresh, capped /tmp for this domain (built at ``staging``, then moved), in which the read-only
    folders the sandbox shows under /tmp (a Python installed in a checkout under /tmp, as in CI) are
    bound again."""
    _mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, f"size={mb}m,mode=1777")
    for path in keep:
        if not path.startswith("/tmp/") or ".." in path.split("/"):
            raise DomainError(f"not a folder under /tmp: {path!r}")
        target = staging + path[len("/tmp"):]
        if os.path.isdir(path):
            os.makedirs(target, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
            open(target, "a").close()
        _mount(path, target, None, MS_BIND | MS_REC)
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount(staging, "/tmp", None, MS_MOVE)


def _keeper_alive() -> bool:
    """PR_SET_PDEATHSIG came after the fork: if the keeper died in between, nobody would kill us."""
    try:
        with open("/proc/self/status") as f:  # still the template's /proc here: PPid is the keeper's
            return not any(line.split()[1:] == ["1"] for line in f if line.startswith("PPid:"))
    except OSError:
        return False


def _exit_code(status: int) -> int:
    """The worker's wait status, passed up as an exit code (a signal N as 128 + N, like a shell)."""
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
