"""Attacks on the trust model, through the launcher production uses, in every mode this machine runs.

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
import site
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from contextlib import contextmanager
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
from grader.sandbox.modes import UID_BASE, SandboxUnavailable, choose_isolation, reap, student_uid, uid_problem
from grader.sandbox.reaper import running_as
from support import PROBLEMS, SOLUTIONS, WHERE, build_submission, owned_by, run_check, toy

pytestmark = pytest.mark.timeout(600)
REFERENCE_LINE = "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=1))"


def test_every_mode_runs_in_ci() -> None:
    if os.environ.get("CI"):
        assert all(problem is None for problem in PROBLEMS.values()), PROBLEMS


def toy_call(domains: Domains, tmp_path: Path, source: str, **limits):
    """What attention_scores() returns in a worker of ``domains``, for a submission whose
    attention_scores.py is ``source``."""
    with WorkerClient(toy(tmp_path / "sub", source), domains=domains, **limits) as client:
        return RemoteImpl(client, WHERE).attention_scores()


# Forks sleepers until the process limit says no; ``forked``: how many it got.
FORK_TO_THE_LIMIT = ("    forked = 0\n"
                     "    try:\n"
                     "        for _ in range(300):\n"
                     "            if os.fork() == 0:\n                time.sleep(60); os._exit(0)\n"
                     "            forked += 1\n"
                     "    except OSError:\n        pass\n")


def test_a_class_graded_one_after_another(isolating: Domains, tmp_path: Path) -> None:
    """A student leaves a daemon that plants code in /tmp, stops and pokes every process it sees and
    writes fake results; the next student only loads what was planted; then an honest student."""
    rubric = load_rubric()
    options = GradeOptions(gpu="skip")
    decoy = Path("/tmp/kata-results-decoy/results.json")  # the grader's results, where a student could look
    decoy.parent.mkdir(mode=0o755, exist_ok=True)
    decoy.write_text('{"score": 0}')
    t0 = time.perf_counter()
    attacker = grade(build_submission("class_attacker", tmp_path / "a"), options, isolating)
    assert attacker.score == pytest.approx(sum(ex.points for ex in rubric.exercises.values()))
    assert not Path("/tmp/kata_planted").exists()
    victim = grade(build_submission("class_victim", tmp_path / "b"), options, isolating)
    assert victim.exercises["03_causal/causal_mask"].score == 0, victim.exercises["03_causal/causal_mask"].message
    honest = grade(SOLUTIONS, options, isolating)
    assert all(r.status == "passed" for r in honest.exercises.values()), {k: r.message for k, r in honest.exercises.items()}
    assert time.perf_counter() - t0 < 180
    assert not running_as(isolating.isolation.uid)  # nothing of the students runs any more
    assert not (REPO_ROOT / "results.json").exists() and not Path("/autograder/results/results.json").exists()
    assert decoy.read_text() == '{"score": 0}'
    assert not any((Path(p) / "sitecustomize.py").exists() for p in [*site.getsitepackages(), *sys.path]
                   if "kata" not in p and p), "a planted sitecustomize.py"
    shutil.rmtree(decoy.parent)


def test_disk_and_processes_are_capped(isolating: Domains, tmp_path: Path) -> None:
    written, forked = toy_call(isolating, tmp_path,
        "import os, time\n\n"
        "def attention_scores():\n"
        "    written = 0\n"
        "    try:\n"
        "        with open('/tmp/kata-fill', 'wb') as f:\n"
        "            for _ in range(200):\n                f.write(b'0' * 2**20); f.flush(); written += 1\n"
        "    except OSError:\n        pass\n"
        "    os.unlink('/tmp/kata-fill')\n"
        + FORK_TO_THE_LIMIT +
        "    return written, forked\n", call_timeout=20)
    assert written <= 64 and forked < 100, (written, forked)
    assert not running_as(isolating.isolation.uid)  # the client's close waited for the domain to be gone


def test_a_student_that_forks_to_the_limit_leaves_the_next_one_its_processes(isolating: Domains, tmp_path: Path) -> None:
    """The first student forks sleepers until the process limit says no. Once killed they must be gone,
    zombies included (they count against the limit of the same uid): the next student of the class can
    start processes as if the first had never existed (once, without a pid namespace, it got none)."""
    hog = "import os, time\n\ndef attention_scores():\n" + FORK_TO_THE_LIMIT + "    return forked\n"
    assert 40 < toy_call(isolating, tmp_path / "hog", hog, call_timeout=20) < 100
    assert toy_call(isolating, tmp_path / "honest",
        "import os\n\n"
        "def attention_scores():\n"
        "    pids = []\n"
        "    for _ in range(8):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n            os._exit(0)\n"
        "        pids.append(pid)\n"
        "    for pid in pids:\n        os.waitpid(pid, 0)\n"
        "    return len(pids)\n") == 8
    assert not isolating.survivors and not running_as(isolating.isolation.uid)


LEFTOVERS = """import ctypes, os, shutil, attention_scores as me

def attention_scores():
    done, keep = [], f'/tmp/kata-keep-{os.getuid()}'
    for name, make in [
            ("locked folder", lambda: (os.makedirs(keep + '/inner'), open(keep + '/inner/f', 'w').close(),
                                       os.chmod(keep + '/inner', 0o077), os.chmod(keep, 0o077))),
            ("copied copy", lambda: shutil.copytree(os.path.dirname(os.path.dirname(me.__file__)), keep + '-copy')),
            ("shm file", lambda: open(f'/dev/shm/kata-keep-{os.getuid()}', 'w').close()),
            ("dropped file", lambda: open(f'/tmp/kata-dropbox-{os.getuid()}/inner/f', 'w').close()),
            ("deep folder", lambda: [os.mkdir(keep + '-deep' + '/d' * i) for i in range(1200)])]:
        try:
            make()
            done.append(name)
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0x4B415441, 4096, 0o1666) >= 0:  # IPC_CREAT | 0666
        done.append("sysv shm")
    if libc.msgget(0x4B415442, 0o1666) >= 0:
        done.append("sysv msg")
    if libc.semget(0x4B415443, 1, 0o1666) >= 0:
        done.append("sysv sem")
    return done
"""


@contextmanager
def dropbox(uid: int):
    """A world-writable folder inside a root-owned one in /tmp (as /tmp/.X11-unix is, or a 0777 folder
    someone made): where LEFTOVERS drops a file, which the clean-up must find below the top of /tmp."""
    box = Path("/tmp") / f"kata-dropbox-{uid}"
    (box / "inner").mkdir(parents=True)
    (box / "inner").chmod(0o777)
    try:
        yield
    finally:
        shutil.rmtree(box)


def test_nothing_of_a_domain_outlives_it(isolating: Domains, tmp_path: Path) -> None:
    """A student leaves a folder of mode 0077, a copy of its own copy (read-only folders), a chain of
    1200 folders, a file in /dev/shm, one in a world-writable folder below the top of /tmp (without a
    mount namespace) and SysV IPC objects of mode 0666 (where it may make them). After its domain,
    nothing of its uid is left anywhere, and the clean-up said nothing went wrong."""
    with dropbox(isolating.isolation.uid):
        done = toy_call(isolating, tmp_path, LEFTOVERS)
        assert "locked folder" in done and "copied copy" in done and "deep folder" in done
        assert ("dropped file" in done) == isolating.isolation.mode.shares_the_machine, done
        if not isolating.isolation.mode.seccomp.ipc:  # no IPC namespace of its own: the filter refuses SysV IPC
            assert not {"sysv shm", "sysv msg", "sysv sem"} & set(done), done
        assert not isolating.survivors
        assert not owned_by(isolating.isolation.uid)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a uid of its own to clean up)")
def test_the_clean_up_removes_what_a_uid_owns_whatever_its_modes() -> None:
    """The clean-up itself, without a domain (so without the filter that refuses SysV IPC in uid mode):
    a process of a fresh uid makes SysV IPC objects of mode 0666 and locked folders, then a sleeper;
    reap() leaves none of them, and never raises on what it was given."""
    uid = UID_BASE - 1 - os.getpid() % 4096
    code = LEFTOVERS + ("\nif __name__ == '__main__':\n    print(attention_scores())\n    import subprocess\n"
                        "    subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    copy = Path("/tmp") / f"kata-leftovers-{uid}"  # laid out as a domain's copy: what "copied copy" copies
    (copy / "01_simple_attention").mkdir(mode=0o755, parents=True)
    copy.chmod(0o755)
    module = copy / "01_simple_attention" / "attention_scores.py"
    module.write_text(code)
    try:
        with dropbox(uid):
            out = subprocess.run([sys.executable, "-E", "-s", "-S", str(module)], capture_output=True, text=True,
                                 timeout=30, user=uid, group=uid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"})
            assert all(made in out.stdout for made in ("sysv shm", "locked folder", "dropped file", "deep folder")), out.stderr
            assert owned_by(uid)
            reap(uid)
            assert not owned_by(uid) and not running_as(uid)
    finally:
        shutil.rmtree(copy)


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


def test_students_run_unprivileged(isolating: Domains, tmp_path: Path) -> None:
    uid, caps, nnp, writable, cwd, refused, copy_mode = toy_call(isolating, tmp_path,
        "import os\n\n"
        "def attention_scores():\n"
        "    status = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
        "    writable = [p for p in (os.getcwd(), os.path.dirname(__file__)) if os.access(p, os.W_OK)]\n"
        "    import ctypes\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    refused = []\n"
        "    for nr in (250, 248, 101):  # keyctl, add_key, ptrace\n"
        "        libc.syscall(nr, 0, 0, 0, 0)\n"
        "        refused.append(ctypes.get_errno())\n"
        "    copy_mode = os.stat(os.path.dirname(__file__)).st_mode & 0o7\n"
        "    import importlib\n"
        "    importlib.import_module('jinja2')  # a package the template never imported (CI: a venv under /tmp)\n"
        "    return (os.getuid(), status['CapEff'].strip(), status['NoNewPrivs'].strip(), writable, os.getcwd(),\n"
        "            refused, copy_mode)\n")
    assert uid == student_uid() and uid not in (0, os.getuid())
    assert int(caps, 16) == 0 and nnp == "1"
    assert writable == [cwd]  # its scratch, not its copy
    assert refused == [1, 1, 1]  # EPERM from the seccomp filter (keyrings outlive a domain), as Docker's profile refuses
    if isolating.isolation.mode.shares_the_machine:
        assert copy_mode == 0  # other jobs' students (other uids) cannot read this copy


def test_no_ip_network(isolating: Domains, tmp_path: Path) -> None:
    said = toy_call(isolating, tmp_path,
        "import socket\n\n"
        "def attention_scores():\n"
        "    try:\n        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n        return 'socket made'\n"
        "    except OSError as err:\n        return str(err)\n")
    if not isolating.isolation.mode.seccomp.ip_sockets:  # no network namespace of its own
        assert said != "socket made"  # seccomp: no IP socket at all
    # under bwrap a socket can be made, but there is no network to reach (tested in test_sandbox)


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
