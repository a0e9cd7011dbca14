"""Many pytest runs, fast: one process imports torch and pytest once, each run is a fork()ed child.

    python grader/tests/forked_pytest.py JOBS.json OUT.json

``JOBS.json``: ``{"parallel": 2, "timeout": 120, "collect": [pytest arguments] (optional), "jobs": [...]}``.
The driver imports torch (one thread), pytest and pytest's plugins, then runs the jobs, each in a child
forked from that warm process, ``parallel`` at a time. Two modes:

* without ``collect``, a job ``{"id", "args", "cwd"}`` is ``pytest.main(args)`` run from ``cwd``;
* with ``collect``, the driver itself runs ``pytest.main(collect)`` up to the end of the collection
  (which imports the test modules and their conftest, never code under test: the hidden tests reach it
  only through their ``impl`` fixture), and a job ``{"id", "options", "select"}`` runs, in its child,
  the collected tests whose node id starts with one of ``select`` (all when absent), with the pytest
  options ``options`` set first (``{"impl": DIR}`` for the hidden tests' ``--impl``).

Code under test is only ever imported in a child, which ends with its job. A child sends back its
per-test outcomes as JSON through a pipe; the driver writes ``{id: {"rc": exit code, "tests": {nodeid:
[status, exercise, message]}, "output": tail, "seconds": wall}}`` to OUT.json. ``status`` is
``passed``, ``skipped``, ``failed`` or ``error`` (a test reported twice keeps its worst); ``exercise``
is the hidden tests' ``exercise`` property ("" elsewhere); ``output`` (the child's stdout and stderr) is
kept only when pytest did not end with 0 or 1; ``rc`` is -1 when the child died or timed out.

``run_jobs()`` is the API for the project's tests: it runs the driver in a subprocess.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve()
REPO_ROOT = HERE.parents[2]
RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
# Every run: no cache, and no gc.collect() of torch's heap at the end of each session (0.3 s a run).
QUIET = ["-p", "no:cacheprovider", "-p", "no:unraisableexception", "-q"]


def run_jobs(jobs: list[dict], *, collect: list[str] | None = None, parallel: int = 2, timeout: float = 120,
             total_timeout: float = 600) -> dict[str, dict]:
    """Run ``jobs`` in the driver; ``{id: result}`` (see the module's docstring)."""
    with tempfile.TemporaryDirectory(prefix="forked-pytest-") as tmp:
        spec, out = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        spec.write_text(json.dumps({"collect": collect, "parallel": parallel, "timeout": timeout, "jobs": jobs}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        proc = subprocess.run([sys.executable, str(HERE), str(spec), str(out)], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=total_timeout)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"the forked-pytest driver exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}")
        return json.loads(out.read_text())


class _Collector:
    """A pytest plugin that keeps every test's worst outcome (collection errors count as errors)."""

    def __init__(self) -> None:
        self.tests: dict[str, list[str]] = {}

    def _keep(self, nodeid: str, status: str, exercise: str, message: str) -> None:
        old = self.tests.get(nodeid)
        if old is None or RANK[status] > RANK[old[0]]:
            self.tests[nodeid] = [status, exercise or (old[1] if old else ""), message]

    def pytest_runtest_logreport(self, report) -> None:
        if report.passed:
            status = "passed"
        elif report.skipped:
            status = "skipped"
        else:
            status = "failed" if report.when == "call" else "error"
        exercise = dict(getattr(report, "user_properties", ())).get("exercise", "")
        self._keep(report.nodeid, status, exercise, "" if report.passed else str(report.longreprtext))

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self._keep(report.nodeid or "<collection>", "error", "", str(report.longreprtext))


def _child(job: dict, run: Callable[[dict, _Collector], int], write_fd: int, log_path: str) -> None:
    """In the forked child: run the job, send the outcomes through the pipe, never return."""
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        collector = _Collector()
        rc = run(job, collector)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(json.dumps({"rc": rc, "tests": collector.tests}).encode())
        os._exit(0)
    except BaseException:  # noqa: BLE001 - whatever happened, the exit status and the log say it
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)


def _tail(path: str, n: int = 4000) -> str:
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _result(run: dict, exit_code: int) -> dict:
    try:
        data = json.loads(b"".join(run["chunks"]))
    except ValueError:
        return {"rc": -1, "tests": {}, "output": f"the child exited {exit_code} without its results\n" + _tail(run["log"])}
    data["output"] = "" if data["rc"] in (0, 1) else _tail(run["log"])
    return data


def drive(jobs: list[dict], run: Callable[[dict, _Collector], int], parallel: int, timeout: float) -> dict[str, dict]:
    """Every job in a forked child (``run(job, collector)`` -> pytest's exit code), ``parallel`` at a time."""
    todo, results = list(jobs), {}
    running: dict[int, dict] = {}  # read end of the child's pipe -> {"job", "pid", "chunks", "log", "start"}
    sel = selectors.DefaultSelector()
    with tempfile.TemporaryDirectory(prefix="forked-pytest-logs-") as logs:
        while todo or running:
            while todo and len(running) < parallel:
                job = todo.pop(0)
                log = os.path.join(logs, f"{len(results) + len(running)}.log")
                read_fd, write_fd = os.pipe()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(job, run, write_fd, log)
                os.close(write_fd)
                running[read_fd] = {"job": job, "pid": pid, "chunks": [], "log": log, "start": time.monotonic()}
                sel.register(read_fd, selectors.EVENT_READ)
            for key, _ in sel.select(timeout=1.0):
                child = running[key.fd]
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    child["chunks"].append(chunk)
                    continue
                sel.unregister(key.fd)
                os.close(key.fd)
                del running[key.fd]
                status = os.waitpid(child["pid"], 0)[1]
                results[child["job"]["id"]] = {**_result(child, os.waitstatus_to_exitcode(status)),
                                               "seconds": round(time.monotonic() - child["start"], 3)}
            for fd, child in list(running.items()):
                if time.monotonic() - child["start"] > timeout:
                    os.kill(child["pid"], signal.SIGKILL)
                    os.waitpid(child["pid"], 0)
                    sel.unregister(fd)
                    os.close(fd)
                    del running[fd]
                    results[child["job"]["id"]] = {"rc": -1, "tests": {}, "seconds": timeout,
                                                   "output": f"timed out after {timeout:g} s\n" + _tail(child["log"])}
    return results


def _run_args(job: dict, collector: _Collector) -> int:
    import pytest

    os.chdir(job["cwd"])
    return int(pytest.main([*job["args"], *QUIET], plugins=[collector]))


class _ForkAfterCollection:
    """The ``collect`` mode: a plugin whose test loop hands every job's share of the collected tests to a child."""

    def __init__(self, spec: dict) -> None:
        self.spec, self.results = spec, None

    def pytest_runtestloop(self, session) -> bool:
        self.results = drive(self.spec["jobs"], lambda job, collector: self._run_items(session, job, collector),
                             int(self.spec.get("parallel", 2)), float(self.spec.get("timeout", 120)))
        return True  # the driver itself runs no test

    @staticmethod
    def _run_items(session, job: dict, collector: _Collector) -> int:
        for name, value in job.get("options", {}).items():
            setattr(session.config.option, name, value)
        session.config.pluginmanager.register(collector)
        select = tuple(job.get("select") or ("",))
        items = [item for item in session.items if item.nodeid.startswith(select)]
        for i, item in enumerate(items):  # what pytest's own test loop does (the timeout plugin hooks in here)
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        if not items:
            return 5
        return 1 if any(status in ("failed", "error") for status, _, _ in collector.tests.values()) else 0


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    sys.dont_write_bytecode = True
    import importlib
    import importlib.util
    from importlib.metadata import entry_points

    import pytest
    import torch

    torch.set_num_threads(1)  # before any torch work: no thread pool for the children to inherit
    for ep in entry_points(group="pytest11"):  # imported once here, not in every child
        importlib.import_module(ep.module)
    if importlib.util.find_spec("hypothesis"):  # its pytest plugin imports it at the end of every session
        importlib.import_module("hypothesis")
    if spec.get("collect") is None:
        results = drive(spec["jobs"], _run_args, int(spec.get("parallel", 2)), float(spec.get("timeout", 120)))
    else:
        plugin = _ForkAfterCollection(spec)
        rc = pytest.main([*spec["collect"], *QUIET, "--capture=sys"], plugins=[plugin])
        if plugin.results is None:
            print(f"the collection of {spec['collect']} ended with {rc} before any test could run", file=sys.stderr)
            return 1
        results = plugin.results
    Path(argv[1]).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
