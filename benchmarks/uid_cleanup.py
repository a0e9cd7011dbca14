#!/usr/bin/env python
"""Benchmark: uid mode's clean-up after each domain, the stand-alone reaper against one that imports the grader.

    python benchmarks/uid_cleanup.py [--repeat 20]    # as root: the clean-up drops to a uid of its own

Interleaved ``--repeat`` times after a warm-up, each for a fresh uid with nothing to clean: the reaper as
the grader starts it (``grader.sandbox.modes.reap``: ``python -I -S grader/sandbox/reaper.py``) and the
baseline, the same script run after ``import grader.sandbox.modes`` (what the clean-up imported before
it was a script of its own). Then a domain's whole cycle in a uid template (start, one call, clean-up).
Prints the median wall-clock and machine CPU milliseconds of each (machine CPU: all cores' busy time,
from /proc/stat, so run it on a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.timing import machine_busy  # noqa: E402
from grader.sandbox.domains import Domains  # noqa: E402
from grader.sandbox.modes import REAPER, SHARED_TOPS, UID_BASE, choose_isolation, reap  # noqa: E402

# The baseline: the same reaper, after the import the clean-up paid before (grader.sandbox.modes).
IMPORTING = (f"import runpy, sys; sys.path.insert(0, {str(REPO)!r}); import grader.sandbox.modes; "
             f"sys.argv = [{str(REAPER)!r}, *sys.argv[1:]]; runpy.run_path({str(REAPER)!r}, run_name='__main__')")



def timed(run) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), machine_busy()
    run()
    return (time.perf_counter() - wall) * 1000, (machine_busy() - cpu) * 1000


def importing_reap(uid: int) -> None:
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", IMPORTING, str(uid), *SHARED_TOPS], capture_output=True,
                          text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "0 0", proc.stdout + proc.stderr


def domain_cycle(domains: Domains, submission: Path) -> None:
    from grader.grading.engine import run_hidden_tests

    run_hidden_tests(submission, domains=domains, exercises=["01_simple_attention/attention_scores"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat
    if os.geteuid() != 0:
        print("run it as root: the clean-up drops to a uid of its own", file=sys.stderr)
        return 2
    uid = UID_BASE - 4096 - os.getpid() % 4096  # a uid no grading uses
    rows: dict[str, list[tuple[float, float]]] = {"reaper (grader/sandbox/reaper.py)": [],
                                                   "baseline: after import grader.sandbox.modes": []}
    reap(uid)
    importing_reap(uid)
    for _ in range(repeat):
        rows["reaper (grader/sandbox/reaper.py)"].append(timed(lambda: reap(uid)))
        rows["baseline: after import grader.sandbox.modes"].append(timed(lambda: importing_reap(uid)))
    with tempfile.TemporaryDirectory() as tmp, Domains(choose_isolation("uid")) as domains:
        submission = Path(tmp) / "sub"
        (submission / "01_simple_attention").mkdir(parents=True)
        (submission / "01_simple_attention" / "attention_scores.py").write_text(
            (REPO / "solutions" / "01_simple_attention" / "attention_scores.py").read_text())
        domain_cycle(domains, submission)  # warm-up
        rows["a uid domain: start, one exercise's tests, clean-up"] = [
            timed(lambda: domain_cycle(domains, submission)) for _ in range(max(3, repeat // 4))]
    for name, values in rows.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{name}: {wall:.0f} ms, machine CPU {cpu:.0f} ms (median of {len(values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
