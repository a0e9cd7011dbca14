"""pytest settings for the exercises: bare-name imports and short reports.

* Exercises build on one another (``04_multihead/multihead_wrapper.py`` does
  ``from causal_attention import CausalAttention``) and the public tests load the module under test
  by its bare name (``load("causal_mask")`` in ``kata_checks.py``). This file puts ``exercises/`` and
  its group folders on ``sys.path``, so ``pytest exercises/03_causal``, ``pytest exercises`` and
  ``pytest exercises/03_causal/test_causal_mask.py`` all work from the repository root. The grader's
  worker sets up the same path for your code.
* One public test file per module, every test named after its module:
  ``pytest exercises -k causal_mask`` runs exactly the tests of ``03_causal/causal_mask.py``.
* Every test starts from the same seed (``torch.manual_seed(0)``): its random inputs are the same in every
  run, so that a failed check can compare your result with the known mistakes' results on them
  (``kata_known.py``) and name the one it reproduces. The modules under test are imported once, before
  the first test seeds anything (as the grader does), so a ``print(...)`` or a ``torch.rand(...)`` left
  at the end of your module changes no result; a module that cannot be imported fails only its own tests.
* Short reports (``kata_report.py``): a function you have not written yet fails in one line
  (``NotImplementedError: causal_mask: not written yet -- see ...``), a failed check shows its
  message and the test line it came from, an error your code raised its call, its text and your line
  that raised it; the same failure in several tests of a file is said once. Errors of pytest itself
  keep a short traceback (``--tb=short``; pass ``--tb=long`` yourself for the full one).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GROUPS = ("01_simple_attention", "02_trainable_weights", "03_causal", "04_multihead")

for path in [str(HERE / group) for group in reversed(GROUPS)] + [str(HERE)]:
    if path not in sys.path:
        sys.path.insert(0, path)


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "tbstyle", "auto") == "auto":
        config.option.tbstyle = "short"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failure in the short format of kata_report.py."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None or not report.failed:
        return
    try:
        import kata_report
        from kata_checks import KataCheckFailed

        short = kata_report.short_report(item, call.excinfo, KataCheckFailed)
    except Exception:  # noqa: BLE001 - never hide the original failure behind a reporting bug
        short = None
    if short is not None:
        report.longrepr, report.kata_signature = short


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Before the failures are shown: the same failure in several tests of a file is said once."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        import kata_report

        kata_report.say_repeats_once([*reporter.stats.get("failed", []), *reporter.stats.get("error", [])])


def _modules_under_test(items: list[pytest.Item]) -> list[str]:
    """The modules the collected tests are about, in the tests' order: ``test_causal_mask.py`` -> causal_mask."""
    found: dict[str, None] = {}
    for item in items:
        path = Path(str(item.path))
        module = path.stem.removeprefix("test_")
        if path.stem.startswith("test_") and (path.parent / f"{module}.py").is_file():
            found[module] = None
    return list(found)


@pytest.fixture(scope="session", autouse=True)
def _modules_imported_before_any_seed(request: pytest.FixtureRequest) -> None:
    """Import every module under test once, before the first test seeds: what a module does when imported
    (a notebook's last ``torch.rand``) then shifts no test's random numbers. An import that fails is left to
    the module's own tests, which import it again and say why (``kata_checks.load``). An import stopped by the
    time limit is refused from then on (kata_report.py): its tests fail at once, each saying it the same way,
    and the modules left are imported by their own tests, under their own time limits."""
    for module in _modules_under_test(request.session.items):
        try:
            importlib.import_module(module)
        except (Exception, SystemExit, pytest.skip.Exception):  # noqa: BLE001 - the module's tests report it
            pass
        except pytest.fail.Exception as stopped:  # pytest-timeout's: this import did not finish
            import kata_report

            kata_report.import_did_not_finish(module, stopped)
            return


@pytest.fixture(autouse=True)
def _same_inputs_in_every_run() -> None:
    import torch  # the tests import it anyway; here only once a test runs

    torch.manual_seed(0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """An error that escaped a test is named where a known mistake raises the same (kata_known.py)."""
    outcome = yield
    import kata_known  # beside the checks

    kata_known.name_the_error(outcome)
