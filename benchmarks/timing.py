"""Timing a command, and the machine it runs on: what benchmarks/run.py measures with.

Each ``run_timed`` gives wall-clock seconds, the CPU seconds of the descendants that were waited for
(``getrusage(RUSAGE_CHILDREN)``) and the CPU seconds the whole machine was busy meanwhile
(``/proc/stat``); a ``Row`` of the table keeps the timings of its runs and reports their medians.
With ``DRY_RUN`` set (``--dry-run``), every command is replaced by a timed ``python -c`` that exits as
the real one should.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)


class BenchError(RuntimeError):
    """A benchmarked command did not do what it should (wrong exit code, missing output)."""


def bench_env() -> dict[str, str]:
    """This environment, venv bin first on PATH (nbgrader shells out to alembic), bytecode allowed."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name in [k for k in env if k.startswith("PYTEST_")]:  # e.g. when run from the project's tests
        env.pop(name)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


ENV = bench_env()


@dataclass
class Timing:
    wall: float
    cpu: float  # user + system seconds of the command and its descendants that were waited for
    busy: float  # CPU seconds the whole machine was busy meanwhile (all processes, from /proc/stat)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy() -> float:
    """CPU seconds all cores of this machine have been busy (user, nice, system, irq, softirq); nan if unknown."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
    except (OSError, ValueError, IndexError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / _TICK


@dataclass
class Row:
    key: str
    what: str
    command: str
    per: int = 1  # submissions (or runs) one timing covers
    baseline: str = ""  # key of the row it is compared to
    timings: list[Timing] = field(default_factory=list)
    note: str = ""

    def wall(self) -> float:
        return statistics.median(t.wall for t in self.timings)

    def cpu(self) -> float:
        return statistics.median(t.cpu for t in self.timings)

    def busy(self) -> float:
        return statistics.median(t.busy for t in self.timings)

    def per_sub(self) -> float:
        return self.wall() / self.per


DRY_RUN = False  # --dry-run: every measured command is replaced by `python -c pass`


def run_timed(cmd: list[str], cwd: Path = REPO, ok: tuple[int, ...] = (0,), timeout: float = 600,
              env: dict[str, str] | None = None) -> tuple[Timing, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = machine_busy()
    start = time.perf_counter()
    run = [sys.executable, "-c", f"raise SystemExit({ok[0]})"] if DRY_RUN else cmd
    proc = subprocess.run(run, cwd=cwd, env=ENV if env is None else env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - start
    busy = machine_busy() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise BenchError(f"{' '.join(map(str, cmd))} (in {cwd}) exited {proc.returncode}, expected {ok}\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, busy), proc


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load_average()}] {message}", file=sys.stderr, flush=True)


def machine_line() -> str:
    from importlib.metadata import version

    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.platform()}, nproc {cores()}, {model}, Python {platform.python_version()}, "
            f"torch {version('torch')}")


def code_version() -> str:
    """The commit measured, and whether the working tree differs from it (outside benchmarks/)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=30).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!benchmarks"], cwd=REPO,
                                 capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    return f"commit {head or '?'}" + (f", plus uncommitted changes in {len(changed)} paths" if changed else ", clean")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
