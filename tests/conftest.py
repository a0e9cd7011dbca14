"""Hidden tests: ``pytest tests --impl DIR`` (default ``solutions``).

Every test file is ``tests/<group>/test_<module>.py`` and belongs to exercise ``<group>/<module>``;
its points come from ``rubric.json``. Every test has exactly one kind marker, ``@pytest.mark.core``
(randomized, against the reference), ``@pytest.mark.printed`` (the documents' printed tensors) or
``@pytest.mark.edge`` (raises, shapes, dtypes, properties); the exercise's points for a kind
(``rubric.json``'s ``kinds``) are split evenly over its tests of that kind, and the grader counts
edge tests in proportion to the core points earned (grader/grading/scoring.py). Tests reach the
implementation only through the ``impl`` fixture (see ``kata_seam.py``). The grader puts its isolated worker behind the same fixture by
setting ``config.kata_impl_factory`` (a callable taking the exercise id) before collection.

A re-grade (grader/grading/scoring.py) runs a dependent exercise's tests with stand-ins (``standins/``) in
place of the student's modules it builds on: the grader sets ``config.kata_standins`` (``--standins
NAMES`` by hand, with an ``--impl`` whose modules of those names are the stand-ins), and the
``reference`` fixture then gives the reference dependent built over the same stand-ins.

``--impl DIR`` imports DIR's code into this process: trusted code only. With a space (not
``--impl=DIR``) pytest also runs ``DIR/conftest.py``: it loads conftest files before this file has
declared the option, taking the option's value for a path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.rubric import exercise_of_test
from kata_seam import TEST_KINDS, LocalImpl, kind_points, load_rubric
from reference import ref

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default="solutions",
        help="implementation directory laid out like exercises/ (default: solutions)",
    )
    parser.addoption(
        "--standins",
        default="",
        help="comma-separated module names whose stand-ins (tests/standins/) the implementation holds (a re-grade)",
    )


DEVICE = "device"  # a test of what a device run shows: charged by the GPU-run check where it runs the module


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{DEVICE}: checks what a device run shows (a mask that follows .to()); "
                                       "the grader leaves it to the GPU-run check where that runs the module (grader/grading/scoring.py)")
    for kind, about in TEST_KINDS.items():
        config.addinivalue_line("markers", f"{kind}: a hidden test of kind {kind}: {about}")


def kind_of(item: pytest.Item) -> str:
    """The kind marker of a hidden test; ``core`` for a test without one (every test in this repository
    has one: grader/tests/test_rubric_fairness.py checks), a usage error for a test with several."""
    kinds = sorted({mark.name for mark in item.iter_markers() if mark.name in TEST_KINDS})
    if len(kinds) > 1:
        raise pytest.UsageError(f"{item.nodeid}: a hidden test has one kind marker of "
                                f"{', '.join('@pytest.mark.' + k for k in TEST_KINDS)}; it has {kinds}")
    return kinds[0] if kinds else "core"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its exercise id, its kind and its share of the points of that kind."""
    exercises = load_rubric()["exercises"]
    by_kind: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        ex_id = exercise_of_test(item.path)
        if ex_id not in exercises:
            raise pytest.UsageError(f"{item.nodeid}: the test file of no exercise in tests/rubric.json")
        kind = kind_of(item)
        if kind_points(exercises[ex_id]).get(kind, 0.0) <= 0:
            raise pytest.UsageError(f"{item.nodeid}: a {kind} test, but tests/rubric.json gives {ex_id}'s {kind} tests no points")
        by_kind.setdefault((ex_id, kind), []).append(item)
    for (ex_id, kind), kind_items in by_kind.items():
        share = kind_points(exercises[ex_id])[kind] / len(kind_items)
        for item in kind_items:
            item.user_properties.append(("exercise", ex_id))
            item.user_properties.append(("kind", kind))
            item.user_properties.append(("points", share))
            item.user_properties.append(("device", item.get_closest_marker(DEVICE) is not None))


_local_impl: LocalImpl | None = None


@pytest.fixture
def reference(request: pytest.FixtureRequest):
    """The reference module of the test's exercise, built over the run's stand-ins (if any): what the
    expected values of a test that builds the exercise's modules come from."""
    standins = getattr(request.config, "kata_standins", None)  # set by the grader's re-grade
    if standins is None:
        standins = filter(None, request.config.getoption("--standins").split(","))
    return ref(exercise_of_test(request.node.path).split("/")[1], standins)


@pytest.fixture
def impl(request: pytest.FixtureRequest):
    """The implementation under test, exposing the student's functions and classes by name."""
    factory = getattr(request.config, "kata_impl_factory", None)
    if factory is not None:
        return factory(exercise_of_test(request.node.path))
    global _local_impl
    if _local_impl is None:
        root = Path(request.config.getoption("--impl"))
        if not root.is_absolute():
            root = (Path(request.config.invocation_params.dir) / root).resolve()
        if not root.is_dir():
            raise pytest.UsageError(f"--impl {root}: no such directory")
        _local_impl = LocalImpl(root)
    return _local_impl


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """An error that escaped a test is named where a known mistake raises the same (kata_known.py)."""
    outcome = yield
    import kata_known  # beside the checks (tests/kata_known.py)

    kata_known.name_the_error(outcome)
