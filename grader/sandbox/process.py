"""One running domain as the grader's client sees it: its socket, the tail of its output, the CPU time
it has used (and the time it waited for a CPU), and how it ended.

The output tail is what the student's code controls and the grader shows: it is escaped
(grader.safe_text) as it is read out.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import threading
from typing import Any

from grader.safe_text import escape_controls
from grader.sandbox.modes import COPY

OUTPUT_TAIL_BYTES = 4096
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_FRAME_LINE = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')
_MEMORY_SIGNALS = (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


class RunningDomain:
    """A domain (grader/sandbox/domains.py: ``Domain``), its socket and the tail of its output."""

    def __init__(self, generation: int, proc: Any, sock: socket.socket):
        self.generation = generation
        self.proc = proc
        self.sock = sock
        self.ready = False
        self.pid: int | None = None
        # /proc/<pid>/stat and /proc/<pid>/schedstat (None where absent) of the domain's processes, kept open
        self.cpu_fds: list[tuple[int, int | None]] = []
        self.tail = bytearray()
        self._stop = threading.Event()
        self.drain = threading.Thread(target=self._drain, name=f"kata-worker-output-{proc.template_pid}", daemon=True)
        self.drain.start()

    def _drain(self) -> None:
        """Keep the last bytes of the domain's output. Never blocks anyone: a process the domain left
        holding the pipe open costs this thread nothing but a poll, and it stops when told to."""
        fd = self.proc.stdout_fd
        try:
            while not self._stop.is_set():
                if not select.select([fd], [], [], 0.2)[0]:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self.tail += chunk
                if len(self.tail) > 2 * OUTPUT_TAIL_BYTES:
                    del self.tail[:-OUTPUT_TAIL_BYTES]
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)

    def usage(self, rescan: bool = False) -> tuple[float, float] | None:
        """(CPU seconds used, seconds spent waiting for a CPU) so far by the launched process and its
        descendants; None without a host pid.

        The wait is the scheduler's run-queue delay (/proc/<pid>/schedstat; 0 where the kernel keeps
        none): time a busy machine took from the domain, which a wall-clock limit must not count.
        The process tree is walked once (and again with ``rescan``); later calls re-read the files of
        the processes found then through descriptors kept open (a pread each: cheap enough for every
        request).
        """
        if self.proc.pid is None:  # no host pid found for the domain: wall-clock timeouts only
            return None
        if self.cpu_fds and not rescan:
            cpu = waited = 0.0
            for stat_fd, sched_fd in self.cpu_fds:
                try:
                    cpu += _stat_cpu(os.pread(stat_fd, 1024, 0))
                    waited += _run_queue_wait(os.pread(sched_fd, 256, 0)) if sched_fd is not None else 0.0
                except (OSError, ValueError, IndexError):
                    pass
            return cpu, waited
        cpu = waited = 0.0
        todo, seen = [self.proc.pid], set()
        try:
            while todo:
                pid = todo.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                with open(f"/proc/{pid}/stat", "rb") as f:
                    cpu += _stat_cpu(f.read())
                waited += _read_wait(pid)
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                        todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError, IndexError):
            return None if not seen or pid == self.proc.pid else (cpu, waited)
        if self.ready:
            self._keep_open(sorted(seen))
        return cpu, waited

    def _keep_open(self, pids: list[int]) -> None:
        self._close_cpu_fds()
        for pid in pids:
            try:
                stat_fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                sched_fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                sched_fd = None
            self.cpu_fds.append((stat_fd, sched_fd))

    def _close_cpu_fds(self) -> None:
        fds, self.cpu_fds = self.cpu_fds, []
        for stat_fd, sched_fd in fds:
            os.close(stat_fd)
            if sched_fd is not None:
                os.close(sched_fd)

    @property
    def oom_fd(self) -> int | None:
        """Readable when the kernel stops a process of the domain for its memory (grader/sandbox/cgroups.py)."""
        return self.proc.oom_fd

    def output_tail(self) -> str:
        return escape_controls(bytes(self.tail[-OUTPUT_TAIL_BYTES:]).decode("utf-8", "replace"))

    def hang_location(self) -> str:
        """`` (at 03_causal/causal_attention.py:12 in forward)`` from the worker's faulthandler dump."""
        dump = self.output_tail().rsplit("most recent call first", 1)[-1]
        for line in dump.splitlines():  # faulthandler prints the innermost frame first
            m = _FRAME_LINE.search(line)
            if m and f"/{COPY}/" in m.group(1):  # a file of the domain's copy of the submission
                rel = m.group(1).split(f"/{COPY}/", 1)[1]
                return f" (at {rel}:{m.group(2)} in {m.group(3)})"
        return ""

    def last_lines(self, limit: int = 300) -> str:
        """``; last output: ...``: the end of the domain's output, if it wrote any."""
        text = self.output_tail().strip()
        if not text:
            return ""
        if len(text) > limit:
            text = "..." + text[-limit:]
        return f"; last output: {text}"

    def kill(self) -> None:
        self.proc.end()
        self._close_cpu_fds()
        self.sock.close()
        self._stop.set()
        self.drain.join(timeout=0.5)

    def let_die(self) -> None:
        """Let a dying worker finish; its exit status tells how it ended."""
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.drain.join(timeout=0.2)

    def exit_description(self) -> str:
        """``process exited with code 0`` / ``killed by signal 9 (memory limit?)``."""
        try:
            rc = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "closed the channel"
        if rc > 128 and rc - 128 < signal.NSIG:  # a domain's init reports its worker's signal as 128+N
            rc = -(rc - 128)
        if rc < 0:
            return f"killed by signal {-rc}" + (" (memory limit?)" if -rc in _MEMORY_SIGNALS else "")
        return f"process exited with code {rc}"


def _stat_cpu(stat: bytes) -> float:
    """User + system CPU seconds from a /proc/<pid>/stat line."""
    fields = stat.rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _run_queue_wait(schedstat: bytes) -> float:
    """Seconds spent runnable but waiting for a CPU, from a /proc/<pid>/schedstat line."""
    return int(schedstat.split()[1]) / 1e9


def _read_wait(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return _run_queue_wait(f.read())
    except (OSError, ValueError, IndexError):
        return 0.0
