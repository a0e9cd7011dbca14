"""Run the hidden tests against an untrusted submission without importing it here.

    client = start_worker(submission_dir, domains=domains)  # a domain forked from the template (start=False: on first use)
    outcomes = run_hidden_tests(client)  # pytest here, the student's code in the domain; closes it unless keep_open=True

The hidden tests (``tests/``) run in-process under ``pytest.main`` with a plugin that sets
``config.kata_impl_factory`` (see ``tests/conftest.py``), so every ``impl`` is a
:class:`~grader.grading.remote_impl.RemoteImpl` talking to the worker; only plain data crosses. Results
come from pytest's reports, never from anything the submission can write.

Bounding a hostile submission's cost: after a timeout in a test of exercise E, E's later tests that
reach one of the public names that test used (``split_heads``) fail at once ("not run: an earlier
test of split_heads timed out"), and the tests of E's other functions still run; a test whose calls together take
longer than ``TEST_BUDGET_CALLS`` call timeouts counts as timed out; once importing a module killed
or hung the worker, later imports of that module fail at once with the same message; after
``DEATHS_PER_EXERCISE`` worker deaths in an exercise's tests its other tests are not run; at most
``MAX_STARTS`` worker starts per run.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import time
from pathlib import Path
from typing import Any, Collection, Mapping

from grader.grading.results import TestOutcome
from grader.rubric import GROUPS, TESTS_DIR, Rubric, exercise_of_test, load_rubric
from grader.sandbox.client import CALL_TIMEOUT, MEMORY_MB, StudentError, WorkerClient, WorkerFailure
from grader.sandbox.domains import Domains

MAX_STARTS = 12
DEATHS_PER_EXERCISE = 2  # after that many worker deaths in its tests, an exercise's other tests are not run
TEST_BUDGET_CALLS = 4  # one test may spend at most 4 call timeouts in the worker (slow-but-not-hung code)
MESSAGE_LIMIT = 2000


def start_worker(submission_dir: Path, *, call_timeout: float = CALL_TIMEOUT, memory_mb: int = MEMORY_MB,
                 domains: Domains | None = None, substitutes: Mapping[str, Path] | None = None,
                 start: bool = True) -> WorkerClient:
    """A worker for the submission, in a domain of ``domains`` (default: a template of its own, in
    the best isolation this machine offers); returns without waiting for it.

    ``start=False`` leaves the spawn to the first request: asking for a fork before the template has
    imported torch would wait for it here.
    """
    client = WorkerClient(Path(submission_dir), call_timeout=call_timeout, memory_mb=memory_mb,
                          domains=domains, substitutes=substitutes, max_starts=MAX_STARTS)
    return client.start() if start else client


class _Guard:
    """Per-run poison bookkeeping (see the module docstring)."""

    def __init__(self) -> None:
        self.timed_out: set[tuple[str, str]] = set()  # (exercise, public name) reached by a test that timed out
        self.used: set[str] = set()  # the public names the current test has reached
        self.bad_imports: dict[str, str] = {}
        self.deaths: dict[str, int] = {}
        self.current_exercise = ""
        self.test_deadline: float | None = None
        self.test_budget = 0.0
        self.startup_seconds = 0.0

    def start_test(self, exercise: str, call_timeout: float, client: WorkerClient) -> None:
        self.current_exercise = exercise
        self.used = set()
        self.test_budget = TEST_BUDGET_CALLS * call_timeout
        self.test_deadline = time.monotonic() + self.test_budget
        self.startup_seconds = client.startup_seconds

    def call_timeout(self, client: WorkerClient) -> float:
        """The client's per-call timeout, cut to what is left of this test's budget (time spent starting
        workers during the test, the grader's and not the student's, does not count)."""
        if self.test_deadline is None:
            return client.call_timeout
        left = self.test_deadline + (client.startup_seconds - self.startup_seconds) - time.monotonic()
        if left <= 0:
            raise WorkerFailure(f"timed out: this test ran past its time budget of {self.test_budget:g} s", "timeout")
        return min(client.call_timeout, left)

    def check_exercise(self, exercise: str) -> None:
        if self.deaths.get(exercise, 0) >= DEATHS_PER_EXERCISE:
            raise WorkerFailure(f"not run: the worker died in {DEATHS_PER_EXERCISE} earlier tests of this exercise",
                                "poisoned")

    def check_use(self, name: str, module: str) -> None:
        """Before a test reaches the public ``name`` of ``module`` (grader/grading/remote_impl.py)."""
        if module in self.bad_imports:
            raise WorkerFailure(self.bad_imports[module], "poisoned")
        if (self.current_exercise, name) in self.timed_out:
            raise WorkerFailure(f"not run: an earlier test of {name} timed out", "poisoned")
        self.used.add(name)

    def on_failure(self, failure: WorkerFailure, importing: str | None) -> None:
        if importing is not None and failure.kind in ("timeout", "died", "protocol"):
            self.bad_imports[importing] = f"not run: importing {importing} broke the worker earlier ({failure})"
        if failure.kind == "timeout" and self.current_exercise:
            self.timed_out.update((self.current_exercise, name) for name in self.used)
        if failure.kind in ("died", "protocol") and self.current_exercise:
            self.deaths[self.current_exercise] = self.deaths.get(self.current_exercise, 0) + 1


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


class _Plugin:
    def __init__(self, client: WorkerClient, where: Mapping[str, str], guard: _Guard, rubric: Rubric,
                 standins: Collection[str]):
        self.client, self.where, self.guard, self.rubric = client, where, guard, rubric
        self.standins = frozenset(standins)
        self.results: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []

    def pytest_configure(self, config: Any) -> None:
        config.kata_impl_factory = self.factory
        config.kata_standins = self.standins  # the reference dependents over them (tests/conftest.py)

    def factory(self, exercise: str) -> Any:
        from grader.grading.remote_impl import RemoteImpl  # imports torch: not before the tests run

        self.guard.current_exercise = exercise
        self.guard.check_exercise(exercise)
        return RemoteImpl(self.client, self.where, self.guard)

    def pytest_runtest_setup(self, item: Any) -> None:
        self.guard.start_test(dict(item.user_properties).get("exercise", ""), self.client.call_timeout, self.client)

    def _entry(self, nodeid: str, props: Mapping[str, Any]) -> dict[str, Any]:
        if nodeid not in self.results:
            self.order.append(nodeid)
            self.results[nodeid] = {"exercise": props.get("exercise", ""), "points": float(props.get("points", 0.0)),
                                    "kind": str(props.get("kind", "core")), "passed": None, "message": "",
                                    "duration": 0.0, "reached": set(), "device": bool(props.get("device", False))}
        return self.results[nodeid]

    def pytest_runtest_logreport(self, report: Any) -> None:
        entry = self._entry(report.nodeid, dict(report.user_properties))
        entry["reached"] |= self.guard.used
        if report.when in ("setup", "call"):
            entry["duration"] += report.duration
            if entry["passed"] is False:
                return
            if report.failed:
                entry["passed"] = False
                entry["message"] = getattr(report, "kata_message", None) or str(report.longrepr)[-MESSAGE_LIMIT:]
            elif report.skipped:
                entry["passed"] = False
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                entry["message"] = f"skipped: {reason}"
            elif report.when == "call" and report.passed:
                entry["passed"] = True  # passed only with a passing call phase, never by default

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            exercise = exercise_of_test(str(report.fspath)) or ""
            points = self.rubric.exercises[exercise].points if exercise in self.rubric.exercises else 0.0
            entry = self._entry(report.nodeid, {"exercise": exercise, "points": points})
            entry["passed"] = False
            entry["message"] = f"the hidden tests could not be collected: {str(report.longrepr)[-MESSAGE_LIMIT:]}"

    def outcomes(self) -> list[TestOutcome]:
        return [TestOutcome(nodeid=n, exercise=r["exercise"], max_points=r["points"], passed=r["passed"] is True,
                            message=r["message"] if r["passed"] is not None else "not run: pytest reported no result",
                            duration=r["duration"], kind=r["kind"], reached=tuple(sorted(r["reached"])),
                            device=r["device"])
                for n, r in ((n, self.results[n]) for n in self.order)]


def _report_hook() -> Any:
    import pytest  # costly: only a grading needs it

    class ReportHook:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any):
            outcome = yield
            report = outcome.get_result()
            if call.excinfo is not None and report.failed:
                report.kata_message = _message(call.excinfo)

    return ReportHook()


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
    import pytest  # costly: only a grading needs it

    if isinstance(worker_or_dir, WorkerClient):
        client = worker_or_dir
        if substitutes:
            raise ValueError("pass substitutes to start_worker() when handing over a started worker")
        substitutes = client.substitutes
    else:
        client = start_worker(Path(worker_or_dir), call_timeout=call_timeout, memory_mb=memory_mb,
                              domains=domains, substitutes=substitutes)
    rubric = load_rubric(tests_dir)
    where = rubric.owner_of
    if client.max_starts is not None:
        client.max_starts = client.starts + MAX_STARTS
    plugin = _Plugin(client, where, _Guard(), rubric, set(substitutes or ()))
    if exercises is None:
        targets = [str(tests_dir / g) for g in GROUPS if (tests_dir / g).is_dir()]
    else:
        unknown = set(exercises) - set(rubric.exercises)
        if unknown:
            raise ValueError(f"unknown exercises: {sorted(unknown)}")
        files = (tests_dir / rubric.exercises[ex].test_file.relative_to(TESTS_DIR) for ex in exercises)
        targets = [str(f) for f in files if f.is_file()]
    # The grader's own tensors are tiny; with more threads, OpenMP's spinning fights the worker for the
    # cores (small softmax calls took 3.5 ms instead of 10 us on 2 cores).
    import torch  # costly: only a grading needs it

    torch.set_num_threads(1)
    # torch's objects are long-lived: keep the collector from walking them on every full collection.
    gc.freeze()
    args = [*targets, "-q", "-p", "no:cacheprovider", "-p", "no:timeout", "-p", "no:randomly", "-p", "no:logging",
            # these two call gc.collect() several times per session: 0.27 s each with torch loaded
            "-p", "no:unraisableexception", "-p", "no:threadexception",
            "--rootdir", str(tests_dir.parent), "-c", os.devnull, "--confcutdir", str(tests_dir),
            "-W", "ignore::UserWarning", "--no-header", "--tb=no", "--continue-on-collection-errors"]
    try:
        if targets:
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), _no_plugin_autoload():
                pytest.main(args, plugins=[plugin, _report_hook()])
    finally:
        if not keep_open:
            client.close()
    return plugin.outcomes()


@contextlib.contextmanager
def _no_plugin_autoload():
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

