"""What several test modules share: submissions built from the solutions, the isolation modes usable here,
the GPU-run check's driver, and the checks on the documents' paths. Test modules import from here, never
from each other."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pytest

from grader.authoring.mutation import PatchError, apply, reference_source
from grader.classroom.score_all import BatchOptions
from grader.grading.engine import start_worker
from grader.grading.options import GradeOptions
from grader.grading.gpu_check import run_gpu_check
from grader.rubric import EXERCISES_DIR, GROUPS, REPO_ROOT, TESTS_DIR, load_rubric
from grader.sandbox.modes import MODES as ALL_MODES, SHARED_TOPS

if TYPE_CHECKING:
    from grader.grading.remote_impl import RemoteImpl

REPO = Path(__file__).resolve().parents[2]
# Which isolation modes this machine can run, and why not where it cannot.
PROBLEMS = {name: mode.problem() for name, mode in ALL_MODES.items()}
MODES = [pytest.param(mode, marks=pytest.mark.skipif(problem is not None, reason=f"{mode} unusable here: {problem}"))
         for mode, problem in PROBLEMS.items()]
ISOLATING = [m for m in MODES if ALL_MODES[m.values[0]].isolates]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
# A relative path in a code span: has a '/', no placeholder (<group>, OUT/, DIR/), no URL, not absolute.
PATH_SPAN = re.compile(r"^(?:\.\.?/)*[a-z0-9_.][\w.-]*(?:/[\w.-]+)+/?$")
# Paths the top README names that are not in this tree, on purpose.
ELSEWHERE = {
    ".github/workflows/classroom.yml": "in the student release",
}


SOLUTIONS = REPO / "solutions"


SUBMISSIONS = Path(__file__).with_name("submissions")


def students_tool(name: str) -> ModuleType:
    """``exercises/<name>.py``, a students' tool the worker imports too (grader/rubric.py WORKER_TOOLS), loaded
    under its own name as the worker loads it (grader/sandbox/kata_worker/tools.py)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXERCISES_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def build_submission(name: str, root: Path) -> Path:
    """The reference solutions with ``submissions/<name>``'s files laid over them.

    ``X.hostile`` replaces ``X`` (a name pytest itself must not pick up in this repository);
    ``X.prepend`` goes in front of the reference's ``X``, so an attack needs no copy of a solution;
    ``gate.py.append`` is appended to every module.
    """
    dest = root / name
    for group in GROUPS:
        (dest / group).mkdir(parents=True)
        for src in (SOLUTIONS / group).glob("*.py"):
            shutil.copy(src, dest / group / src.name)
    overlay = SUBMISSIONS / name
    if overlay.is_dir():
        for src in sorted(overlay.rglob("*")):
            if src.is_dir():
                continue
            rel = str(src.relative_to(overlay))
            if rel == "gate.py.append":
                for module in dest.rglob("*.py"):
                    module.write_text(module.read_text() + src.read_text())
                continue
            if rel.endswith(".prepend"):
                target = dest / rel.removesuffix(".prepend")
                target.write_bytes(src.read_bytes() + b"\n\n" + target.read_bytes())
                continue
            target = dest / rel.removesuffix(".hostile")
            for parent in reversed(target.relative_to(dest).parents):  # a folder replacing a file
                p = dest / parent
                if p.is_file():
                    p.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read_bytes())
    if name == "missing_file":
        (dest / "02_trainable_weights" / "weight_transfer.py").unlink()
    if name == "symlink_to_solutions":
        link = dest / "03_causal" / "causal_mask.py"
        link.unlink()
        link.symlink_to(SOLUTIONS / "03_causal" / "causal_mask.py")
    return dest


def at_stake(name: str, targets: set[str]) -> list[str] | None:
    """The exercises an attack's grading runs (None: all): those it attacks, those whose files it writes,
    every exercise of a group folder it drops another file into (a conftest.py, a torch.py), all of them
    when it writes at the top of the submission, and a witness from a group it does not touch, which
    must still pass. The uninvolved rest would only repeat the witness, at a grading's cost each."""
    rubric = load_rubric()
    overlay = SUBMISSIONS / name
    written = [p.relative_to(overlay) for p in overlay.rglob("*") if p.is_file()] if overlay.is_dir() else []
    if any(len(rel.parts) == 1 for rel in written):
        return None
    stake = set(targets)
    for rel in written:
        module = rel.name.split(".")[0]
        ex_id = f"{rel.parts[0]}/{module}"
        stake |= {ex_id} if ex_id in rubric.exercises else {e for e in rubric.exercises if e.startswith(rel.parts[0] + "/")}
    groups = {ex_id.split("/")[0] for ex_id in stake}
    witness = next(e for e in rubric.exercises if e.split("/")[0] not in groups)
    return sorted(stake | {witness})


def toy(tmp_path: Path, source: str, module: str = "attention_scores", group: str = "01_simple_attention") -> Path:
    for g in GROUPS:
        (tmp_path / g).mkdir(parents=True, exist_ok=True)
    (tmp_path / group / f"{module}.py").write_text(source)
    return tmp_path


WHERE = {"attention_scores": "01_simple_attention/attention_scores",
         "attention_score_matrix": "01_simple_attention/attention_scores"}


def run_check(sub: Path, mode: str = "auto", fake_cuda: bool = False, corrupt: bool = False, monkeypatch=None,
              domains=None, fractions: Mapping[str, float] | None = None, builds_on=None):
    """The GPU-run check's result, every module run. ``fractions``: the share of its exercise's core points
    each module earned, as a grading tells the check (default: all of them); ``builds_on``: run_gpu_check's."""
    # Imported here: it imports torch (2 s), and the xdist controller, which loads this module through
    # conftest.py and runs no test, would start its workers that much later.
    from grader.grading.remote_impl import RemoteImpl

    if fake_cuda:  # the grader's own torch decides whether there is CUDA: say there is
        monkeypatch.setattr("torch.cuda.is_available", lambda: True)
        monkeypatch.setattr("torch.cuda.get_device_name", lambda *a: "Fake GPU")
    client = start_worker(sub, domains=domains)

    def impl_of(worker):
        impl = RemoteImpl(worker, load_rubric().owner_of)
        return FakeCuda(impl, corrupt) if fake_cuda else impl

    @contextmanager
    def over_standins(substitutes):  # as a grading does: one domain at a time
        client.close()
        with start_worker(sub, domains=domains, substitutes=substitutes) as worker:
            yield impl_of(worker)

    try:
        rubric = load_rubric()
        runs = run_gpu_check(impl_of(client), mode, rubric.gpu_points, over_standins, builds_on=builds_on)
        return runs.scored({m.name: (fractions or {}).get(m.name, 1.0) for m in rubric.gpu_modules})
    finally:
        client.close()


class FakeCuda:
    """Says CUDA is there, and runs the CUDA branch on the cpu (optionally corrupting the output)."""

    def __init__(self, impl: RemoteImpl, corrupt: bool):
        self.impl, self.corrupt = impl, corrupt

    def __getattr__(self, name: str):
        return getattr(self.impl, name)

    def cuda_info(self) -> dict:
        return {"available": True, "name": "Fake GPU"}

    def device_run(self, module, x, device):
        if device != "cuda":  # --gpu simulate
            return self.impl.device_run(module, x, device)
        run = self.impl.device_run(module, x, "cpu")
        run["output_device"] = "cuda:0"
        if self.corrupt and run["output"] is not None:
            run["output"] = run["output"] + 1.0
        return run


def _region_lines(text: str, begin: str, end: str) -> set[str]:
    """The non-trivial lines (stripped, longer than 25 characters) between ``begin`` and ``end``."""
    found, inside = set(), False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == begin:
            inside = True
        elif stripped == end:
            inside = False
        elif inside and len(stripped) > 25:
            found.add(stripped)
    return found


def solution_lines(exercise_ids: tuple[str, ...] | None = None) -> dict[str, set[str]]:
    """{exercise id: its solution lines}, read from solutions/ (all exercises by default)."""
    rubric = load_rubric()
    ids = exercise_ids if exercise_ids is not None else tuple(rubric.exercises)
    return {
        ex_id: _region_lines(rubric.exercises[ex_id].reference_file.read_text(), "### BEGIN SOLUTION", "### END SOLUTION")
        for ex_id in ids
    }


def broken_paths(markdown: Path, sections: tuple[str, ...] | None = None) -> list[str]:
    """Relative links and code-span paths of ``markdown`` that do not resolve from its folder (only in the
    ``## <title>`` sections named, if any)."""
    text = markdown.read_text(encoding="utf-8")
    if sections is not None:
        parts = re.split(r"^(?=## )", text, flags=re.M)
        text = "".join(part for part in parts if part.splitlines()[0].removeprefix("## ").strip() in sections)
        assert all(f"## {title}\n" in text for title in sections), f"{markdown}: no section among {sections}"
    found = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path and not (markdown.parent / path).exists():
            found.append(f"{markdown}: link {target}")
    for span in CODE_SPAN.findall(text):
        if PATH_SPAN.match(span) and span not in ELSEWHERE and not (markdown.parent / span).exists():
            found.append(f"{markdown}: path `{span}`")
    return found


def nb_meta(cell) -> dict:
    """A notebook cell's nbgrader metadata (empty for a cell nbgrader does not grade)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def nb_cell(nb, grade_id: str):
    """The one cell of ``nb`` whose nbgrader ``grade_id`` is ``grade_id``."""
    (cell,) = [c for c in nb.cells if nb_meta(c).get("grade_id") == grade_id]
    return cell


def hidden_lines() -> set[str]:
    """Non-trivial lines of the hidden tests (tests/<group>/test_*.py) that no file of exercises/ (what
    students get anyway: the public tests, kata_checks.py, the documents) holds."""
    public = {line.strip() for path in (REPO_ROOT / "exercises").rglob("*") if path.is_file()
              for line in path.read_text(errors="replace").splitlines()}
    return {line.strip() for path in TESTS_DIR.glob("*/test_*.py") for line in path.read_text().splitlines()
            if len(line.strip()) > 30 and not line.strip().startswith("#")} - public


def venv_env() -> dict[str, str]:
    """This environment for a subprocess: the venv's bin first on PATH (nbgrader shells out to ``alembic``),
    and no PYTEST_ADDOPTS of this run."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTEST_ADDOPTS", None)
    return env


# ---- score-all: the command line, and a fake class graded by a fake job ----------------------------


def run_grader(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=cwd, env=venv_env())


# A stand-in for score-all's job (``python -m grader.classroom.jobs --job``): a student folder's score.txt
# holds the fraction of every exercise they get (no score.txt: an error row); each student it grades is
# logged. With a folder of gates as its second argument, it answers a student only once the file of their
# name is there (so a test can stop a run at a known row), and quits when its score-all is gone (killed -9)
# or ends it (closes its stdin: nothing else is sent while a student is being graded). Its reports have
# the JSON report's shape, as fake_report's (below; a job does not import this module, which imports torch).
FAKE_JOB = r"""
import json, os, select, sys, time
from pathlib import Path
from grader.rubric import load_rubric
log = open(sys.argv[1], "a")
gates = Path(sys.argv[2]) if len(sys.argv) > 2 else None
parent = os.getppid()
rubric = load_rubric()
for line in sys.stdin:
    task = json.loads(line)
    while gates is not None and not (gates / task["student"]).exists():
        if os.getppid() != parent or select.select([sys.stdin], [], [], 0)[0]:
            sys.exit()
        time.sleep(0.02)
    log.write(task["student"] + "\n"); log.flush()
    marker = Path(task["path"]) / "score.txt"
    if not marker.is_file():
        print(json.dumps({"error": "=no score.txt"}), flush=True)
        continue
    fraction = float(marker.read_text())
    status = "passed" if fraction >= 1 else ("partial" if fraction > 0 else "failed")
    exercises = {ex_id: {"score": ex.points * fraction, "max_score": ex.points, "status": status, "message": ""}
                 for ex_id, ex in rubric.exercises.items()}
    score = sum(e["score"] for e in exercises.values())
    gpu_test = {"name": "gpu_check", "score": 0.0, "max_score": 0.0, "status": "passed", "output": "[skipped, none] ", "kind": "gpu_check"}
    print(json.dumps({"report": {"submission": task["path"], "score": score, "max_score": rubric.max_score - rubric.gpu_points,
        "execution_time": 0.0, "isolation": "none", "warnings": [], "review": [], "public_tests": {}, "tests": [gpu_test], "exercises": exercises,
        "gpu_check": {"score": 0.0, "max_score": 0.0, "status": "skipped", "device": "none", "message": ""}}}), flush=True)
"""

# ``python -m grader ARGS`` with FAKE_JOB as score-all's job command (the command line's JSON first argument).
FAKE_JOB_CLI = ("import functools, json, sys; import grader.classroom.score_all as batch; "
                "batch.BatchOptions = functools.partial(batch.BatchOptions, job_argv=tuple(json.loads(sys.argv[1]))); "
                "from grader.cli import main; sys.exit(main(sys.argv[2:]))")


def fake_job(tmp_path: Path, gates: Path | None = None) -> tuple[str, ...]:
    return (sys.executable, "-c", FAKE_JOB, str(tmp_path / "graded.log"), *([str(gates)] if gates else []))


def fake_options(tmp_path: Path, **kwargs) -> BatchOptions:
    return BatchOptions(jobs=2, grading=GradeOptions(gpu="skip"), job_argv=fake_job(tmp_path), **kwargs)


def graded_log(tmp_path: Path) -> list[str]:
    log = tmp_path / "graded.log"
    names = sorted(log.read_text().split()) if log.is_file() else []
    log.unlink(missing_ok=True)
    return names


def without_times(csv_path: Path) -> str:
    """A grades CSV's text with its UTC times (graded_at) blanked: what two gradings under one key share."""
    return re.sub(r"(?<=,)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ(?=,|\r\n)", "", csv_path.read_bytes().decode("utf-8"))


def fake_class(root: Path, scores: dict[str, float | None]) -> Path:
    root.mkdir(mode=0o700, exist_ok=True)
    for name, fraction in scores.items():
        (root / name).mkdir(exist_ok=True)
        if fraction is not None:
            (root / name / "score.txt").write_text(str(fraction))
    return root


# ---- a JSON report without a grading -----------------------------------------------------------------
def fake_report(scores: Mapping[str, float] | None = None, tests: Iterable[tuple[str, float, float, str]] = (), *,
                fraction: float = 1.0, gpu: float | None = 1.0, gpu_status: str | None = None, gpu_message: str = "",
                messages: Mapping[str, str] | None = None, warnings: Sequence[str] = (),
                review: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON report of grader.reports.json_report.to_json's shape (test_intake_and_reports compares
    it with a real one), made up: each exercise scores ``scores[id]``, else ``fraction`` of its points,
    and is passed, partial or failed by that; ``tests``: ``(name, score, max_score, output)``, passed
    with full marks, named ``"<exercise id>: <test>"`` (the GPU-run check's entry is added last, as
    to_json adds it); an exercise's message is ``messages[id]``, else what grading would say of its
    tests here (``K of N tests failed; first: <output>``; passed: ``all N tests passed``), else empty.
    ``gpu``: the fraction of the GPU-run check's points (None: the check skipped); ``gpu_status``: its
    status, by default passed with full points, else failed; ``review``: the report's lines for review."""
    rubric, scores, messages = load_rubric(), scores or {}, messages or {}
    entries = [{"name": name, "score": score, "max_score": top, "status": "passed" if score >= top else "failed",
                "output": output, "kind": "core"} for name, score, top, output in tests]
    exercises = {}
    for ex_id, ex in rubric.exercises.items():
        score = scores.get(ex_id, round(ex.points * fraction, 4))
        own = [t for t in entries if t["name"] == ex_id or t["name"].startswith(ex_id + ": ")]
        failed = [t for t in own if t["status"] == "failed"]
        status = "passed" if score >= ex.points else ("partial" if score > 0 else "failed")
        said = (f"{len(failed)} of {len(own)} tests failed; first: {failed[0]['output']}" if failed else
                f"all {len(own) or 1} tests passed" if status == "passed" else "")
        exercises[ex_id] = {"score": score, "max_score": ex.points, "status": status, "message": messages.get(ex_id, said)}
    check = ({"score": 0.0, "max_score": 0.0, "status": "skipped", "device": "none", "message": gpu_message}
             if gpu is None else
             {"score": round(rubric.gpu_points * gpu, 4), "max_score": rubric.gpu_points,
              "status": gpu_status or ("passed" if gpu >= 1 else "failed"), "device": "cuda:0 (simulated: no CUDA here)",
              "message": gpu_message})
    entries.append({"name": "gpu_check", "score": check["score"], "max_score": check["max_score"],
                    "status": "passed" if check["score"] >= check["max_score"] else "failed",
                    "output": f"[{check['status']}, {check['device']}] {check['message']}", "kind": "gpu_check"})
    return {"submission": "sub", "score": round(sum(e["score"] for e in exercises.values()) + check["score"], 2),
            "max_score": round(sum(e["max_score"] for e in exercises.values()) + check["max_score"], 2),
            "execution_time": 1.0, "isolation": "bwrap", "warnings": list(warnings), "review": list(review),
            "public_tests": {}, "tests": entries, "exercises": exercises, "gpu_check": check}


def cpu_points() -> float:
    """The most a grading without the GPU-run check (``--gpu skip``, the fake job) can give: the rubric's."""
    rubric = load_rubric()
    return rubric.max_score - rubric.gpu_points


def owned_by(uid: int) -> list[str]:
    """What ``uid`` owns in the shared places and the SysV IPC tables (the clean-up's whole reach).

    The walk looks wherever the uid could have made something: the entries of every folder it may write
    to (its own whatever their modes), reached through folders it may enter (the student runs with its
    uid as its only group). Elsewhere it looks at folders only: a checkout's .venv under /tmp, 46,000
    files, cost 3 s of CPU per call when every file was looked at. What other tests remove meanwhile
    is skipped."""
    found: list[str] = []
    todo = [(top, _may(os.lstat(top), uid, stat.S_IWGRP, stat.S_IWOTH)) for top in SHARED_TOPS if os.path.isdir(top)]
    while todo:  # a loop: a student's chain of folders may be deeper than Python's recursion limit
        folder, writable = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not (writable or is_dir):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:  # gone meanwhile
                continue
            if st.st_uid == uid:
                found.append(entry.path)
            if is_dir and _may(st, uid, stat.S_IXGRP, stat.S_IXOTH):
                todo.append((entry.path, _may(st, uid, stat.S_IWGRP, stat.S_IWOTH)))
    for table, owner in (("shm", 7), ("msg", 7), ("sem", 4)):
        rows = Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]
        found += [f"sysv {table} {row.split()[1]}" for row in rows if int(row.split()[owner]) == uid]
    return found


def _may(st: os.stat_result, uid: int, group: int, other: int) -> bool:
    """May ``uid`` (whose only group is ``uid``) do to a folder of this owner and mode what the mode bit
    ``group`` or ``other`` allows (search, write)? To its own folders, anything: it may change their modes."""
    if st.st_uid == uid:
        return True
    return bool(st.st_mode & (group if st.st_gid == uid else other))


# --- the patch suites (tests/mutants/): test_hidden_tests.py, test_book_variants.py -------------------

SOLUTION_REGION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION\n", re.S | re.M)


def patch_problems(patch: dict) -> list[str]:
    """What is wrong with a patch (grader/authoring/mutation.py) as a change to a solution: it does not
    apply, changes nothing, or changes its module outside the ``### BEGIN/END SOLUTION`` regions (empty: none)."""
    try:
        source = reference_source(patch)
        if apply(source, patch) == source:
            return [f"{patch['name']}: changes nothing"]
    except PatchError as err:
        return [str(err)]
    start = source.index(patch["replace"])
    if not any(r.start() <= start and start + len(patch["replace"]) <= r.end() for r in SOLUTION_REGION.finditer(source)):
        return [f"{patch['name']}: changes solutions/{patch['exercise']}.py outside its ### BEGIN/END SOLUTION regions"]
    return []
