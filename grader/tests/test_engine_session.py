"""The hidden tests' one pytest session per process (grader/grading/engine.py): a Ctrl-C ends the grading
it interrupts, and the next grading in the same process is whole.

The session's tests run in a thread of their own while the grading waits. Before, pytest ran them in
the grader's main thread and took a Ctrl-C for the end of its own session: the grading went on, and
``python -m grader score`` printed (or wrote with ``--json``) a report that counted every test not yet
run as failed ("not run: pytest reported no result"), and exited 0. A session that could not run the
hidden tests at all (a usage error) ended the same way: no test run, and nothing said.
"""

from __future__ import annotations

import _thread
import gc
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from grader.grading.engine import SessionEnded, run_hidden_tests
from grader.rubric import SOLUTIONS_DIR, TESTS_DIR
from support import build_submission

SCORES = "01_simple_attention/attention_scores"
# The student's functions say when the hidden tests first reach them (no isolation: the file is the host's),
# then take a second: the grading waits on them when the Ctrl-C comes (it waits in steps of 0.5 s).
SLOW = '''
import pathlib as _pathlib, time as _time

def _announced(function):
    def slow(*args, **kwargs):
        marker = _pathlib.Path({marker!r})
        if not marker.exists():
            marker.touch()
            _time.sleep(1.0)
        return function(*args, **kwargs)
    return slow

attention_scores = _announced(attention_scores)
attention_score_matrix = _announced(attention_score_matrix)
'''


def _interrupt_when(marker: Path) -> threading.Thread:
    """A Ctrl-C in the main thread once ``marker`` exists (the hidden tests are running)."""
    def watch() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["none"])  # the host's side of a grading: the same in every mode
def test_ctrl_c_ends_the_grading_and_the_next_grading_is_whole(tmp_path: Path, templates, mode: str) -> None:
    solutions = build_submission("solutions", tmp_path)
    before = run_hidden_tests(solutions, domains=templates(mode), exercises=[SCORES])
    sub = build_submission("solutions_copy", tmp_path)
    marker = tmp_path / "reached"
    module = sub / "01_simple_attention" / "attention_scores.py"
    module.write_text(module.read_text() + SLOW.format(marker=str(marker)))
    # Ctrl-C as a terminal's SIGINT reaches a grader (a pytest-xdist worker, which runs this, ignores it)
    before_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        watcher = _interrupt_when(marker)
        with pytest.raises(KeyboardInterrupt):
            run_hidden_tests(sub, domains=templates(mode), exercises=[SCORES])
            watcher.join()  # the interrupt came after the grading: it must not reach the next line
        watcher.join()
    finally:
        signal.signal(signal.SIGINT, before_handler)

    after = run_hidden_tests(solutions, domains=templates(mode), exercises=[SCORES])
    assert [o.nodeid for o in after] == [o.nodeid for o in before] and len(before) > 1
    assert all(o.passed for o in after), [(o.nodeid, o.message) for o in after if not o.passed]


@pytest.mark.parametrize("mode", ["none"])
def test_hidden_tests_pytest_refuses_end_the_grading_with_the_reason(tmp_path: Path, templates, mode: str) -> None:
    """A test file of no exercise (tests/conftest.py refuses it: a usage error) is the grader's mistake:
    the grading fails, saying so and pytest's exit status, where it once scored 0 from no tests at all."""
    tests = tmp_path / "tests"
    shutil.copytree(TESTS_DIR / "standins", tests / "standins")
    for name in ("conftest.py", "kata_seam.py", "reference.py", "rubric.json"):
        shutil.copy(TESTS_DIR / name, tests / name)
    (tests / "01_simple_attention").mkdir()
    (tests / "01_simple_attention" / "test_of_no_exercise.py").write_text("def test_it(impl):\n    pass\n")
    with pytest.raises(SessionEnded, match="ended before its tests ran: pytest exited"):
        run_hidden_tests(SOLUTIONS_DIR, tests_dir=tests, domains=templates(mode))


@pytest.mark.parametrize("mode", ["none"])
def test_a_process_grading_student_after_student_keeps_no_earlier_report(tmp_path: Path, templates, mode: str) -> None:
    """A score-all job grades its share of the class in one session: what pytest keeps of a grading (its
    reporter kept every report of the session) must not grow with the number of students graded."""
    from _pytest.reports import TestReport

    stubs = SOLUTIONS_DIR.parent / "exercises"

    def reports_kept() -> int:
        gc.collect()  # what is only garbage does not count
        return sum(isinstance(o, TestReport) for o in gc.get_objects())

    counts = []
    for _ in range(3):
        failed = run_hidden_tests(stubs, domains=templates(mode), exercises=[SCORES])
        assert failed and not any(o.passed for o in failed)
        del failed
        counts.append(reports_kept())
    assert counts[2] <= counts[1], counts
