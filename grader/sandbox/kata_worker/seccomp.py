"""The worker's seccomp filter: Docker's default profile for x86-64, and this project's additions.

An allowlist, not a denylist: a system call is allowed only if Docker's default profile allows it to
an unprivileged container (no CAP_SYS_ADMIN, CAP_SYS_PTRACE, ...). Every other call fails with EPERM,
Docker's default action, so a kernel interface added later (as io_uring was: its IORING_OP_SOCKET and
IORING_OP_CONNECT open and connect sockets without calling socket(2) or connect(2)) is refused until
someone decides otherwise. Docker refuses io_uring_setup/enter/register since 2023; so do we.

The anchor: Docker's default seccomp profile, github.com/moby/profiles, ``seccomp/default.json`` at
commit 3c28324314729dbade8287e868eef6338c42807a (tag seccomp/v0.2.3, 2026-05-06; the file Docker
Engine embeds, formerly moby/moby's ``profiles/seccomp/default.json``). What we took from it
(grader/tests/test_seccomp.py keeps the profile's own names and checks this module against them):

* ``DOCKER_X86_64``: its unconditional "names" rule, its rule for kernels >= 4.8 (ptrace,
  process_vm_readv, process_vm_writev) and its ``amd64`` rules (arch_prctl, modify_ldt), less the
  names that are no x86-64 system call (chown32, socketcall, ...);
* its rules on arguments, in :func:`program`: clone only without namespace flags (``CLONE_NS_FLAGS``,
  Docker's mask), clone3 fails with ENOSYS (so that glibc falls back to clone, whose flags a filter
  can see), personality only with ``PERSONALITY_VALUES``, socket for every family but AF_ALG and
  AF_VSOCK;
* nothing of its rules for capabilities the worker does not have (mount, umount2, unshare, setns,
  bpf, perf_event_open, clone3, kcmp, pidfd_getfd, ...: refused, as Docker refuses them).

Our own deltas, on top (``PROJECT_DENIED``, ``SHARED_IPC``): ptrace, process_vm_readv and
process_vm_writev are refused (Docker allows them from kernel 4.8; here processes of one uid must
not read each other's memory; kcmp, pidfd_getfd and process_madvise stay refused as in Docker); with
``ipc=False`` (the ``uid`` mode: no IPC namespace of its own, so a SysV queue, semaphore or segment or
a POSIX message queue would outlive the domain and be seen by the next student) the SysV IPC calls
and mq_open/mq_unlink are refused; with ``ip_sockets=False`` (the ``uid`` mode: no network namespace
either) socket() makes AF_UNIX sockets only (socketpair is AF_UNIX anyway). Docker's profile also
allows the 32-bit x86 and x32 system calls of an x86-64 process; we refuse both ABIs outright.

System-call numbers: the kernel's ``arch/x86/entry/syscalls/syscall_64.tbl`` (torvalds/linux; 0-450
as its uapi ``asm/unistd_64.h`` of v6.1 has them, uretprobe 335 and 451-469 from the table through
v6.17); ``SYSCALLS`` lists every x86-64 call, allowed or not, so that the tests can tell a name that
is no x86-64 call from a typo. On another machine than x86-64 no filter is
installed (:func:`install` returns; as before this module existed).

The worker package runs alone in the sandbox: the standard library only, nothing of ``grader``.
"""

import ctypes
import platform
import struct

PROFILE = "github.com/moby/profiles seccomp/default.json @ 3c28324314729dbade8287e868eef6338c42807a (seccomp/v0.2.3)"

# arch/x86/entry/syscalls/syscall_64.tbl: every x86-64 system call through Linux 6.17 ("common" and "64"
# entries; the x32 ABI's own 512-547 are left out: that ABI is refused whole), in the kernel's order:
# 0-335 (read ... uretprobe), then 424-469 (pidfd_send_signal ... file_setattr).
SYSCALLS = {name: nr for nr, name in enumerate("""
    read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction rt_sigprocmask
    rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield mremap msync mincore madvise
    shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm setitimer getpid sendfile socket connect accept
    sendto recvfrom sendmsg recvmsg shutdown bind listen getsockname getpeername socketpair setsockopt
    getsockopt clone fork vfork execve exit wait4 kill uname semget semop semctl shmdt msgget msgsnd msgrcv
    msgctl fcntl flock fsync fdatasync truncate ftruncate getdents getcwd chdir fchdir rename mkdir rmdir creat
    link unlink symlink readlink chmod fchmod chown fchown lchown umask gettimeofday getrlimit getrusage sysinfo
    times ptrace getuid syslog getgid setuid setgid geteuid getegid setpgid getppid getpgrp setsid setreuid
    setregid getgroups setgroups setresuid getresuid setresgid getresgid getpgid setfsuid setfsgid getsid capget
    capset rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigsuspend sigaltstack utime mknod uselib
    personality ustat statfs fstatfs sysfs getpriority setpriority sched_setparam sched_getparam
    sched_setscheduler sched_getscheduler sched_get_priority_max sched_get_priority_min sched_rr_get_interval
    mlock munlock mlockall munlockall vhangup modify_ldt pivot_root _sysctl prctl arch_prctl adjtimex setrlimit
    chroot sync acct settimeofday mount umount2 swapon swapoff reboot sethostname setdomainname iopl ioperm
    create_module init_module delete_module get_kernel_syms query_module quotactl nfsservctl getpmsg putpmsg
    afs_syscall tuxcall security gettid readahead setxattr lsetxattr fsetxattr getxattr lgetxattr fgetxattr
    listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr tkill time futex sched_setaffinity
    sched_getaffinity set_thread_area io_setup io_destroy io_getevents io_submit io_cancel get_thread_area
    lookup_dcookie epoll_create epoll_ctl_old epoll_wait_old remap_file_pages getdents64 set_tid_address
    restart_syscall semtimedop fadvise64 timer_create timer_settime timer_gettime timer_getoverrun timer_delete
    clock_settime clock_gettime clock_getres clock_nanosleep exit_group epoll_wait epoll_ctl tgkill utimes
    vserver mbind set_mempolicy get_mempolicy mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify
    mq_getsetattr kexec_load waitid add_key request_key keyctl ioprio_set ioprio_get inotify_init
    inotify_add_watch inotify_rm_watch migrate_pages openat mkdirat mknodat fchownat futimesat newfstatat
    unlinkat renameat linkat symlinkat readlinkat fchmodat faccessat pselect6 ppoll unshare set_robust_list
    get_robust_list splice tee sync_file_range vmsplice move_pages utimensat epoll_pwait signalfd timerfd_create
    eventfd fallocate timerfd_settime timerfd_gettime accept4 signalfd4 eventfd2 epoll_create1 dup3 pipe2
    inotify_init1 preadv pwritev rt_tgsigqueueinfo perf_event_open recvmmsg fanotify_init fanotify_mark
    prlimit64 name_to_handle_at open_by_handle_at clock_adjtime syncfs sendmmsg setns getcpu process_vm_readv
    process_vm_writev kcmp finit_module sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create
    kexec_file_load bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2 pkey_mprotect
    pkey_alloc pkey_free statx io_pgetevents rseq uretprobe
""".split())}
SYSCALLS.update({name: nr for nr, name in enumerate("""
    pidfd_send_signal io_uring_setup io_uring_enter io_uring_register open_tree move_mount fsopen fsconfig
    fsmount fspick pidfd_open clone3 close_range openat2 pidfd_getfd faccessat2 process_madvise epoll_pwait2
    mount_setattr quotactl_fd landlock_create_ruleset landlock_add_rule landlock_restrict_self memfd_secret
    process_mrelease futex_waitv set_mempolicy_home_node cachestat fchmodat2 map_shadow_stack futex_wake
    futex_wait futex_requeue statmount listmount lsm_get_self_attr lsm_set_self_attr lsm_list_modules mseal
    setxattrat getxattrat listxattrat removexattrat open_tree_attr file_getattr file_setattr
""".split(), start=424)})

# Docker's default profile, on x86-64, for a container without added capabilities: the calls it allows
# whatever their arguments (in the kernel's order). Its argument rules are in program().
DOCKER_X86_64 = (
    "read", "write", "open", "close", "stat", "fstat", "lstat", "poll", "lseek", "mmap", "mprotect", "munmap",
    "brk", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "ioctl", "pread64", "pwrite64", "readv", "writev",
    "access", "pipe", "select", "sched_yield", "mremap", "msync", "mincore", "madvise", "shmget", "shmat",
    "shmctl", "dup", "dup2", "pause", "nanosleep", "getitimer", "alarm", "setitimer", "getpid", "sendfile",
    "connect", "accept", "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "bind", "listen",
    "getsockname", "getpeername", "socketpair", "setsockopt", "getsockopt", "fork", "vfork", "execve", "exit",
    "wait4", "kill", "uname", "semget", "semop", "semctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
    "fcntl", "flock", "fsync", "fdatasync", "truncate", "ftruncate", "getdents", "getcwd", "chdir", "fchdir",
    "rename", "mkdir", "rmdir", "creat", "link", "unlink", "symlink", "readlink", "chmod", "fchmod", "chown",
    "fchown", "lchown", "umask", "gettimeofday", "getrlimit", "getrusage", "sysinfo", "times", "ptrace",
    "getuid", "getgid", "setuid", "setgid", "geteuid", "getegid", "setpgid", "getppid", "getpgrp", "setsid",
    "setreuid", "setregid", "getgroups", "setgroups", "setresuid", "getresuid", "setresgid", "getresgid",
    "getpgid", "setfsuid", "setfsgid", "getsid", "capget", "capset", "rt_sigpending", "rt_sigtimedwait",
    "rt_sigqueueinfo", "rt_sigsuspend", "sigaltstack", "utime", "mknod", "statfs", "fstatfs", "getpriority",
    "setpriority", "sched_setparam", "sched_getparam", "sched_setscheduler", "sched_getscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "mlock", "munlock",
    "mlockall", "munlockall", "modify_ldt", "prctl", "arch_prctl", "adjtimex", "setrlimit", "sync", "gettid",
    "readahead", "setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr", "fgetxattr", "listxattr",
    "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr", "tkill", "time", "futex",
    "sched_setaffinity", "sched_getaffinity", "set_thread_area", "io_setup", "io_destroy", "io_getevents",
    "io_submit", "io_cancel", "get_thread_area", "epoll_create", "epoll_ctl_old", "epoll_wait_old",
    "remap_file_pages", "getdents64", "set_tid_address", "restart_syscall", "semtimedop", "fadvise64",
    "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete", "clock_gettime",
    "clock_getres", "clock_nanosleep", "exit_group", "epoll_wait", "epoll_ctl", "tgkill", "utimes", "mq_open",
    "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "waitid", "ioprio_set",
    "ioprio_get", "inotify_init", "inotify_add_watch", "inotify_rm_watch", "openat", "mkdirat", "mknodat",
    "fchownat", "futimesat", "newfstatat", "unlinkat", "renameat", "linkat", "symlinkat", "readlinkat",
    "fchmodat", "faccessat", "pselect6", "ppoll", "set_robust_list", "get_robust_list", "splice", "tee",
    "sync_file_range", "vmsplice", "utimensat", "epoll_pwait", "signalfd", "timerfd_create", "eventfd",
    "fallocate", "timerfd_settime", "timerfd_gettime", "accept4", "signalfd4", "eventfd2", "epoll_create1",
    "dup3", "pipe2", "inotify_init1", "preadv", "pwritev", "rt_tgsigqueueinfo", "recvmmsg", "fanotify_mark",
    "prlimit64", "name_to_handle_at", "clock_adjtime", "syncfs", "sendmmsg", "getcpu", "process_vm_readv",
    "process_vm_writev", "sched_setattr", "sched_getattr", "renameat2", "seccomp", "getrandom", "memfd_create",
    "execveat", "membarrier", "mlock2", "copy_file_range", "preadv2", "pwritev2", "pkey_mprotect",
    "pkey_alloc", "pkey_free", "statx", "io_pgetevents", "rseq", "uretprobe", "pidfd_send_signal",
    "pidfd_open", "close_range", "openat2", "faccessat2", "epoll_pwait2", "landlock_create_ruleset",
    "landlock_add_rule", "landlock_restrict_self", "memfd_secret", "process_mrelease", "futex_waitv",
    "cachestat", "fchmodat2", "map_shadow_stack", "futex_wake", "futex_wait", "futex_requeue", "statmount",
    "listmount", "mseal", "setxattrat", "getxattrat", "listxattrat", "removexattrat",
)

# This project's deltas (module docstring): refused in every mode, and refused where the domain shares
# the host's IPC namespace (ipc=False).
PROJECT_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev")
SHARED_IPC = ("shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
              "msgrcv", "msgctl", "mq_open", "mq_unlink")

# Docker's rules on arguments (the low 32 bits of the first one: all the kernel reads of these).
CLONE_NS_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
PERSONALITY_VALUES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, PER_LINUX32, UNAME26, both; query
AF_UNIX, AF_ALG, AF_VSOCK = 1, 38, 40  # Docker refuses AF_ALG and AF_VSOCK sockets
CONDITIONAL = ("clone", "clone3", "personality", "socket")

EPERM, ENOSYS = 1, 38
AUDIT_ARCH_X86_64 = 0xC000003E
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD, JA, JEQ, JGE, JSET, RET = 0x20, 0x05, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JA/JEQ/JGE/JSET|K, BPF_RET|K
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (ARG0: the low half of args[0], little-endian)
PR_SET_NO_NEW_PRIVS, NR_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 38, 317, 1, 1
MAX_INSNS = 4096  # BPF_MAXINSNS


def allowed(ip_sockets: bool, ipc: bool) -> frozenset:
    """The names allowed whatever their arguments (Docker's, less ours): everything else but
    CONDITIONAL fails with EPERM."""
    names = set(DOCKER_X86_64) - set(PROJECT_DENIED)
    if not ipc:
        names -= set(SHARED_IPC)
    return frozenset(names)


def _leaf(action: str, ip_sockets: bool) -> list:
    allow, deny = (RET, 0, 0, RET_ALLOW), (RET, 0, 0, RET_ERRNO | EPERM)
    if action == "allow":
        return [allow]
    if action == "deny":
        return [deny]
    if action == "clone3":
        return [(RET, 0, 0, RET_ERRNO | ENOSYS)]
    if action == "clone":  # a namespace flag ? deny : allow
        return [(LD, 0, 0, ARG0), (JSET, 1, 0, CLONE_NS_FLAGS), allow, deny]
    if action == "personality":  # one of the values ? allow : deny
        n = len(PERSONALITY_VALUES)
        return [(LD, 0, 0, ARG0), *[(JEQ, n - i, 0, v) for i, v in enumerate(PERSONALITY_VALUES)], deny, allow]
    if action == "socket":
        if not ip_sockets:  # AF_UNIX ? allow : deny
            return [(LD, 0, 0, ARG0), (JEQ, 0, 1, AF_UNIX), allow, deny]
        return [(LD, 0, 0, ARG0), (JEQ, 2, 0, AF_ALG), (JEQ, 1, 0, AF_VSOCK), allow, deny]
    raise ValueError(action)


def _tree(segments: list, ip_sockets: bool) -> list:
    """A binary search over the segments' first numbers (unsigned: the x32 ABI's numbers, from
    0x40000000 on, fall in the last segment, refused); each leaf returns."""
    if len(segments) == 1:
        return _leaf(segments[0][1], ip_sockets)
    mid = len(segments) // 2
    left, right = _tree(segments[:mid], ip_sockets), _tree(segments[mid:], ip_sockets)
    if len(left) <= 255:  # a conditional jump's offsets are 8 bits
        return [(JGE, len(left), 0, segments[mid][0]), *left, *right]
    return [(JGE, 0, 1, segments[mid][0]), (JA, 0, 0, len(left)), *left, *right]


def program(ip_sockets: bool, ipc: bool) -> list:
    """The filter as (code, jt, jf, k) instructions: another ABI than x86-64 (a 32-bit int 0x80, whose
    numbers differ) is refused, then the number is looked up in the segments of equal action."""
    actions = {SYSCALLS[name]: "allow" for name in allowed(ip_sockets, ipc)}
    actions.update({SYSCALLS[name]: name for name in CONDITIONAL})
    segments, last = [], -1  # [(first number, action)], contiguous from 0 to 2**32 - 1
    for nr in sorted(actions):
        if nr > last + 1:
            segments.append((last + 1, "deny"))
        if not (actions[nr] == "allow" and segments and segments[-1][1] == "allow" and nr == last + 1):
            segments.append((nr, actions[nr]))
        last = nr
    segments.append((last + 1, "deny"))
    insns = [(LD, 0, 0, ARCH), (JEQ, 1, 0, AUDIT_ARCH_X86_64), (RET, 0, 0, RET_ERRNO | EPERM), (LD, 0, 0, NR),
             *_tree(segments, ip_sockets)]
    if len(insns) > MAX_INSNS:
        raise ValueError(f"a seccomp program of {len(insns)} instructions")
    return insns


def install(*, ip_sockets: bool, ipc: bool) -> None:
    """Filter this process's system calls, for good (its threads too, and whatever it forks or runs).

    ``ip_sockets``: whether it may make sockets of other families than AF_UNIX (it has a network
    namespace of its own); ``ipc``: whether it may use SysV IPC and POSIX message queues (an IPC
    namespace of its own). Sets no_new_privs (which a filter needs without CAP_SYS_ADMIN). Raises
    OSError if the kernel refuses. On another machine than x86-64: does nothing."""
    if platform.machine() != "x86_64":
        return
    insns = program(ip_sockets, ipc)
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *insn) for insn in insns))
    fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxP", len(insns), ctypes.addressof(code)))
    libc = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong
    if libc.prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs")
    # TSYNC: every thread of the process gets the filter, or none does (then the call fails).
    if libc.syscall(ctypes.c_long(NR_SECCOMP), ulong(SECCOMP_SET_MODE_FILTER), ulong(SECCOMP_FILTER_FLAG_TSYNC),
                    ctypes.c_void_p(ctypes.addressof(fprog))) != 0:
        raise OSError(ctypes.get_errno() or EPERM, "seccomp: the filter was not installed on every thread")
