"""Run the hidden tests against an untrusted submission without importing it here.

    client = start_worker(submission_dir, domains=domains)  # a domain forked from the template (start=False: on first use)
    outcomes = run_hidden_tests(client)  # pytest here, the student's code in the domain; closes it unless keep_open=True

The hidden tests (``tests/``) run in this process under pytest, with a plugin that sets
``config.kata_impl_factory`` (see ``tests/conftest.py``), so every ``impl`` is a
:class:`~grader.grading.remote_impl.RemoteImpl` talking to the worker; only plain data crosses. Results
come from pytest's reports, never from anything the submission can write.

One pytest session per process: configured and collected once, in a thread of its own that waits
between gradings, and every grading runs its tests there as pytest's own test loop does (as
grader/authoring/forked_pytest.py runs a collected session's tests once per job). A job grading a class
pays pytest's start and the collection once, not for every student (a quarter of the grader's CPU per
grading here: benchmarks/grading_session.py). A Ctrl-C reaches the grading that waits, never pytest: the
grading ends with KeyboardInterrupt, never with a report whose tests not yet run count as failed.

A hostile submission's cost is bounded per test and per exercise (grader/grading/guard.py), and at most
``MAX_STARTS`` worker starts per run.
"""

from __future__ import annotations

import contextlib
import gc
import os
import queue
import threading
from pathlib import Path
from typing import Any, Collection, Iterator, Mapping

from grader.grading.guard import Guard
from grader.grading.preload import attach_preload, preload_of
from grader.grading.results import TestOutcome
from grader.rubric import GROUPS, TESTS_DIR, Rubric, exercise_of_test, load_rubric
from grader.sandbox.client import CALL_TIMEOUT, MEMORY_MB, StudentError, WorkerClient, WorkerFailure
from grader.sandbox.domains import Domains

MAX_STARTS = 12
MESSAGE_LIMIT = 2000
SESSION_END_WAIT = 5.0  # how long a grading waits for a failed session's thread to say why it ended
PYTEST_ARGS = ("-q", "-p", "no:cacheprovider", "-p", "no:timeout", "-p", "no:randomly", "-p", "no:logging",
               # these two call gc.collect() several times per session: 0.27 s each with torch loaded
               "-p", "no:unraisableexception", "-p", "no:threadexception",
               # the session outlives its start: the process's own stderr decides where a crash is told
               "-p", "no:faulthandler",
               "-W", "ignore::UserWarning", "--no-header", "--tb=no", "--continue-on-collection-errors",
               # the session's thread shares the process's stdout and stderr: pytest captures neither
               # (it would take the waiting grader's too); the tests' own output goes to os.devnull
               "--capture=no")


def start_worker(submission_dir: Path, *, call_timeout: float = CALL_TIMEOUT, memory_mb: int = MEMORY_MB,
                 domains: Domains | None = None, substitutes: Mapping[str, Path] | None = None,
                 start: bool = True, review: set[str] | None = None, preload: Collection[str] | None = None,
                 refused: Mapping[str, str] | None = None) -> WorkerClient:
    """A worker for the submission, in a domain of ``domains`` (default: a template of its own, in
    the best isolation this machine offers); returns without waiting for it.

    ``review``: the set the worker's lines for review go into (grader/sandbox/kata_worker/tracing.py),
    shared by a grading's workers. Each domain first imports ``preload`` (default: the rubric's modules);
    ``refused`` (``{module: why}``, whose import broke an earlier worker) fail at once
    (grader/grading/preload.py). ``start=False`` leaves the spawn to the first request (a fork asked before
    the template has torch would wait).
    """
    client = WorkerClient(Path(submission_dir), call_timeout=call_timeout, memory_mb=memory_mb,
                          domains=domains, substitutes=substitutes, max_starts=MAX_STARTS, review=review)
    attach_preload(client, preload, refused)
    return client.start() if start else client


def _message(excinfo: Any) -> str:
    exc = excinfo.value
    if isinstance(exc, WorkerFailure):
        text = str(exc)
    elif isinstance(exc, AssertionError):
        text = str(exc) or "assertion failed"
    elif isinstance(exc, StudentError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 20] + "\n... (trimmed)"
    return text


class _Run:
    """One run of the hidden tests against one worker: what it asks for, and every test's result."""

    def __init__(self, client: WorkerClient, rubric: Rubric, files: frozenset[Path] | None,
                 standins: Collection[str]):
        self.client, self.rubric, self.files = client, rubric, files  # files: the test files to run (None: all)
        self.standins = frozenset(standins)
        self.where = rubric.owner_of
        self.traced = frozenset(rubric.forbidden)  # the names the worker traces (kata_worker/tracing.py)
        self.guard = Guard()
        if preload_of(client) is not None:  # one list of modules whose import broke a worker: the preload's
            self.guard.bad_imports = preload_of(client).refused
        self.results: dict[str, dict[str, Any]] = {}
        self.failed: set[str] = set()  # the exercises with a failing test so far
        self.order: list[str] = []
        self.done = threading.Event()
        self.finished = False  # the session ran every test of the run (not: it ended under it)
        self.cancelled = False  # its grading was interrupted: the tests still to run fail at once

    def wants(self, path: Path) -> bool:
        """Whether the run takes in ``path``: one of its test files, or a folder holding one."""
        return self.files is None or any(f == path or path in f.parents for f in self.files)

    def impl(self, exercise: str) -> Any:
        """The ``impl`` of a test of ``exercise`` (tests/conftest.py)."""
        from grader.grading.remote_impl import RemoteImpl  # imports torch: not before the tests run

        if self.cancelled:
            raise WorkerFailure("not run: the grading was interrupted", "poisoned")
        self.guard.current_exercise = exercise
        self.guard.check_exercise(exercise)
        return RemoteImpl(self.client, self.where, self.guard, self.traced)

    def start_test(self, item: Any) -> None:
        self.guard.start_test(dict(item.user_properties).get("exercise", ""), self.client.call_timeout, self.client)

    def _entry(self, nodeid: str, props: Mapping[str, Any]) -> dict[str, Any]:
        if nodeid not in self.results:
            self.order.append(nodeid)
            self.results[nodeid] = {"exercise": props.get("exercise", ""), "points": float(props.get("points", 0.0)),
                                    "kind": str(props.get("kind", "core")), "passed": None, "message": "",
                                    "duration": 0.0, "reached": set(), "ran": set(),
                                    "device": bool(props.get("device", False))}
        return self.results[nodeid]

    def record(self, report: Any) -> None:
        entry = self._entry(report.nodeid, dict(report.user_properties))
        entry["reached"] |= self.guard.used
        entry["ran"] |= self.guard.ran
        if report.when in ("setup", "call"):
            entry["duration"] += report.duration
            if entry["passed"] is False:
                return
            if report.failed:
                entry["passed"] = False
                entry["message"] = str(report.longrepr)[-MESSAGE_LIMIT:]
                self.fetch_imports(entry["exercise"])  # a failing exercise may be re-graded over its imports
            elif report.skipped:
                entry["passed"] = False
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                entry["message"] = f"skipped: {reason}"
            elif report.when == "call" and report.passed:
                entry["passed"] = True  # passed only with a passing call phase, never by default

    def fetch_imports(self, failing: str = "") -> None:
        """The import edges the worker has seen so far, while it is alive (grader/grading/preload.py): at the
        end (``failing`` empty), and at the first failure of each exercise (a later death would lose them)."""
        if preload_of(self.client) is not None and (not failing or failing not in self.failed):
            self.failed.add(failing)
            preload_of(self.client).fetch(self.client)

    def record_uncollected(self, path: Path, nodeid: str, why: str) -> None:
        exercise = exercise_of_test(path) or ""
        points = self.rubric.exercises[exercise].points if exercise in self.rubric.exercises else 0.0
        entry = self._entry(nodeid, {"exercise": exercise, "points": points})
        entry["passed"] = False
        entry["message"] = f"the hidden tests could not be collected: {why}"

    def outcomes(self) -> list[TestOutcome]:
        return [TestOutcome(nodeid=n, exercise=r["exercise"], max_points=r["points"], passed=r["passed"] is True,
                            message=r["message"] if r["passed"] is not None else "not run: pytest reported no result",
                            duration=r["duration"], kind=r["kind"], reached=tuple(sorted(r["reached"])),
                            ran=tuple(sorted(r["ran"])), device=r["device"])
                for n, r in ((n, self.results[n]) for n in self.order)]


class SessionEnded(RuntimeError):
    """The hidden tests' pytest session ended (a usage error, an internal error): the grading that asked
    cannot be graded (the next grading starts a session of its own)."""


class _Session:
    """The hidden tests of one folder, configured and collected once by pytest in a thread of its own;
    :meth:`run` has that thread run a grading's tests while the caller waits (a pytest plugin)."""

    def __init__(self, tests_dir: Path):
        self.tests_dir = tests_dir
        self.lock = threading.Lock()  # one run at a time
        self.requests: queue.SimpleQueue[_Run | None] = queue.SimpleQueue()
        self.ready = threading.Event()
        self.items: list[Any] = []
        self.uncollected: list[tuple[Path, str, str]] = []  # (path, node id, why) of what could not be collected
        self.current: _Run | None = None
        self.ended = ""  # why the session ended, once it has
        # What pytest and the tests print is nobody's report (a ``--format json`` report is the CLI's stdout):
        # the process's stdout and stderr go here while the session starts (pytest's reporter keeps it) or runs.
        self.sink = open(os.devnull, "w")
        self.thread = threading.Thread(target=self._serve, name="kata-hidden-tests", daemon=True)

    def start(self) -> _Session:
        # The grader's own tensors are tiny; with more threads, OpenMP's spinning fights the worker for the
        # cores (small softmax calls took 3.5 ms instead of 10 us on 2 cores).
        import torch  # costly: only a grading needs it

        torch.set_num_threads(1)
        with self._quiet(), _no_plugin_autoload():
            self.thread.start()
            self._wait(self.ready)
        if self.ended:  # a usage error of the hidden tests: no grading could run
            self.sink.close()
            raise SessionEnded(f"the hidden tests' pytest session ended before its tests ran: {self.ended}")
        return self

    def close(self) -> None:
        self.requests.put(None)
        self.thread.join()
        self.sink.close()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def run(self, run: _Run) -> None:
        with self.lock, self._quiet():
            self.requests.put(run)
            try:
                self._wait(run.done)
            except BaseException:  # Ctrl-C: the session's thread ends the run at once, then waits for the next
                run.cancelled = True
                raise
        if not run.finished:  # pytest's internal error: its thread is ending, and says why
            self.thread.join(SESSION_END_WAIT)
            raise SessionEnded(f"the hidden tests' pytest session ended during a grading: {self.ended}")

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        with contextlib.redirect_stdout(self.sink), contextlib.redirect_stderr(self.sink):
            yield

    def _wait(self, event: threading.Event) -> None:
        while not event.wait(0.5):
            if not self.thread.is_alive():
                raise SessionEnded(f"the hidden tests' pytest session ended: {self.ended}")

    def _serve(self) -> None:
        import pytest  # costly: only a grading needs it

        targets = [str(self.tests_dir / g) for g in GROUPS if (self.tests_dir / g).is_dir()]
        args = [*targets, *PYTEST_ARGS, "--rootdir", str(self.tests_dir.parent), "-c", os.devnull,
                "--confcutdir", str(self.tests_dir)]
        try:
            self.ended = f"pytest exited {pytest.main(args, plugins=[self, _report_hook()])!s}"
        except BaseException as exc:  # noqa: BLE001 - whoever waits is told
            self.ended = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready.set()

    # ---- pytest's hooks, in the session's thread ------------------------------------------
    def pytest_configure(self, config: Any) -> None:
        config.kata_impl_factory = lambda exercise: self.current.impl(exercise)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.uncollected.append((Path(str(report.fspath)), report.nodeid, str(report.longrepr)[-MESSAGE_LIMIT:]))

    def pytest_runtestloop(self, session: Any) -> bool:
        self.items = list(session.items)
        gc.freeze()  # the collection lives as long as the session: no collection walks it again
        self.ready.set()
        while (run := self.requests.get()) is not None:
            self.current = run
            try:
                self._run_tests(session.config, run)
                run.finished = True
            finally:
                self.current = None
                # pytest's reporter keeps every report of its session: a job grading a class would keep them all
                session.config.pluginmanager.get_plugin("terminalreporter").stats.clear()
                run.done.set()
        return True

    def _run_tests(self, config: Any, run: _Run) -> None:
        config.kata_standins = run.standins  # the reference dependents over them (tests/conftest.py)
        for path, nodeid, why in self.uncollected:
            if run.wants(path):
                run.record_uncollected(path, nodeid, why)
        items = [item for item in self.items if run.wants(Path(item.path))]
        for i, item in enumerate(items):  # a cancelled run's tests fail at once (_Run.impl), torn down as usual
            item.ihook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        run.fetch_imports()

    def pytest_runtest_setup(self, item: Any) -> None:
        self.current.start_test(item)

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.current.record(report)


def _report_hook() -> Any:
    import pytest  # costly: only a grading needs it

    class ReportHook:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            """A failure's report holds the exception's text, all a grading keeps of it. pytest's own
            report would first cut and filter the traceback (a stat() of every frame's file, even with
            --tb=no): a quarter of the grader's CPU in a grading that fails most tests. Passes and
            skips (None here) get pytest's own report."""
            excinfo = call.excinfo
            if excinfo is None or isinstance(excinfo.value, (pytest.skip.Exception, BaseExceptionGroup)):
                return None
            return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                                     _message(excinfo), call.when, duration=call.duration, start=call.start,
                                     stop=call.stop, user_properties=item.user_properties)

    return ReportHook()


_shared: _Session | None = None  # the repository's hidden tests, for the process's life
_shared_lock = threading.Lock()


@contextlib.contextmanager
def _session(tests_dir: Path) -> Iterator[_Session]:
    """The session of ``tests_dir``: the repository's ``tests/`` keeps one; another folder (the project's
    own tests build some) gets one for this run only."""
    global _shared
    if tests_dir != TESTS_DIR:
        own = _Session(tests_dir).start()
        try:
            yield own
        finally:
            own.close()
        return
    with _shared_lock:
        if _shared is None or not _shared.alive():
            if _shared is not None:
                _shared.sink.close()  # an ended session's: its thread writes nothing any more
            _shared = _Session(tests_dir).start()
    yield _shared


def run_hidden_tests(worker_or_dir: WorkerClient | Path | str, *, exercises: Collection[str] | None = None,
                     substitutes: Mapping[str, Path] | None = None, call_timeout: float = CALL_TIMEOUT,
                     memory_mb: int = MEMORY_MB, tests_dir: Path = TESTS_DIR, keep_open: bool = False,
                     domains: Domains | None = None) -> list[TestOutcome]:
    """Run the hidden tests (all, or those of ``exercises``) against one submission.

    ``worker_or_dir`` is a client from :func:`start_worker` (then ``substitutes``, ``call_timeout``,
    ``memory_mb`` and ``domains`` were fixed when it was started) or a submission directory. The worker is
    closed afterwards (one run, one worker) unless ``keep_open``: then the caller closes it. The
    modules ``substitutes`` names are stand-ins (a re-grade): the tests' expected values are then
    the reference dependents' over the same stand-ins.
    """
    if isinstance(worker_or_dir, WorkerClient):
        client = worker_or_dir
        if substitutes:
            raise ValueError("pass substitutes to start_worker() when handing over a started worker")
        substitutes = client.substitutes
    else:
        client = start_worker(Path(worker_or_dir), call_timeout=call_timeout, memory_mb=memory_mb,
                              domains=domains, substitutes=substitutes)
    try:
        rubric = load_rubric(tests_dir)
        files = None
        if exercises is not None:
            unknown = set(exercises) - set(rubric.exercises)
            if unknown:
                raise ValueError(f"unknown exercises: {sorted(unknown)}")
            files = frozenset(tests_dir / rubric.exercises[ex].test_file.relative_to(TESTS_DIR) for ex in exercises)
        if client.max_starts is not None:
            client.max_starts = client.starts + MAX_STARTS
        run = _Run(client, rubric, files, substitutes or ())
        if files is None or any(f.is_file() for f in files):
            with _session(tests_dir) as session:
                session.run(run)
    finally:
        if not keep_open:
            client.close()
    return run.outcomes()


@contextlib.contextmanager
def _no_plugin_autoload() -> Iterator[None]:
    """The hidden tests need no third-party pytest plugin; loading them all (hypothesis, anyio, ...)
    cost more than a second per run."""
    before = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = before
