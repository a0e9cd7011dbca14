"""A domain's memory is bounded in all, in every isolating mode this machine runs, under each bound it
allows: its own cgroup where one can be made here (grader/sandbox/cgroups.py), and the process count
times the per-process limit where none can (simulated here by turning the cgroup off, as CI's and
Gradescope's containers have none). A domain that forks allocators is stopped with its limit named,
the classmate graded next gets full marks, and nothing of the domain, its cgroup included, is left.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.remote_impl import RemoteImpl
from grader.rubric import load_rubric
from grader.sandbox.cgroups import PREFIX, MemoryBound, cgroup_name, find_bound, remove_orphans
from grader.sandbox.client import WorkerClient, WorkerFailure
from grader.sandbox.domains import Domains
from grader.sandbox.reaper import running_as
from support import SOLUTIONS, WHERE, toy

pytestmark = pytest.mark.timeout(300)
HERE = find_bound()
BOUNDS = [pytest.param("cgroup", marks=pytest.mark.skipif(not HERE.parents, reason=f"no cgroup here: {HERE.why}")),
          "rlimits"]
LIMITS = {"call_timeout": 5.0, "memory_mb": 256}  # the test_engine.py attacks' allowance: quick to fill


@pytest.fixture(params=BOUNDS)
def bounded(request, isolating: Domains, monkeypatch) -> Domains:
    """The mode's shared domains under one bound: the machine's cgroup, or none (as where none can be made)."""
    if request.param == "rlimits":
        monkeypatch.setattr(isolating, "isolation",
                            replace(isolating.isolation, memory=MemoryBound("rlimits", why="turned off by the test")))
    return isolating


def call(domains: Domains, tmp_path: Path, source: str):
    with WorkerClient(toy(tmp_path / "sub", source), domains=domains, **LIMITS) as client:
        return RemoteImpl(client, WHERE).attention_scores()


def left_cgroups() -> list[Path]:
    """The domains' cgroups of this process still on disk."""
    return [folder for parent in HERE.parents for folder in parent.glob(cgroup_name(os.getpid(), "*"))]


# Forks up to 4 children, each filling memory until it is refused and then holding it; once every
# child has reported (or died), fills memory itself. Raises MemoryError saying what the children held.
FORK_AND_FILL = """import os, time

def fill():
    held = []
    try:
        while True:
            held.append(bytearray(16 * 2**20))
    except MemoryError:
        return held

def attention_scores():
    r, w = os.pipe()
    kids = 0
    for _ in range(4):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.close(r)
            held = fill()
            os.write(w, b"%d " % (16 * len(held)))
            os.close(w)
            time.sleep(120)
            os._exit(0)
        kids += 1
    os.close(w)
    reports = b""
    while chunk := os.read(r, 4096):
        reports += chunk
    mine = fill()
    raise MemoryError(f"held {sum(map(int, reports.split()))} MB in {kids} children")
"""


def test_a_domain_that_forks_allocators_is_stopped_alone(bounded: Domains, tmp_path: Path) -> None:
    """Stopped with its limit named (a cgroup's, for the domain in all; else each process's, and the
    process count holds the children to the rest of the uid's budget); the classmate graded next, in
    the same template, gets full marks, and the report names the bound."""
    bounded.warm_up()
    template = bounded._template.proc.pid  # the other domains' parent: the kernel must stop this domain alone
    with pytest.raises((WorkerFailure, MemoryError)) as stopped:
        call(bounded, tmp_path, FORK_AND_FILL)
    assert bounded._template.alive() and bounded._template.proc.pid == template
    message = str(stopped.value)
    if bounded.isolation.memory.parents:
        assert isinstance(stopped.value, WorkerFailure), message
        total = LIMITS["memory_mb"] + 512
        assert f"went over its memory limit ({total} MB for all its processes together)" in message, message
    else:
        assert f"over the memory limit: {LIMITS['memory_mb']} MB of address space per process" in message, message
        held, kids = map(int, re.search(r"held (\d+) MB in (\d+) children", message).groups())
        assert 1 <= kids <= bounded.isolation.nproc - 2  # the worker's own two threads count too
        assert held <= kids * LIMITS["memory_mb"], message
    assert not running_as(bounded.isolation.uid) and not left_cgroups()
    exercise = next(iter(load_rubric().exercises.values()))
    classmate = grade(SOLUTIONS, GradeOptions(gpu="skip", exercises=(exercise.id,), **LIMITS), bounded)
    assert classmate.exercises[exercise.id].score == exercise.points, classmate.exercises[exercise.id].message
    assert bounded.isolation.memory_line(LIMITS["memory_mb"]) in classmate.warnings
    assert not left_cgroups()


# What a student would try against the cgroups: move itself out (into its parent's or the root's
# cgroup), raise or turn off its own limits (oom_kill_disable would hang the domain instead of stopping
# it), set a release agent (run as root), read a domain's memory files, use a descriptor left open.
ESCAPE = """import os

def attention_scores():
    done, own = [], {}
    for line in open("/proc/self/cgroup").read().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            own[c] = path
    mounts = [(l.split()[1], l.split()[3]) for l in open("/proc/self/mounts") if l.split()[2].startswith("cgroup")]
    for point, options in mounts:
        path = next((p for c, p in own.items() if c and c in options.split(",")), own.get(""))
        for folder in {point + path, point + os.path.dirname(path), point}:
            for name, text in [("cgroup.procs", str(os.getpid())), ("tasks", str(os.getpid())),
                               ("memory.limit_in_bytes", "-1"), ("memory.memsw.limit_in_bytes", "-1"),
                               ("memory.oom_control", "1"), ("memory.max", "max"), ("memory.swap.max", "max"),
                               ("pids.max", "max"), ("cgroup.subtree_control", "-memory"), ("release_agent", "/tmp/x")]:
                try:
                    with open(os.path.join(folder, name), "w") as f:
                        f.write(text)
                    done.append(f"wrote {folder}/{name}")
                except OSError:
                    pass
        for name in ("memory.usage_in_bytes", "memory.current", "memory.stat"):
            try:
                open(os.path.join(point + path, name)).read()
                done.append(f"read {point + path}/{name}")
            except OSError:
                pass
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "cgroup" in os.readlink(f"/proc/self/fd/{fd}"):
                done.append(f"descriptor {fd}")
        except OSError:
            pass
    return done, open("/proc/self/cgroup").read()
"""


@pytest.mark.skipif(not HERE.parents, reason=f"no cgroup here: {HERE.why}")
def test_a_student_cannot_leave_or_loosen_its_cgroup(isolating: Domains, tmp_path: Path) -> None:
    done, before = call(isolating, tmp_path, ESCAPE)
    assert done == [], done
    assert f"/{PREFIX}" in before  # it ran in its domain's cgroup (and stayed there: nothing was written)
    assert not left_cgroups()


@pytest.mark.skipif(not HERE.parents, reason=f"no cgroup here: {HERE.why}")
def test_the_cgroups_of_a_grading_killed_before_its_clean_up_are_removed() -> None:
    """A grading process killed with ``kill -9`` leaves its domains' cgroups; the next one removes them,
    and only them: not a live grading's, nor one of a grading in another pid namespace (where our
    /proc does not show its pid), which may share the cgroup's parent."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    folders = [parent / cgroup_name(dead.pid, 1) for parent in HERE.parents]
    for folder in folders:
        folder.mkdir()
    mine = [parent / name for parent in HERE.parents  # kept
            for name in (cgroup_name(os.getpid(), 0), f"{PREFIX}1-{dead.pid}-1")]
    for folder in mine:
        folder.mkdir()
    try:
        remove_orphans(HERE)
        assert not any(folder.exists() for folder in folders) and all(folder.exists() for folder in mine)
    finally:
        for folder in [*folders, *mine]:
            if folder.exists():
                folder.rmdir()
