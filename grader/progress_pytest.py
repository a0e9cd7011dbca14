"""The progress view's one pytest run: the public tests of every module, run once in a subprocess, and
every test's outcome read back. grader/progress.py (``check_progress.py``) judges and shows them.

The subprocess loads this very module as a pytest plugin (``-p``), whose hooks write each test's outcome
to a JSON file; so the release ships it beside ``check_progress.py`` under the same name, and it uses the
standard library only.

How it stays cheap (issue 24: at most 1.5x ``import torch``; benchmarks/run.py's ``progress-`` rows):
one pytest process over the whole ``exercises/`` folder, so torch is imported once, and three settings
that change nothing the tests check. Each was measured on 2 cores, in CPU seconds over ``import
torch``'s, before and after (the other two settings on):

- the garbage collector is off until collection has imported the test modules, and torch with them,
  and then frozen (``gc.freeze``, as the grader's engine and worker do): torch's import leaves some
  170,000 objects, which every full collection scanned again (0.13 s each), while importing and while
  the tests ran. 1.44x -> 1.05x on the solutions;
- failures are reported as one line (``--tb=line``): the view keeps only each failure's message, and
  pytest's default report re-reads and parses the source of every traceback entry. 1.19x -> 0.99x
  on the stubs, where every test fails;
- torch computes on one thread (``OMP_NUM_THREADS=1``, unless it is set), as the grader runs a
  student's code: the tests' tensors are tiny, and a pool of threads only burns the other cores.
  1.32x -> 1.00x on the solutions.

Nor are the plugins of a developer's environment that the tests do not use loaded (below).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

OUT_ENV = "KATA_PROGRESS_OUT"
# Plugins of a developer's environment the public tests do not need (hypothesis: 0.4 s of import); blocking
# one that is not installed does nothing.
_BLOCKED_PLUGINS = ("no:cacheprovider", "no:hypothesispytest", "no:anyio")
_PYTEST_OPTIONS = ("-q", "--tb=line", "--continue-on-collection-errors")


@dataclass
class TestResult:
    nodeid: str
    path: Path  # the test file
    function: str  # "test_causal_mask_is_lower_triangular"
    outcome: str  # "passed" | "failed" | "skipped"
    message: str = ""


@dataclass
class Run:
    tests: list[TestResult]
    collect_errors: dict[Path, str]  # test file -> its error
    exitstatus: int
    output: str
    seconds: float


# --- the pytest plugin: runs inside the pytest subprocess --------------------------------------------
_records: list[dict] = []


def _message(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return str(crash.message)
    text = getattr(report, "longreprtext", "") or ""
    errors = [line[2:].strip() for line in text.splitlines() if line.startswith("E ")]
    if errors:
        return errors[-1] if not errors[-1].startswith("^") else errors[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def pytest_configure(config) -> None:
    gc.disable()  # until the test modules, and torch with them, are imported: see the docstring


def pytest_collection_finish(session) -> None:
    gc.freeze()  # what the imports made lives as long as the process: no collection need scan it again
    gc.enable()


def pytest_collectreport(report) -> None:
    if report.failed:
        _records.append({"nodeid": report.nodeid, "when": "collect", "outcome": "failed", "message": _message(report)})


def pytest_runtest_logreport(report) -> None:
    if report.when == "call" or report.outcome != "passed":
        _records.append({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                         "message": _message(report) if report.outcome == "failed" else ""})


def pytest_sessionfinish(session, exitstatus) -> None:
    if out := os.environ.get(OUT_ENV):
        Path(out).write_text(json.dumps({"rootdir": str(session.config.rootpath),
                                         "exitstatus": int(exitstatus), "records": _records}))


# --- running the tests: in the progress view's process ---------------------------------------------------
def run_tests(exercises: Path) -> Run:
    """Run pytest once over ``exercises`` in a subprocess; every test's outcome."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kata-progress-") as tmp:
        out = Path(tmp) / "outcomes.json"
        command, env = command_and_env(exercises, out)
        proc = subprocess.run(command, cwd=exercises.parent, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        data = json.loads(out.read_text()) if out.is_file() else {"rootdir": str(exercises.parent),
                                                                    "exitstatus": proc.returncode, "records": []}
    return _read_run(data, proc.stdout + proc.stderr, time.perf_counter() - start)


def command_and_env(exercises: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    """The pytest subprocess's command line and environment, with this module as its plugin writing to ``out``."""
    # The name under which the pytest subprocess imports this module as a plugin, and the folder it needs on sys.path.
    name = __name__ if __name__ != "__main__" else Path(__file__).stem
    root = Path(__file__).resolve().parents[name.count(".")]
    env = {"OMP_NUM_THREADS": "1", **os.environ, OUT_ENV: str(out),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "pytest", str(exercises), "-p", name, *_PYTEST_OPTIONS,
               *(arg for blocked in _BLOCKED_PLUGINS for arg in ("-p", blocked))]
    return command, env


def _read_run(data: dict, output: str, seconds: float) -> Run:
    """The plugin's records as one result per test (its worst phase: a failed teardown fails the test)."""
    rootdir = Path(data["rootdir"])
    merged: dict[str, TestResult] = {}
    errors: dict[Path, str] = {}
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    for rec in data["records"]:
        file_part, _, rest = rec["nodeid"].partition("::")
        path = (rootdir / file_part).resolve()
        if rec["when"] == "collect":
            errors[path] = rec["message"]
            continue
        function = rest.split("::")[-1].split("[")[0]
        test = merged.setdefault(rec["nodeid"], TestResult(rec["nodeid"], path, function, rec["outcome"], rec["message"]))
        if rank[rec["outcome"]] > rank[test.outcome]:
            test.outcome, test.message = rec["outcome"], rec["message"]
    return Run(list(merged.values()), errors, data["exitstatus"], output, seconds)
