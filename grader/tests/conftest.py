"""Fixtures of the grader's own tests: the isolation modes this machine can run.

``domains`` (one template per mode and test module: a class graded one student after another) runs
a test once per mode: ``bwrap`` (bubblewrap, as root), ``uid`` (root without user namespaces, as
in Gradescope's and CI's containers) and ``none``; ``isolating`` (the same, per module) leaves ``none`` out. A mode that
cannot run here is skipped with the reason (in CI every mode must run: test_isolation.py).
``shared_domains`` is one template (the best isolation here) for the whole session, for the tests
that do not vary the mode: starting a template imports torch, and the suite must stay quick.

The whole suite (``python -m pytest`` with no path: the README's test command) runs on every core
when pytest-xdist is installed (the ``dev`` extra): most of its time is spent waiting on sandboxes,
subprocesses and time limits. A path, ``-n 0`` or ``-n N`` on the command line decides otherwise.
"""

from __future__ import annotations

import os

import pytest

from grader.domains import Domains
from grader.isolation import bwrap_problem, choose_isolation, uid_problem


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config, "workerinput", {}).get("kata_loadgroup"):  # a worker started by the lines below
        config.option.loadgroup = True  # xdist_group marks keep their tests on one worker
        return
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if (whole_suite and config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and config.getoption("numprocesses", None) is None and not config.getoption("collectonly")
            and not config.getoption("usepdb")):
        workers = len(os.sched_getaffinity(0))
        if workers > 1:  # xdist's own pytest_configure (trylast) starts the workers from these
            config.option.numprocesses = workers
            config.option.dist = "loadgroup"
            config.option.tx = ["popen"] * workers


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Workers take their options from the command line, which did not say loadgroup: tell them."""
    if node.config.option.dist == "loadgroup":
        node.workerinput["kata_loadgroup"] = True


PROBLEMS = {"bwrap": bwrap_problem(), "uid": uid_problem(), "none": None}
MODES = [pytest.param(mode, marks=pytest.mark.skipif(problem is not None, reason=f"{mode} unusable here: {problem}"))
         for mode, problem in PROBLEMS.items()]
ISOLATING = [m for m in MODES if m.values[0] != "none"]


@pytest.fixture(scope="module", params=MODES)
def domains(request):
    with Domains(choose_isolation(request.param)) as d:
        yield d


@pytest.fixture(scope="session")
def shared_domains():
    with Domains(choose_isolation("auto")) as d:
        yield d


@pytest.fixture(scope="module", params=ISOLATING)
def isolating(request):
    with Domains(choose_isolation(request.param)) as d:
        yield d
