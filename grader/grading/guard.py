"""What one hostile submission may cost a run of the hidden tests: a guard that refuses what broke before.

After a timeout in a test of exercise E, E's later tests that reach one of the public names that test
used (``split_heads``) fail at once ("not run: an earlier test of split_heads timed out"), and the tests
of E's other functions still run; a test whose calls together take longer than ``TEST_BUDGET_CALLS``
call timeouts counts as timed out (the grader's own time starting workers and importing modules left
out); once importing a module killed or hung the worker (grader/grading/preload.py), later imports of it
fail at once, here and in the worker; after ``DEATHS_PER_EXERCISE`` worker deaths in an exercise's tests
its other tests are not run. The engine (grader/grading/engine.py) keeps one guard per run.
"""

from __future__ import annotations

import time
from typing import Mapping

from grader.grading.preload import preload_of
from grader.sandbox.client import WorkerClient, WorkerFailure

DEATHS_PER_EXERCISE = 2  # after that many worker deaths in its tests, an exercise's other tests are not run
TEST_BUDGET_CALLS = 4  # one test may spend at most 4 call timeouts in the worker (slow-but-not-hung code)


class Guard:
    """One run's bookkeeping of what the submission broke (see the module docstring)."""

    def __init__(self) -> None:
        self.timed_out: set[tuple[str, str]] = set()  # (exercise, public name) reached by a test that timed out
        self.used: set[str] = set()  # the public names the current test has reached
        self.ran: set[tuple[str, str, str]] = set()  # (public name, kind of operation, route) the current test ran
        self.bad_imports: dict[str, str] = {}
        self.deaths: dict[str, int] = {}
        self.current_exercise = ""
        self.test_deadline: float | None = None
        self.test_budget = 0.0
        self.startup_seconds = 0.0

    def start_test(self, exercise: str, call_timeout: float, client: WorkerClient) -> None:
        self.current_exercise = exercise
        self.used, self.ran = set(), set()
        self.test_budget = TEST_BUDGET_CALLS * call_timeout
        self.test_deadline = time.monotonic() + self.test_budget
        self.startup_seconds = _graders_seconds(client)

    def call_timeout(self, client: WorkerClient) -> float:
        """The client's per-call timeout, cut to what is left of this test's budget (time spent starting
        workers and importing the modules in them during the test, the grader's and not the student's,
        does not count)."""
        if self.test_deadline is None:
            return client.call_timeout
        left = self.test_deadline + (_graders_seconds(client) - self.startup_seconds) - time.monotonic()
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

    def on_trace(self, owner: str, ran: Mapping[str, tuple[str, ...]]) -> None:
        """What a request of the current test ran inside a call of the public name ``owner``."""
        self.ran.update((owner, kind, route) for kind, routes in ran.items() for route in routes)

    def on_failure(self, failure: WorkerFailure, importing: str | None) -> None:
        if importing is not None and failure.kind in ("timeout", "died", "protocol"):
            self.bad_imports[importing] = f"not run: importing {importing} broke the worker earlier ({failure})"
        if failure.kind == "timeout" and self.current_exercise:
            self.timed_out.update((self.current_exercise, name) for name in self.used)
        if failure.kind in ("died", "protocol") and self.current_exercise:
            self.deaths[self.current_exercise] = self.deaths.get(self.current_exercise, 0) + 1


def _graders_seconds(client: WorkerClient) -> float:
    """Seconds the client spent starting domains and importing the modules in them (grader/grading/preload.py)."""
    return client.startup_seconds + getattr(preload_of(client), "seconds", 0.0)
