"""Fixtures of the grader's own tests: the isolation modes this machine can run.

``domains`` runs a test once per mode: ``bwrap`` (bubblewrap, as root), ``uid`` (root without user
namespaces, as in Gradescope's and CI's containers) and ``none``; ``isolating`` leaves ``none`` out. A
mode that cannot run here is skipped with the reason (in CI every mode must run: test_isolation.py).
``shared_domains`` is the best isolation here, for the tests that do not vary the mode. All of them
grade in ``templates``: one template per mode for the whole session (a class graded one student
after another), since starting a template imports torch and the suite must stay quick.

The whole suite (``python -m pytest`` with no path: the README's test command) runs on every core
when pytest-xdist is installed (the ``dev`` extra): most of its time is spent waiting on sandboxes,
subprocesses and time limits. A path, ``-n 0`` or ``-n N`` on the command line decides otherwise.
"""

from __future__ import annotations

import compileall
import os
import re
import sys
from pathlib import Path

import pytest

from grader.sandbox.domains import Domains
from grader.sandbox.modes import MODES as ALL_MODES, choose_isolation
from support import ISOLATING, MODES

GRADER_DIR = Path(__file__).resolve().parents[1]


# Test modules whose tests share an expensive module-scoped fixture (a graded class, the nbgrader
# course, the forked pytest runs: split over two workers, each would build it), and a test whose
# attacker writes to the host's /tmp while its other mode asserts it is clean: under pytest-xdist each
# (module, or module::test) runs whole on one worker.
# Every other test is scheduled on its own, but for those of the modes after the best (uid, none): all tests
# of such a mode run on one worker (MODE_SCOPES), so that only one worker starts a template of that mode (2
# to 4 s of CPU, and more where an attack kills it; the best mode's, bwrap's, is the shared_domains one that
# every worker starts anyway). The uid chain is about 35 s of a run's 140. (xdist's own xdist_group marks do
# nothing under pytest 9: xdist 3.8 renames node ids through an attribute pytest 9 no longer reads.)
MODE_SCOPES = {name: f"mode {name}" for name in list(ALL_MODES)[1:]}
ONE_WORKER = {
    "test_batch.py": "batch",
    "test_nbgrader_course.py": "nbgrader_course",
    "test_hidden_tests.py": "hidden_runs",
    "test_book_variants.py": "hidden_runs",  # hidden_runner.proof_runs() runs both modules' runs at once
    "test_public_tests.py": "public_runs",  # public_runner caches its runs for both files
    "test_exercises.py": "public_runs",
    "test_isolation_domain.py::test_a_class_graded_one_after_another": MODE_SCOPES["uid"],  # its uid
    "test_sandbox.py::test_no_network_under_bwrap": MODE_SCOPES["none"],  # it grades in none mode too
    "test_gradebook.py": "gradebook",
    "test_house.py": "house",  # its checks share one parse of the project's every module (2 CPU-s a worker)
}
HEAVY_SCOPES = {scope for scope in ONE_WORKER.values() if not scope.startswith("mode ")} - {"house"}
# Tests whose attack kills their mode's template (in a mode without a uid of its own, none, the student's
# code runs as this user and may kill its parent): run last, after every other test of that mode, so that
# none of them has to start a new template (3 s of CPU).
KILL_THEIR_TEMPLATE = tuple(f"test_engine.py::test_hostile_submission[{name}-kill_parent]"
                            for name, mode in ALL_MODES.items() if not mode.own_uid)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did all of this
        return
    # The suite starts a hundred and more Pythons that import the grader (CLI runs, jobs, templates).
    # Where PYTHONDONTWRITEBYTECODE is set (as on this project's machines) none of them may write its
    # bytecode, and each compiled the grader anew (0.08 s of CPU): compile it once, here (not its tests).
    compileall.compile_dir(GRADER_DIR, quiet=2, rx=re.compile(r"/grader/tests/"))
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (whole_suite and config.pluginmanager.hasplugin("xdist")
            and config.getoption("numprocesses", None) is None and not config.getoption("collectonly")
            and not config.getoption("usepdb")):
        workers = len(os.sched_getaffinity(0))
        if workers > 1:  # xdist's own pytest_configure (trylast) starts the workers from these
            config.option.numprocesses = workers
            config.option.dist = "load"
            config.option.tx = ["popen"] * workers


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Collect with bytecode allowed: pytest keeps each test module's assertion-rewritten code in
    ``__pycache__`` only where Python may write bytecode (it reads what is there in any case). Under
    PYTHONDONTWRITEBYTECODE every pytest process (each xdist worker, each run of the inner loop)
    rewrote every test module again: 4 to 5 s of CPU of its 9 to 11 s of collection."""
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved


# pyproject's `timeout = 10` is the students' guard against a hang in their code; a grader test with no
# limit of its own gets GRADER_TEST_TIMEOUT instead, and one with its own (sized on an idle machine) gets
# HANG_GUARD_SLACK times it: hang guards that a busy CI machine (load 15 here: a module's forked runs took
# 3 to 4 times as long) never trips. The grader's own time limits are tested by what they say, not by these.
GRADER_TEST_TIMEOUT = 120
HANG_GUARD_SLACK = 3


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.nodeid.endswith(KILL_THEIR_TEMPLATE))  # stable: the others keep their order
    for item in items:
        if item.path.is_relative_to(GRADER_DIR / "tests"):
            own = item.get_closest_marker("timeout")
            limit = own.args[0] * HANG_GUARD_SLACK if own else GRADER_TEST_TIMEOUT
            item.add_marker(pytest.mark.timeout(max(limit, GRADER_TEST_TIMEOUT)), append=False)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Each entry of ONE_WORKER and of MODE_SCOPES on one worker (the largest first), every other test alone."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, test = nodeid.partition("::")
            module = path.rsplit("/", 1)[-1]
            name, _, params = test.partition("[")
            mode = next((MODE_SCOPES[p] for p in params.rstrip("]").split("-") if p in MODE_SCOPES), None)
            return ONE_WORKER.get(f"{module}::{name}") or ONE_WORKER.get(module) or mode or nodeid

        def _assign_work_unit(self, node) -> None:
            # xdist hands out the scopes with the most tests first; ONE_WORKER's scopes hold the costly module
            # fixtures (a class graded, the nbgrader course, 60 forked runs) in few tests: started last, one of
            # them is the run's tail while the other worker idles. Start them first.
            heavy = next((scope for scope in self.workqueue if scope in HEAVY_SCOPES), None)
            if heavy is not None:
                self.workqueue.move_to_end(heavy, last=False)
            super()._assign_work_unit(node)

    return OneWorkerModules(config, log)




@pytest.fixture(scope="session")
def templates():
    """``templates(mode)``: this test process's one template of that mode (started on first use).

    Starting a template imports torch (about 2 s); one per mode for the whole session keeps the suite
    quick, and every test that grades in it is one more student of a class graded one after another:
    each must find the domain as if no earlier test had run (what test_isolation.py attacks)."""
    started: dict[str, Domains] = {}

    def template(mode: str) -> Domains:
        isolation = choose_isolation(mode)
        if isolation.mode not in started:
            started[isolation.mode] = Domains(isolation)
        return started[isolation.mode]

    yield template
    for d in started.values():
        d.close()


def _left_clean(domains: Domains):
    yield domains
    assert not domains.survivors, f"a grading left processes of the student's uid behind: {domains.survivors}"


@pytest.fixture(params=MODES)
def domains(request, templates):
    yield from _left_clean(templates(request.param))


@pytest.fixture(scope="session")
def shared_domains(templates) -> Domains:
    return templates("auto")


@pytest.fixture(params=ISOLATING)
def isolating(request, templates):
    yield from _left_clean(templates(request.param))


@pytest.fixture
def no_class_summary(monkeypatch):
    """score_all in this process without its class-level outputs (the summary's matplotlib plots, about 0.5 s a run):
    for the tests of the batch's bookkeeping, which run it again and again (their pytestmark names it);
    test_summary.py tests the page."""
    monkeypatch.setattr("grader.classroom.class_outputs.CLASS_OUTPUTS", {})
