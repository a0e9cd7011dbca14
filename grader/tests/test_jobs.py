"""score-all's jobs (grader/classroom/jobs.py): a killed score-all leaves nothing running, in every isolation mode;
in uid mode, one job's student cannot stop another job's clean-up."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader.rubric import REPO_ROOT
from grader.sandbox.modes import UID_BASE, reap
from grader.sandbox.reaper import processes_of, running_as
from support import ISOLATING, fake_class, venv_env

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

# A student whose attention_scores forks a child, and both sleep: a grading that would go on for minutes.
SLEEPER = """import os, time


def attention_scores(inputs, query):
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
    time.sleep(600)


attention_score_matrix = attention_scores
"""


def _children(pid: int) -> list[int]:
    children = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children += [int(child) for child in f.read().split()]
    except OSError:
        pass
    return children


def _descendants(pid: int) -> dict[int, str]:
    """{pid: start time} of ``pid``, its children and their children (the host's pids)."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        current = todo.pop()
        start = _start_time(current)
        if start is not None and current not in found:
            found[current] = start
            todo += _children(current)
    return found


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _running(processes: dict[int, str]) -> list[int]:
    """The ones still running (the same process: the same start time; a zombie has ended)."""
    alive = []
    for pid, start in processes.items():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[19] == start and fields[0] != "Z":
            alive.append(pid)
    return alive


def _sleepers(uid: int) -> list[int]:
    """The processes of ``uid`` asleep in a timed sleep (the kernel function they wait in)."""
    found = []
    for pid in running_as(uid):
        try:
            with open(f"/proc/{pid}/wchan") as f:
                if "nanosleep" in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def _python_start_seconds() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
    return time.monotonic() - started


@pytest.mark.parametrize("sandbox", [p for p in ISOLATING])
def test_a_killed_score_all_leaves_no_process(tmp_path: Path, sandbox: str) -> None:
    """kill -9 of score-all while its job grades a student sleeping in a call (and in a child it forked):
    the job, its template (with bubblewrap: the sandbox) and every process of the student's uid are
    gone within about two seconds (the job's lifeline, grader/classroom/jobs.py), not when the call times out;
    so is the job's folder, with the scratch folder of the grading it was in."""
    klass = fake_class(tmp_path / "class", {})
    (klass / "sleeper" / "01_simple_attention").mkdir(parents=True)
    (klass / "sleeper" / "01_simple_attention" / "attention_scores.py").write_text(SLEEPER)
    proc = subprocess.Popen([sys.executable, "-m", "grader", "score-all", str(klass), "--csv", str(tmp_path / "g.csv"),
                             "--sandbox", sandbox, "--gpu", "skip", "--jobs", "1", "--timeout", "600"],
                            cwd=REPO_ROOT, env=venv_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tree: dict[int, str] = {}
    uid = job = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            jobs = _children(proc.pid)  # the job (the template is the job's child)
            if jobs:
                job = jobs[0]
                uid = UID_BASE + job
                if len(_sleepers(uid)) == 2:  # the worker and its fork, in the sleeping call
                    break
            time.sleep(0.05)
        assert proc.poll() is None and uid is not None and len(_sleepers(uid)) == 2, proc.stderr.read()
        tree = _descendants(proc.pid)
        tree.pop(proc.pid)
        # The job's teardown starts one Python (the uid's clean-up) and kills: a loaded machine gets longer.
        limit = max(2.0, 20 * _python_start_seconds())
        proc.kill()
        killed = time.monotonic()
        proc.wait()
        while time.monotonic() - killed < limit and (_running(tree) or processes_of(uid)):
            time.sleep(0.02)
        assert not _running(tree) and not processes_of(uid), (
            f"{time.monotonic() - killed:.1f} s after the kill: running {_running(tree)}, the uid's {processes_of(uid)}")
        assert not list(Path(tempfile.gettempdir()).glob(f"kata-job-{job}-*")), "the killed job left its folder"
    finally:
        proc.kill()
        proc.wait()
        for pid in [*_running(tree), *(running_as(uid) if uid is not None else [])]:
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (two uids of their own)")
def test_a_concurrent_students_folders_never_stop_a_clean_up() -> None:
    """uid mode: two jobs' students share /tmp. One leaves a chain of 3000 folders there (deeper than
    Python's recursion and than a path may be long); the other job's clean-up completes and leaves it,
    and its own clean-up then removes the whole chain."""
    mine, theirs = UID_BASE - 8192 - os.getpid() % 4096, UID_BASE + 0x10000 + os.getpid() % 4096
    chain = f"/tmp/kata-chain-{theirs}"
    code = f"import os\nos.mkdir({chain!r}); os.chdir({chain!r})\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n"
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True, user=theirs, group=theirs, extra_groups=[],
                   cwd="/", env={"PATH": "/usr/bin:/bin"})
    try:
        reap(mine)
        assert os.path.isdir(chain)
        reap(theirs)
        assert not os.path.lexists(chain)
    finally:
        subprocess.run(["rm", "-rf", chain], check=False)
