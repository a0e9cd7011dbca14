"""Many pytest runs, fast: one process imports torch and pytest once, each run is a fork()ed child.

    python grader/authoring/forked_pytest.py SPEC.json OUT.json

``SPEC.json``: ``{"parallel": 2, "timeout": 120, "sessions": [{"args": [...], "cwd": DIR, "forbid": [...],
"jobs": [...]}, ...]}``. The driver imports torch (one thread), pytest and pytest's plugins once. For
each session, a child forked from it runs ``pytest.main(args)`` from ``cwd`` up to the end of the
collection (which imports the test modules and their conftest files, never the code under test, which
the tests load only while they run; none of the modules named in ``forbid`` may have been imported by
then), and hands each job to a grandchild forked after the collection, ``parallel`` at a time. A job
``{"id", "options", "path", "select", "kind", "env"}`` sets the pytest options ``options`` (``{"impl": DIR}``
for the hidden tests' ``--impl``) and the environment variables ``env`` (where the kata's checks record
what they were given: exercises/kata_known.py), puts the folders ``path`` first on ``sys.path`` (where the tests'
bare-name imports find the code under test), and runs the collected tests whose node id starts with
one of ``select`` (all when absent) and, with ``kind``, whose kind (tests/conftest.py) is that one,
as pytest's own test loop does.

Code under test is only ever imported in a job's process, which ends with the job. It sends back its
per-test outcomes as JSON through a pipe; the driver writes ``{job id: {"rc": exit code, "tests": {nodeid:
[status, exercise, message]}, "output": tail, "seconds": wall}}`` to OUT.json. ``status`` is ``passed``,
``skipped``, ``failed`` or ``error`` (a test reported twice keeps its worst); ``exercise`` is the
hidden tests' ``exercise`` property ("" elsewhere); ``message`` is a failure's exception as pytest
prints it, without the traceback (``--tb=no``: its first line starts with ``E``); ``output`` (the job's
stdout and stderr) is kept only when the exit code is not pytest's 0 or 1; ``rc`` is -1 when the job
died or timed out, or when its session's collection failed.

``run_sessions()`` is the API (for the project's tests, and for grader/authoring/known_results.py, which
writes the known mistakes' results): it runs the driver in a subprocess.
"""

from __future__ import annotations

import gc
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
REPO_ROOT = HERE.parents[2]  # grader/authoring/ -> the repository
RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
# Every session: no cache, no gc.collect() of torch's heap at its end (0.3 s), in-process capture
# (each forked job has its own copy of it, where file-descriptor capture would share one file), and a
# failure's text without its traceback: what the results keep is the exception's text (pytest's "E"
# lines), and the source of every frame, which pytest parses whole for each failure, cost a fifth of the
# hidden and the public runs' CPU.
QUIET = ["-p", "no:cacheprovider", "-p", "no:unraisableexception", "-q", "--capture=sys", "--tb=no"]


def run_sessions(sessions: list[dict], *, parallel: int = 2, timeout: float = 120,
                 total_timeout: float = 600, environ: dict[str, str] | None = None) -> dict[str, dict]:
    """Run the sessions' jobs in the driver; ``{job id: result}`` (see the module's docstring). ``environ``:
    variables set for the driver itself, before it imports torch (grader/authoring/known_results.py's
    other float path)."""
    with tempfile.TemporaryDirectory(prefix="forked-pytest-") as tmp:
        spec, out = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec.write_text(json.dumps({"parallel": parallel, "timeout": timeout, "sessions": sessions}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update({**(environ or {}), "PYTHONDONTWRITEBYTECODE": "1"})
        proc = subprocess.run([sys.executable, str(HERE), str(spec), str(out)], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=total_timeout)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"the forked-pytest driver exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}")
        return json.loads(out.read_text())


class _Collector:
    """A pytest plugin that keeps every test's worst outcome."""

    def __init__(self) -> None:
        self.tests: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if report.passed:
            status = "passed"
        elif report.skipped:
            status = "skipped"
        else:
            status = "failed" if report.when == "call" else "error"
        exercise = dict(getattr(report, "user_properties", ())).get("exercise", "")
        old = self.tests.get(report.nodeid)
        if old is None or RANK[status] > RANK[old[0]]:
            self.tests[report.nodeid] = [status, exercise, "" if report.passed else str(report.longreprtext)]


def _tail(path: str, n: int = 4000) -> str:
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _forked(work: Callable[[], object], log_path: str) -> tuple[int, int]:
    """Fork a child that runs ``work()`` with its output to ``log_path`` and sends the JSON of what it
    returns through a pipe; (pid, read end of the pipe). The child never returns."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return pid, read_fd
    try:
        os.close(read_fd)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        payload = json.dumps(work()).encode()
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    except BaseException:  # noqa: BLE001 - whatever happened, the exit status and the log say it
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)


def _result(chunks: list[bytes], exit_code: int, log: str) -> dict:
    try:
        data = json.loads(b"".join(chunks))
    except ValueError:
        return {"rc": -1, "tests": {}, "output": f"the job's process exited {exit_code} without its results\n" + _tail(log)}
    data["output"] = "" if data["rc"] in (0, 1) else _tail(log)
    return data


def drive(jobs: list[dict], run: Callable[[dict], dict], parallel: int, timeout: float, logs: str) -> dict[str, dict]:
    """Every job in a forked child (``run(job)`` -> ``{"rc", "tests"}``), ``parallel`` at a time."""
    todo, results = list(jobs), {}
    running: dict[int, dict] = {}  # read end of the child's pipe -> {"job", "pid", "chunks", "log", "start"}
    sel = selectors.DefaultSelector()
    while todo or running:
        while todo and len(running) < parallel:
            job = todo.pop(0)
            log = os.path.join(logs, f"job-{len(results) + len(running)}.log")
            pid, read_fd = _forked(lambda job=job: run(job), log)
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
            results[child["job"]["id"]] = {**_result(child["chunks"], os.waitstatus_to_exitcode(status), child["log"]),
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


def _run_job(session, job: dict) -> dict:
    """In a job's process: the selected tests of the collected session, as pytest's own test loop runs them."""
    for name, value in (job.get("options") or {}).items():
        setattr(session.config.option, name, value)
    os.environ.update(job.get("env") or {})
    sys.path[:0] = job.get("path") or []
    collector = _Collector()
    session.config.pluginmanager.register(collector)
    select = tuple(job.get("select") or ("",))
    items = [item for item in session.items if item.nodeid.startswith(select)
             and job.get("kind") in (None, dict(item.user_properties).get("kind"))]
    for i, item in enumerate(items):  # the timeout plugin and the terminal hook in here, as in a pytest run
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
    failed = any(status in ("failed", "error") for status, _, _ in collector.tests.values())
    return {"rc": 1 if failed else 0 if items else 5, "tests": collector.tests}


class _ForkAfterCollection:
    """A pytest plugin whose test loop runs the session's jobs in forked children instead of any test itself."""

    def __init__(self, session: dict, parallel: int, timeout: float, logs: str) -> None:
        self.spec, self.parallel, self.timeout, self.logs = session, parallel, timeout, logs
        self.results: dict[str, dict] | None = None

    def pytest_runtestloop(self, session) -> bool:
        imported = sorted(set(self.spec.get("forbid", ())) & set(sys.modules))
        if imported:  # the jobs could not put their own code first: say so for every one
            why = f"the collection of pytest {' '.join(self.spec['args'])} imported code under test: {imported}"
            self.results = {job["id"]: {"rc": -1, "tests": {}, "output": why} for job in self.spec["jobs"]}
            return True
        gc.freeze()  # the collection's objects too: no job's collection walks (and so copies) their pages
        self.results = drive(self.spec["jobs"], lambda job: _run_job(session, job), self.parallel, self.timeout, self.logs)
        return True


def _session(spec: dict, parallel: int, timeout: float, logs: str) -> dict:
    """In a session's process: collect, then run the jobs; ``{"results": ...}``, or pytest's exit code
    (``{"ended": rc}``) when it ended before its test loop (a collection error, a usage error)."""
    import pytest

    os.chdir(spec["cwd"])
    plugin = _ForkAfterCollection(spec, parallel, timeout, logs)
    rc = pytest.main([*spec["args"], *QUIET], plugins=[plugin])
    return {"ended": int(rc)} if plugin.results is None else {"results": plugin.results}


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    parallel, timeout = int(spec.get("parallel", 2)), float(spec.get("timeout", 120))
    sys.dont_write_bytecode = True
    import importlib
    import importlib.util
    from importlib.metadata import entry_points

    import pytest  # noqa: F401 - imported once, here, for every session and job
    import torch

    torch.set_num_threads(1)  # before any torch work: no thread pool for the children to inherit
    for ep in entry_points(group="pytest11"):
        importlib.import_module(ep.module)
    if importlib.util.find_spec("hypothesis"):  # its pytest plugin imports it at the end of every session
        importlib.import_module("hypothesis")
    gc.freeze()  # what the imports made lives as long as the driver: a forked child's collection need not
    # walk it, and walking it would copy every page the child shares with the driver
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="forked-pytest-logs-") as logs:
        for i, session in enumerate(spec["sessions"]):  # one after another, each in its own process
            session_logs = os.path.join(logs, str(i))
            os.mkdir(session_logs)
            log = os.path.join(session_logs, "session.log")
            pid, read_fd = _forked(lambda session=session: _session(session, parallel, timeout, session_logs), log)
            with os.fdopen(read_fd, "rb") as pipe:
                data = pipe.read()
            exit_code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            try:
                outcome = json.loads(data)
            except ValueError:
                outcome = {"ended": f"nothing (its process exited {exit_code})"}
            if "results" in outcome:
                results.update(outcome["results"])
                continue
            why = f"pytest {' '.join(session['args'])} ended with {outcome['ended']} before its tests ran:\n{_tail(log)}"
            results.update({job["id"]: {"rc": -1, "tests": {}, "output": why} for job in session["jobs"]})
    Path(argv[1]).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
