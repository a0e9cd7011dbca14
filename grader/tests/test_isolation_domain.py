"""One student's domain, in every mode this machine runs: what the student's code may do in it (run
unprivileged, no IP network, capped disk and processes) and that nothing of it outlives it, so that the next
student of a class, and the grader's next start, find nothing of it. (The other attacks: test_isolation.py.)
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.remote_impl import RemoteImpl
from grader.rubric import REPO_ROOT, load_rubric
from grader.sandbox.client import WorkerClient
from grader.sandbox.domains import Domains
from grader.sandbox.modes import UID_BASE, reap, student_uid
from grader.sandbox.reaper import running_as
from support import SOLUTIONS, WHERE, build_submission, owned_by, toy

pytestmark = pytest.mark.timeout(600)
# The files Python runs at every start, wherever it looks for them (site.py): what a student would plant.
STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")


def startup_files() -> dict[str, int]:
    """Every sitecustomize.py and usercustomize.py on this Python's paths, with its mtime: a distribution ships
    its own (Debian's /usr/lib/python3.X/sitecustomize.py), so what a grading must leave as it was is this list."""
    folders = {p for p in [*site.getsitepackages(), site.getusersitepackages(), *sys.path] if p}
    found = {}
    for folder in sorted(folders):
        for name in STARTUP_FILES:
            path = Path(folder) / name
            try:
                found[str(path)] = path.stat().st_mtime_ns
            except OSError:
                pass
    return found


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
    before = startup_files()
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
    assert startup_files() == before, "a sitecustomize.py or usercustomize.py planted or changed"
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
    assert isolating.isolation.nproc - 8 <= toy_call(isolating, tmp_path / "hog", hog, call_timeout=20) < isolating.isolation.nproc
    assert toy_call(isolating, tmp_path / "honest",
        "import os\n\n"
        "def attention_scores():\n"
        "    pids = []\n"
        f"    for _ in range({min(8, isolating.isolation.nproc - 3)}):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n            os._exit(0)\n"
        "        pids.append(pid)\n"
        "    for pid in pids:\n        os.waitpid(pid, 0)\n"
        "    return len(pids)\n") == min(8, isolating.isolation.nproc - 3)
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
