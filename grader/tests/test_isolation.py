"""Attacks on the trust model, through the launcher production uses, in every mode this machine runs (what a
student's code may do inside its own domain, and what outlives it: test_isolation_domain.py).

``bwrap`` needs bubblewrap and root; ``uid`` (root without user namespaces, as in Gradescope's and
CI's containers) needs root and a Python that other users can read (CI makes /root searchable);
``none`` runs anywhere. Attacks that would stop the test process itself are not run in ``none``
(it isolates nothing: there the tests show that an attack works, so that they can fail).
In CI every mode must run (test_every_mode_runs_in_ci).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import pytest

import grader.sandbox.client as worker_client
import grader.sandbox.modes as modes
from grader.grading.engine import run_hidden_tests, start_worker
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.remote_impl import RemoteImpl
from grader.grading.scoring import summarize_each
from grader.reports.gradescope import to_gradescope
from grader.reports.json_report import to_json
from grader.rubric import REPO_ROOT, load_rubric
from grader.sandbox.client import WorkerClient
from grader.sandbox.domains import Domains
from grader.sandbox.modes import SandboxUnavailable, choose_isolation, uid_problem
from support import PROBLEMS, WHERE, build_submission, run_check, toy

pytestmark = pytest.mark.timeout(600)
REFERENCE_LINE = "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=1))"


def test_every_mode_runs_in_ci() -> None:
    if os.environ.get("CI"):
        assert all(problem is None for problem in PROBLEMS.values()), PROBLEMS


def test_the_reference_never_enters_a_domain(domains: Domains, tmp_path: Path, monkeypatch) -> None:
    """Every module imports every other one, and the two that others build on are broken, so both
    dependents are re-graded. The wrapper reads what stands beside it and pushes it out in every
    message and on stdout. No domain ever receives a file of solutions/ (only the student's files and
    stand-ins), and no report carries reference text."""
    sub = build_submission("leak_reference", tmp_path)
    (sub / "03_causal" / "causal_attention.py").write_text("raise ImportError('broken on purpose')\n")
    (sub / "02_trainable_weights" / "self_attention.py").write_text("raise ImportError('broken on purpose')\n")
    every = "".join(f"import {ex.module}\n" for ex in load_rubric().exercises.values())
    scores = sub / "01_simple_attention" / "attention_scores.py"
    scores.write_text(every + scores.read_text())
    bundles = []
    read = worker_client.read_module_files
    monkeypatch.setattr(worker_client, "read_module_files",
                        lambda *args: bundles.append(read(*args)[0]) or read(*args))
    dependents = ("02_trainable_weights/weight_transfer", "04_multihead/multihead_wrapper")  # both re-graded
    report = grade(sub, GradeOptions(gpu="skip", exercises=dependents), domains)
    text = json.dumps(to_json(report)) + json.dumps(to_gradescope(to_json(report)))
    assert REFERENCE_LINE not in text and "LEAK:" not in text
    wrapper = report.exercises["04_multihead/multihead_wrapper"]
    assert wrapper.regraded_with == ("03_causal/causal_attention",), wrapper.message  # the re-grade's results count
    assert 0 < wrapper.score < wrapper.max_score and any(not o.passed for o in wrapper.outcomes)
    assert report.exercises["02_trainable_weights/weight_transfer"].regraded_with == ("02_trainable_weights/self_attention",)
    reference = {f.read_bytes() for f in (REPO_ROOT / "solutions").rglob("*.py")}
    assert not {f.read_bytes() for f in (REPO_ROOT / "tests" / "standins").glob("*.py")} & reference
    not_own = [(rel, data) for files in bundles for rel, data in files.items() if data != (sub / rel).read_bytes()]
    assert len(bundles) >= 3  # the grading's domain and both re-grades
    assert {data for _, data in not_own} == {(REPO_ROOT / "tests" / "standins" / f"{m}.py").read_bytes()
                                             for m in ("self_attention", "causal_attention")}, [rel for rel, _ in not_own]


def test_the_gpu_check_grades_the_modules_the_tests_graded(isolating: Domains, tmp_path: Path) -> None:
    """multihead_attention.py is right on the CPU but keeps its mask in a plain attribute (a device bug);
    the wrapper's file, imported after multihead_attention's tests ran, puts a device-clean
    MultiHeadAttention into sys.modules under that module's name. The GPU-run check finds each module
    as the tests did, from its own file: it judges the one with the device bug."""
    sub = build_submission("gpu_alias", tmp_path)
    path = sub / "04_multihead" / "multihead_attention.py"
    text = path.read_text()
    line = next(line for line in text.splitlines() if "self.register_buffer(" in line)
    plain = line.replace('self.register_buffer("mask", ', "self.mask = (")
    path.write_text(text.replace(line, plain))
    scope = ("04_multihead/multihead_attention", "04_multihead/multihead_wrapper")  # tested in that order
    report = grade(sub, GradeOptions(gpu="auto", exercises=scope), isolating)
    assert report.exercises["04_multihead/multihead_attention"].score > 0
    assert "MultiHeadAttention fails on the GPU (simulated)" in report.gpu_check.message, report.gpu_check.message
    assert "from self.mask, a plain attribute" in report.gpu_check.message, report.gpu_check.message


@pytest.mark.slow
def test_a_lock_table_relay_carries_no_answer(isolating: Domains, tmp_path: Path) -> None:
    """Lock tables are not per mount namespace: a student's re-grade can publish what stands in its copy
    as open-file-description locks on os.py, which every sandbox sees, for a student graded at the same
    time to read. This test reads it as that student would (F_OFD_GETLK), while the grading runs: it
    carries the student's own files and the stand-ins, and nothing of the reference."""
    sub = build_submission("lock_relay", tmp_path)
    shutil.copy(REPO_ROOT / "exercises" / "03_causal" / "causal_attention.py", sub / "03_causal")
    graded: list = []
    scope = GradeOptions(gpu="skip", exercises=("04_multihead/multihead_wrapper",))  # its re-grade publishes
    grading = threading.Thread(target=lambda: graded.append(grade(sub, scope, isolating)))
    grading.start()
    header, ack, data = 1 << 40, 1 << 41, 1 << 42

    def held(fd: int, start: int, length: int) -> int | None:
        kind, _, found, _, _ = struct.unpack("hhqqi4x", fcntl.fcntl(fd, 36, struct.pack("hhqqi4x", 1, 0, start, length, 0)))
        return None if kind == 2 else found  # F_UNLCK: no lock there

    fd = os.open(os.__file__, os.O_RDONLY)
    try:
        deadline = time.monotonic() + 120
        while (size := held(fd, header, 1 << 30)) is None and grading.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert size is not None, "the re-grade never published (no re-grade, or the attack broke)"
        size -= header
        values = [held(fd, data + i * 65536, 65536) - data - i * 65536 for i in range(size // 2)]
        fcntl.fcntl(fd, 37, struct.pack("hhqqi4x", 0, 0, ack, 1, 0))  # a read lock at ACK: "got it"
        relayed = json.loads(zlib.decompressobj().decompress(b"".join(bytes(divmod(v, 256)) for v in values)))
    finally:
        grading.join(120)  # the ACK lock held until then: the publisher waits for it
        os.close(fd)
    reference = {f.read_text() for f in (REPO_ROOT / "solutions").rglob("*.py")}
    standins = {f.read_text() for f in (REPO_ROOT / "tests" / "standins").glob("*.py")}
    own = {rel: (sub / rel).read_text() for rel in relayed if (sub / rel).is_file()}
    foreign = {rel: text for rel, text in relayed.items() if own.get(rel) != text}
    assert set(foreign.values()) == {(REPO_ROOT / "tests" / "standins" / "causal_attention.py").read_text()}, sorted(foreign)
    assert not set(foreign.values()) & reference and set(foreign.values()) <= standins
    assert graded and graded[0].exercises["04_multihead/multihead_wrapper"].regraded_with == ("03_causal/causal_attention",)


def test_reference_on_disk_is_unreadable(domains: Domains, tmp_path: Path) -> None:
    sub = build_submission("copy_reference", tmp_path)
    path = REPO_ROOT / "solutions" / "03_causal" / "causal_mask.py"
    (sub / "03_causal" / "causal_mask.py").write_text(f"exec(open({str(path)!r}).read())\n")
    outcomes = run_hidden_tests(start_worker(sub, domains=domains), exercises=["03_causal/causal_mask"])
    earned = summarize_each(load_rubric(), outcomes)["03_causal/causal_mask"]
    if not domains.isolation.mode.isolates:
        assert earned.score == pytest.approx(earned.max_score)  # the attack works bare
    else:
        assert earned.score == 0.0


def test_identity_modules_earn_no_gpu_points(domains: Domains, tmp_path: Path) -> None:
    """The GPU-run check alone (grade() runs the same check in the same kind of domain: test_gpu_check.py)."""
    result = run_check(build_submission("gpu_identity", tmp_path), domains=domains)
    points, share = load_rubric().gpu_points, load_rubric().gpu_points / len(load_rubric().gpu_modules)
    assert result.max_score == points and result.score <= points - share + 0.01, result.message  # CA's share lost
    assert "CausalAttention does not match the reference on the CPU" in result.message


def test_namedtuples_cost_the_grader_nothing_lasting(domains: Domains, tmp_path: Path) -> None:
    sub = build_submission("namedtuple_flood", tmp_path)
    with WorkerClient(sub, domains=domains, call_timeout=20) as client:
        flood = client.request({"op": "module_attr", "module": "attention_scores", "name": "_flood"}, "import")
        fn = RemoteImpl(client, {})._kata_wrap(flood)
        t0 = time.perf_counter()
        for _ in range(3):
            out = fn()
            assert type(out[0]) is tuple and len(out) == 3000  # 9000 new types in all: a cache would hold > 1000
        assert time.perf_counter() - t0 < 20
    assert not any(isinstance(v, dict) and len(v) > 1000 for v in vars(worker_client).values())


def test_a_held_output_pipe_does_not_stall_the_grader(domains: Domains, tmp_path: Path) -> None:
    sub = toy(tmp_path / "sub",
        "import os, time\n\n"
        "def attention_scores():\n"
        "    if os.fork() == 0:\n        os.setsid()\n        time.sleep(60)\n        os._exit(0)\n"
        "    return 1\n")
    client = WorkerClient(sub, domains=domains)
    impl = RemoteImpl(client, WHERE)
    assert impl.attention_scores() == 1
    t0 = time.perf_counter()
    client.close()
    assert time.perf_counter() - t0 < 5


def test_choice_of_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("grader.sandbox.modes.bwrap_problem", lambda: "bwrap cannot create namespaces here (test)")
    monkeypatch.setattr("grader.sandbox.modes.uid_problem", lambda: "dropping to another uid needs root")
    assert choose_isolation("auto").mode is modes.NONE and "without isolation" in choose_isolation("auto").warnings[0]
    for requested, for_class in (("auto", True), ("isolated", False), ("bwrap", False), ("uid", False)):
        with pytest.raises(SandboxUnavailable):
            choose_isolation(requested, for_class=for_class)
    assert choose_isolation("none", for_class=True).mode is modes.NONE


def test_asking_which_mode_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``grader isolation`` is a question: in uid mode it says what grading would make unreadable, and
    leaves every mode as it was; grading itself then makes it so."""
    for name in modes.SECRETS:
        (tmp_path / name).mkdir(mode=0o755)
    monkeypatch.setattr(modes, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(modes, "bwrap_problem", lambda: "no bubblewrap (test)")
    monkeypatch.setattr(modes, "uid_problem", lambda: None)
    asked = choose_isolation("isolated", protect=False)
    assert asked.mode is modes.UID and sum("grading in uid mode makes" in w for w in asked.warnings) == 3, asked.warnings
    assert asked.warnings[0] == ("isolated by uid only (bubblewrap: no bubblewrap (test)): no network or pid namespace, "
                                 "IP sockets refused, the uid's processes and files removed after each domain")
    assert all((tmp_path / name).stat().st_mode & 0o777 == 0o755 for name in modes.SECRETS)
    choose_isolation("isolated")
    assert all((tmp_path / name).stat().st_mode & 0o777 == 0o750 for name in modes.SECRETS)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to try another uid)")
def test_a_python_other_users_cannot_reach_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Python installed under a folder other users cannot enter (pyenv or conda in root's home): uid
    mode is unavailable, said in one line that names the folder to open; nothing raises."""
    open_dir = Path(tempfile.mkdtemp(dir="/tmp"))  # every folder above it open to others, as /tmp is
    open_dir.chmod(0o755)
    closed = open_dir / "home"
    closed.mkdir(mode=0o700)
    (closed / "python3").symlink_to(sys.executable)
    monkeypatch.setattr(modes.sys, "executable", str(closed / "python3"))
    try:
        why = modes.uid_problem.__wrapped__()
    finally:
        shutil.rmtree(open_dir)
    assert why is not None and f"cannot enter {closed} (run chmod o+x on it)" in why, why


def test_score_all_and_the_autograder_refuse_without_isolation(tmp_path: Path) -> None:
    """Root without user namespaces and without root: a bwrap that fails, and a non-root user."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{Path(sys.executable).parent}:/usr/bin:/bin"}
    said = subprocess.run([sys.executable, "-m", "grader", "isolation"], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT)
    if os.geteuid() == 0 and uid_problem() is None:
        assert said.returncode == 0 and said.stdout.strip() == "uid", said.stderr  # root without namespaces
        klass = tmp_path / "class"
        klass.mkdir(mode=0o755)
        klass.chmod(0o755)
        open_class = subprocess.run([sys.executable, "-m", "grader", "score-all", str(klass), "--csv",
                                     str(tmp_path / "g.csv")], capture_output=True, text=True, env=env, cwd=REPO_ROOT)
        assert open_class.returncode == 2 and "chmod o-rwx" in open_class.stderr, open_class.stderr
    code = ("import sys, os; from grader.sandbox import modes; modes.uid_problem = lambda: 'not root (test)';"
            "from grader.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "score-all", str(tmp_path), "--csv", str(tmp_path / "g.csv")],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--sandbox none" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-c", code, "isolation"], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT)
    assert proc.returncode == 2 and "no isolation is possible here" in proc.stderr
