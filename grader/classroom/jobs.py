"""score-all's jobs: long-lived processes that grade one student after another, and the wall around them.

score-all never imports torch or runs student code. It starts N jobs (``python -m grader.classroom.jobs
--job OPTIONS_JSON --lifeline FD``, :class:`Job`), hands each a student at a time as a JSON line, and
reads back one JSON line per student: ``{"report": ...}`` or ``{"error": ...}`` (``"job_failed"``:
this job must be replaced). A job imports torch once, for all of its students, and grades each in
domains of their own (:func:`job_main`).

The lifeline: a pipe whose write end score-all alone holds. When score-all ends, however it ends
(``kill -9`` too), or wants a job gone, the job reads the end of the pipe and, from a thread, kills its
template and every process of its student's uid at once, whatever the grading under way is doing, and
exits (:class:`_JobDomains`).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from grader.files import caller_umask
from grader.grading.gpu_check import GpuUnavailable
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.intake import SubmissionError
from grader.reports.json_report import to_json
from grader.sandbox.domains import Domains, TemplateError
from grader.sandbox.modes import Survivors, choose_isolation
from grader.sandbox.reaper import processes_of

# Seconds a job may take to end (its template killed, its student's uid's processes killed and its files
# removed: well under a second) before it is killed itself.
JOB_END_TIMEOUT = 30.0
PR_SET_CHILD_SUBREAPER = 36


class Job:
    """One job process and the student it is grading (score-all's side of the wall).

    The job's lifeline is a pipe whose write end this process alone holds (never inherited by another
    child): when this process ends, however it ends (``kill -9`` too), the job reads the end of the
    pipe at once and takes its template and every process of its student's uid down with it before
    it exits (:func:`job_main`). :meth:`kill` closes the lifeline to the same end. ``argv``: another
    job command (tests), which gets no lifeline."""

    def __init__(self, grading: GradeOptions, argv: tuple[str, ...] | None = None):
        lifeline, self.lifeline = os.pipe()
        command = list(argv) if argv else [
            sys.executable, "-m", "grader.classroom.jobs", "--job", grading.to_json(), "--lifeline", str(lifeline)]
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True,
                                         pass_fds=(lifeline,), umask=caller_umask())
        except BaseException:
            os.close(self.lifeline)
            raise
        finally:
            os.close(lifeline)
        self.student: str | None = None
        self.started = 0.0

    def give(self, student: str, path: Path, grading: GradeOptions) -> None:
        self.student, self.started = student, time.monotonic()
        task = {"student": student, "path": str(path), "options": grading.to_json()}
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        """Tell the job to end now (its template and student's processes with it), without waiting."""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        """End the job now: it ends what it started and exits; killed if it has not within JOB_END_TIMEOUT."""
        self.stop()
        try:
            self.proc.wait(timeout=JOB_END_TIMEOUT)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
        try:
            self.proc.stdout.close()
        except OSError:
            pass

    def close(self) -> None:
        """The class is graded: end the job once it has ended its domains (or kill it)."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=JOB_END_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


# --- the job process --------------------------------------------------------------------------------


def job_main(argv: list[str]) -> int:
    """A job process (``--job OPTIONS_JSON --lifeline FD``, from :class:`Job`): read ``{"student", "path",
    "options"}`` lines (that student's GradeOptions; the sandbox is the job's), answer ``{"report"}`` or
    ``{"error"}`` lines. When the lifeline (a pipe's read end) reads its end, score-all is gone (or wants
    this job gone): the template and every process of the student's uid are killed at once, from a
    thread, whatever the grading under way is doing, and the job exits."""
    if len(argv) not in (2, 4) or argv[0] != "--job" or (len(argv) == 4 and argv[2] != "--lifeline"):
        print("usage: python -m grader.classroom.jobs --job OPTIONS_JSON [--lifeline FD] (started by score-all)",
              file=sys.stderr)
        return 2
    options = GradeOptions.from_json(argv[1])
    # torch imported once for all of this job's students; each of them gets domains of their own
    domains = _JobDomains(choose_isolation(options.sandbox, for_class=True))
    scratch = _JobScratch()
    if len(argv) == 4:
        lifeline = int(argv[3])
        os.set_inheritable(lifeline, False)
        threading.Thread(target=_watch_lifeline, args=(lifeline, domains, scratch), daemon=True).start()
    answer = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the channel
    try:
        domains.warm_up()
        for line in sys.stdin:
            task = json.loads(line)
            try:
                result = {"report": to_json(grade(Path(task["path"]), GradeOptions.from_json(task["options"]), domains,
                                                  scratch.folder))}
            except (SubmissionError, GpuUnavailable) as err:
                result = {"error": str(err)}
            except Survivors as err:  # no result while a process of the student's uid runs: this job ends
                answer.write(json.dumps({"error": str(err), "job_failed": True}) + "\n")
                answer.flush()
                break
            except Exception as err:  # one student's failure must not end the batch
                result = {"error": f"internal error: {type(err).__name__}: {err}"}
            answer.write(json.dumps(result) + "\n")
            answer.flush()
    finally:
        domains.close()  # (or wait for the lifeline's watcher to have done it)
        scratch.remove()
    return 0


def _watch_lifeline(fd: int, domains: _JobDomains, scratch: _JobScratch) -> None:
    """Block until score-all's end of the lifeline closes (nothing is ever written on it); then end the
    domains, remove the job's scratch and exit, whatever the main thread is doing."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    try:
        domains.close()
        scratch.remove()
    finally:
        os._exit(1)


class _JobScratch:
    """The job's folder (root's, 0700, in the system's temporary folder) for its gradings' scratch folders.

    A job the lifeline ends exits at once (``os._exit``): the grading under way never removes its own
    scratch folder (an unzipped submission, say), so the job removes them all. It first moves its
    ``folder`` aside, within a folder of its own (which no student's process can reach), so that the
    grading under way, which reaches it by its path only, can no longer write in what is being removed."""

    def __init__(self) -> None:
        self._own = Path(tempfile.mkdtemp(prefix=f"kata-job-{os.getpid()}-"))
        self.folder = self._own / "scratch"
        self.folder.mkdir()
        self._removing = threading.Lock()  # the main thread and the lifeline's watcher: one removes, the other waits

    def remove(self) -> None:
        with self._removing:
            ended = self._own / "ended"
            try:
                os.rename(self.folder, ended)
            except OSError:  # removed already
                return
            shutil.rmtree(ended, ignore_errors=True)
            try:
                self._own.rmdir()
            except OSError:
                pass


class _JobDomains(Domains):
    """A job's domains, which another thread may end at any moment (:meth:`close`): after that no
    template starts again, no clean-up of a domain starts (the close does it), and the grading under
    way fails instead."""

    def __init__(self, isolation: Any):
        self._starting = threading.Lock()  # held while a template starts: close() waits for it, then kills it
        self._ending = False
        self._closing = threading.Lock()
        self._closer: int | None = None  # the thread that closes
        super().__init__(isolation)

    def replace(self, broken: Any) -> None:
        with self._starting:
            if self._ending:
                raise TemplateError("this grading job is ending")
            super().replace(broken)

    def clean(self, root: Path | None, cgroup: Any = None) -> None:
        # A clean-up runs a process as the student's uid: once ending, only the close's own may start.
        if not self._ending or threading.get_ident() == self._closer:
            super().clean(root, cgroup)

    def close(self) -> None:
        """Domains.close (the template killed: with bubblewrap its sandbox and every domain in it; in uid
        mode every process of the student's uid killed and its files removed; then a wait until none
        of the uid's processes is left), at once: the domain under way is not waited for. From any
        thread; once (a second call waits for the first to finish)."""
        with self._starting:
            self._ending = True
        with self._closing:
            if self._closer is not None:
                return
            self._closer = threading.get_ident()
            # The template's children (the domains, the student's processes) are orphaned when it is
            # killed: they become this process's children, reaped here (pid 1, in a container, may
            # never reap them, and the wait for the uid's processes counts zombies).
            ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            done = threading.Event()
            reaper = threading.Thread(target=_reap_adopted, args=(self.isolation.uid, done), daemon=True)
            reaper.start()
            try:
                super().close()
            finally:
                done.set()
                reaper.join()


def _reap_adopted(uid: int | None, done: threading.Event) -> None:
    """Until ``done``: reap this process's children of ``uid`` that have ended (adopted as a subreaper)."""
    while uid is not None and not done.wait(0.005):
        for pid, state in processes_of(uid).items():
            if state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # not ours
                    pass


if __name__ == "__main__":
    sys.exit(job_main(sys.argv[1:]))
