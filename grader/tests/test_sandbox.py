"""The bubblewrap sandbox: what a student's code can do as a plain process, and cannot do under bwrap.

Each attack is also run without the sandbox where that is safe, to show the test can fail: there,
a loopback connection gets through. (Reading the reference from disk: test_isolation.py.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.grading.engine import run_hidden_tests, start_worker
from grader.rubric import REPO_ROOT
from grader.sandbox.client import WorkerFailure, await_answer
from grader.sandbox.limits import WALL_CEILING, WALL_FACTOR
from grader.sandbox.modes import bwrap_problem
from support import build_submission

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable here: {bwrap_problem()}")
pytestmark = pytest.mark.timeout(300)

PHONE_HOME = '''"""Attack: connect out (here: to a listener of the grader's tests on the host's loopback)."""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"leaked")
except OSError:
    pass
'''


def test_sandbox_is_usable_where_ci_installs_it() -> None:
    """CI installs bubblewrap, so there the sandbox tests must run, not skip."""
    if os.environ.get("CI"):
        assert bwrap_problem() is None, bwrap_problem()


@needs_bwrap
def test_no_network_under_bwrap(tmp_path: Path, templates) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    received: list[bytes] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            received.append(conn.recv(16))
            conn.close()

    stop = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        sub = build_submission("phone_home", tmp_path)
        path = sub / "01_simple_attention" / "attention_scores.py"
        path.write_text(PHONE_HOME.format(port=listener.getsockname()[1]) + path.read_text())
        run_hidden_tests(start_worker(sub, domains=templates("bwrap")))
        assert received == []
        run_hidden_tests(start_worker(sub, domains=templates("none")))  # the same code as a plain process does get through
        assert received == [b"leaked"]
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_cli_sandbox_bwrap_without_bubblewrap_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no /usr/bin: no bwrap
    proc = subprocess.run([sys.executable, "-m", "grader", "score", str(REPO_ROOT / "solutions"), "--sandbox", "bwrap"],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "bubblewrap (bwrap) is not installed" in proc.stderr


class _SilentDomain:
    """A domain that never answers and reports its usage as ``usage(elapsed)`` says."""

    oom_fd = None  # no cgroup

    def __init__(self, usage):
        self.sock, self._peer = socket.socketpair()
        self.start, self._usage = time.monotonic(), usage

    def usage(self, rescan: bool = False) -> tuple[float, float]:
        return self._usage(time.monotonic() - self.start)

    def hang_location(self) -> str:
        return ""


@pytest.mark.parametrize("usage, ends_at, says", [
    (lambda t: (0.01, 0.0), WALL_FACTOR, r"timed out after \d s of wall-clock time \(0\.0 s of CPU\)"),
    (lambda t: (0.01, 0.95 * t), WALL_CEILING, r"of wall-clock time \(0\.0 s of CPU; \d s more waiting for a CPU\)"),
    (lambda t: (t, 0.0), 1.0, r"^timed out after 0\.1 s in a call$"),
], ids=["sleeps", "starved by a busy machine", "spins"])
def test_a_call_times_out_on_its_cpu_or_on_wall_clock_not_spent_waiting_for_a_cpu(usage, ends_at, says) -> None:
    """A call that sleeps ends at WALL_FACTOR x the timeout; one that waits for a CPU (a busy machine) runs on
    until WALL_CEILING x, whatever its wall-clock time; one that spins ends on its CPU time, with the same
    words on any machine."""
    timeout, domain = 0.1, _SilentDomain(usage)
    with pytest.raises(WorkerFailure, match=says):
        await_answer(domain, domain.start, (0.0, 0.0), timeout, "a call")
    took = time.monotonic() - domain.start
    assert ends_at * timeout <= took + 0.05 and took < ends_at * timeout + 2, took
