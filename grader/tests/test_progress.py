"""grader.progress (``attention-kata check``) and grader.progress_pytest (its one pytest run): states per
module, test-to-module mapping in both layouts of the public tests, what keeps the run cheap, and the
command line.

The synthetic trees below need no torch (a pytest run of them takes a fraction of a second). The real
public tests decide the states in test_release.py, where the students' copy of this module,
``check_progress.py``, runs in a student release with some reference solutions dropped in.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader import progress, progress_pytest
from grader.rubric import REPO_ROOT

NOT_WRITTEN = "raise NotImplementedError(\"{f}: not written yet -- see exercises/{g}/README.md, section '{m}'\")"


def colour_env() -> dict[str, str]:
    """This environment less this run's PYTEST_ADDOPTS and any NO_COLOR."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.pop("NO_COLOR", None)
    return env


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


CONFTEST = """
    import sys
    from pathlib import Path
    for group in ("g2", "g1"):
        sys.path.insert(0, str(Path(__file__).resolve().parent / group))
"""
MODULES = progress.load_modules([("g1", "alpha"), ("g1", "beta"), ("g2", "gamma"), ("g2", "delta"), ("g2", "eps")])


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """g1: one test file per module (the new layout); g2: one file for the group (the old layout)."""
    _write(tmp_path, {
        "pytest.ini": "[pytest]\n",
        "exercises/conftest.py": CONFTEST,
        "exercises/g1/README.md": "# g1\n\n## alpha\n\nWrite alpha.\n\n## beta\n\nWrite `beta()`: it returns 2.\n"
                                  "Check: `beta() == 2`.\n\n## not_a_module\n\nOther text.\n",
        "exercises/g1/alpha.py": "def alpha():\n    return 1\n",
        "exercises/g1/beta.py": "def beta():\n    " + NOT_WRITTEN.format(f="beta", g="g1", m="beta") + "\n",
        "exercises/g1/test_alpha.py": """
            from alpha import alpha
            def test_one():
                assert alpha() == 1
            def test_two():
                assert alpha() + 1 == 2
        """,
        "exercises/g1/test_beta.py": "from beta import beta\ndef test_b():\n    assert beta() == 2\n",
        "exercises/g2/README.md": "# g2\n\n## gamma\n\nx\n\n## delta\n\ny\n\n## eps\n\nz\n",
        "exercises/g2/gamma.py": "def gamma():\n    return 3\n",
        "exercises/g2/delta.py": "def delta():\n    return 0\n",
        "exercises/g2/eps.py": "from beta import beta\ndef eps():\n    return beta() * 2\n",
        "exercises/g2/test_g2.py": """
            from delta import delta
            from eps import eps
            from gamma import gamma
            import pytest

            def test_gamma_is_three():                 # the name says gamma
                assert gamma() == 3

            def test_delta_of_gamma_is_positive():     # the name says delta, the body tests gamma only
                assert gamma() > 0

            def test_sum_is_four():                    # the name says nothing: the body tests delta
                assert delta() == 4

            def make():
                return delta()

            def test_through_a_helper():               # delta, through a helper of the file
                assert make() == 4

            @pytest.mark.parametrize("n", [1, 2])
            def test_eps_doubles(n):                   # eps, which needs the unwritten beta
                assert eps() == 4
        """,
    })
    return tmp_path / "exercises"


def _states(statuses) -> dict[str, tuple[str, int, int]]:
    return {s.module.name: (s.state, s.passed, s.total) for s in statuses}


def test_states_and_mapping_in_both_layouts(tree: Path):
    run = progress.run_tests(tree)
    statuses, unassigned = progress.judge(MODULES, run)
    assert unassigned == []
    assert _states(statuses) == {
        "alpha": ("done", 2, 2),
        "beta": ("not started", 0, 1),
        "gamma": ("done", 2, 2),
        "delta": ("failing", 0, 2),
        "eps": ("failing", 0, 2),
    }, run.output[-2000:]
    detail = {s.module.name: s.detail for s in statuses}
    assert detail["delta"].startswith("test_sum_is_four: AssertionError") or "assert 0 == 4" in detail["delta"], detail
    assert detail["eps"] == "needs beta (not written yet)"

    text = progress.render(statuses, unassigned, tree, run)
    assert "attention kata: 2/5 modules done" in text
    lines = text.splitlines()
    order = [next(i for i, line in enumerate(lines) if f"/{m.name} " in line) for m in MODULES]
    assert order == sorted(order), "the table must follow the given (chapter) order"
    assert "Next: beta (not started)" in text and "g1/README.md, section '## beta'" in text
    assert "Write `beta()`: it returns 2." in text and "Check: `beta() == 2`." in text
    assert "Other text." not in text and "Write alpha." not in text, "only the next module's section"
    assert "pytest " in text and "g1/test_beta.py" in text
    # a failure is one line in pytest's output: no traceback re-reads the test's source (grader/progress_pytest.py)
    assert "Error" in run.output and "assert delta() == 4" not in run.output, run.output[-2000:]


def test_the_run_is_cheap_one_thread_one_line_per_failure_torch_left_out_of_gc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The pytest subprocess computes on one thread unless told otherwise, reports failures as one line, and
    spares its garbage collector torch's objects (grader/progress_pytest.py says what each saves)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    command, env = progress_pytest.command_and_env(tmp_path / "exercises", tmp_path / "out.json")
    assert env["OMP_NUM_THREADS"] == "1" and "--tb=line" in command
    assert command[command.index("-p") + 1] == "grader.progress_pytest", command  # the plugin: this module
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert progress_pytest.command_and_env(tmp_path / "exercises", tmp_path / "out.json")[1]["OMP_NUM_THREADS"] == "4"
    # the plugin's garbage collector: off while collection imports torch, then on, with what was imported frozen
    frozen = gc.get_freeze_count()
    try:
        progress_pytest.pytest_configure(None)
        assert not gc.isenabled()
        progress_pytest.pytest_collection_finish(None)
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.enable()  # what was frozen stays so, as the grader's own tests leave it (engine.py freezes too)


def test_a_module_that_does_not_import_fails_with_the_reason(tree: Path):
    (tree / "g1" / "alpha.py").write_text("def alpha(:\n")
    statuses, _ = progress.judge(MODULES, progress.run_tests(tree))
    alpha = statuses[0]
    assert alpha.state == "failing" and "test_alpha.py could not be loaded" in alpha.detail, alpha
    assert "SyntaxError" in alpha.detail or "invalid syntax" in alpha.detail, alpha.detail
    assert _states(statuses)["gamma"][0] == "done"


def test_a_stub_whose_tests_trip_over_another_stub_is_not_started(tree: Path):
    """On fresh stubs, weight_transfer's tests fail in SelfAttention_v1 first: still 'not started'."""
    stub = "from beta import beta\ndef eps():\n    beta()\n    " + NOT_WRITTEN.format(f="eps", g="g2", m="eps") + "\n"
    (tree / "g2" / "eps.py").write_text(stub)
    statuses, _ = progress.judge(MODULES, progress.run_tests(tree), tree)
    eps = statuses[-1]
    assert (eps.state, eps.detail) == ("not started", "its tests also need beta"), eps


def test_the_reason_line_is_the_checks_diagnosis_when_it_names_one():
    """The one line a failing module gets is the check's ``likely cause:`` line where it has one, else the message."""
    diagnosed = "called f(x):\n  expected shape (2,): [1, 2]\n  got      shape (2,): [2, 1]\n  likely cause: the mask is transposed"
    assert progress.reason(diagnosed) == "likely cause: the mask is transposed"
    assert progress.reason("called f(x):\n  returned None") == "called f(x): returned None"


def test_all_done_says_so(tree: Path):
    (tree / "g1" / "beta.py").write_text("def beta():\n    return 2\n")
    (tree / "g2" / "delta.py").write_text("def delta():\n    return 4\n")
    run = progress.run_tests(tree)
    statuses, unassigned = progress.judge(MODULES, run)
    assert [s.state for s in statuses] == ["done"] * 5
    text = progress.render(statuses, unassigned, tree, run)
    assert "5/5 modules done" in text and "All 5 modules pass their public tests" in text and "Next:" not in text


# How long the --watch test waits for each table (one pytest run of the tree: a second or two here, ten
# and more under load); its time limit covers both waits, so that a slow machine fails with what it saw.
WATCH_WAIT = 60.0


@pytest.mark.timeout(2 * WATCH_WAIT + 30)
def test_watch_checks_again_when_a_file_changes(tree: Path, tmp_path: Path):
    """--watch: a first table, then a second one after beta.py is saved with a body."""
    env = colour_env()
    env["PYTHONPATH"] = str(REPO_ROOT)
    script = (f"import sys; from grader import progress; "
              f"sys.exit(progress.run_command(progress.argparse.Namespace(exercises=progress.Path({str(tree)!r}), "
              f"watch=True, interval=0.1), progress.load_modules({[(m.group, m.name) for m in MODULES]!r})))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    try:
        first = _read_until(proc, "Watching for changes")
        assert "2/5 modules done" in first, first
        time.sleep(0.3)
        (tree / "g1" / "beta.py").write_text("def beta():\n    return 2\n")
        second = _read_until(proc, "Watching for changes")
        assert "4/5 modules done" in second, second  # beta, and eps that builds on it
    finally:
        proc.kill()
        proc.wait()


def _read_until(proc: subprocess.Popen, marker: str, timeout: float = WATCH_WAIT) -> str:
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            return "".join(lines)
    raise AssertionError("no '" + marker + "' in:\n" + "".join(lines))


def test_when_pytest_cannot_run_its_output_is_shown_and_the_exit_status_is_1(tree: Path):
    (tree.parent / "pytest.ini").write_text("[pytest]\nrequired_plugins = pytest-no-such-plugin\n")
    out = io.StringIO()
    args = argparse.Namespace(exercises=tree, watch=False, interval=1.0)
    assert progress.run_command(args, MODULES, out=out) == 1
    assert "pytest ran no test" in out.getvalue() and "pytest-no-such-plugin" in out.getvalue(), out.getvalue()


# --- the command line ------------------------------------------------------------------------------


def _cli(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=colour_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (("check", "--exercises", "/no/such/folder"), "/no/such/folder: no such folder"),
    (("check", "--bogus"), "unrecognized arguments: --bogus"),
    (("check", "--exercises", "grader"), "is not the exercises folder"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = _cli(*args)
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_student_commands_do_not_import_nbgrader():
    """A student install has no nbgrader (nor nbformat): the grader's student commands must not need them."""
    code = ("import sys\n"
            "for name in ('nbgrader', 'nbformat', 'nbclient', 'matplotlib'):\n"
            "    sys.modules[name] = None  # importing it would raise ImportError\n"
            "import grader.cli, grader.progress, grader.attention_view, grader.authoring.release\n"
            "sys.exit(grader.cli.main(['check', '--help']))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=colour_env(), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "--watch" in result.stdout, result.stderr[-2000:]
