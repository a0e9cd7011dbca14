"""Hidden tests: ``pytest tests --impl DIR`` (default ``solutions``).

Every test file is ``tests/<group>/test_<module>.py`` and belongs to exercise ``<group>/<module>``;
its points come from ``rubric.json``. Tests reach the implementation only through the ``impl``
fixture (see ``kata_seam.py``). The grader puts its isolated worker behind the same fixture by
setting ``config.kata_impl_factory`` (a callable taking the exercise id) before collection.

``--impl DIR`` imports DIR's code into this process: trusted code only. With a space (not
``--impl=DIR``) pytest also runs ``DIR/conftest.py``: it loads conftest files before this file has
declared the option, taking the option's value for a path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kata_seam import LocalImpl, load_rubric

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default="solutions",
        help="implementation directory laid out like exercises/ (default: solutions)",
    )


def exercise_id(node: pytest.Item) -> str:
    """``03_causal/causal_mask`` for a test in ``tests/03_causal/test_causal_mask.py``."""
    path = Path(str(node.path))
    return f"{path.parent.name}/{path.stem.removeprefix('test_')}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its exercise id and its share of the exercise's points."""
    exercises = load_rubric()["exercises"]
    by_exercise: dict[str, list[pytest.Item]] = {}
    for item in items:
        ex_id = exercise_id(item)
        if ex_id not in exercises:
            raise pytest.UsageError(f"{item.nodeid}: no exercise {ex_id!r} in tests/rubric.json")
        by_exercise.setdefault(ex_id, []).append(item)
    for ex_id, ex_items in by_exercise.items():
        share = exercises[ex_id]["points"] / len(ex_items)
        for item in ex_items:
            item.user_properties.append(("exercise", ex_id))
            item.user_properties.append(("points", share))


_local_impl: LocalImpl | None = None


@pytest.fixture
def impl(request: pytest.FixtureRequest):
    """The implementation under test, exposing the student's functions and classes by name."""
    factory = getattr(request.config, "kata_impl_factory", None)
    if factory is not None:
        return factory(exercise_id(request.node))
    global _local_impl
    if _local_impl is None:
        root = Path(request.config.getoption("--impl"))
        if not root.is_absolute():
            root = (Path(request.config.invocation_params.dir) / root).resolve()
        if not root.is_dir():
            raise pytest.UsageError(f"--impl {root}: no such directory")
        _local_impl = LocalImpl(root)
    return _local_impl
