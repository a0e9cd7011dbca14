"""The nbgrader course of a release, and ``python -m grader nbgrader`` grading it (docs/nbgrader.md).

Cheap checks (the command's refusals) run always; the source notebooks and the intake of broken
notebooks are checked in test_nbgrader_notebooks.py. The whole course (``course``, module-scoped,
marked slow) is what an instructor does: release, ``nbgrader generate_assignment`` for every group
(nbgrader's own API, in this process: the command would spend seconds starting), fake ``submitted/``
notebooks (correct, mistaken, stubs, a kernel tamperer, an unreadable one, one with a deleted cell),
``python -m grader nbgrader`` (a subprocess, the real command) beside the grading of the equivalent
``.py`` files that score-all's jobs run, then ``nbgrader export`` (its CSV plugin) and ``nbgrader
release_feedback`` (its exchange, in a temporary root).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.authoring.nbgrader_release import GPU_CELL, gpu_group, notebook_modules
from grader.authoring.release import build_release
from grader.classroom.gradebook import ensure_alembic_on_path, stamp_new_gradebook
from grader.classroom.nbgrader_course import CourseError, assignment_options, check_gradebook, find_course
from grader.classroom.notebook_intake import JOURNEY
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.reports.json_report import to_json
from grader.rubric import GROUPS, REPO_ROOT, load_rubric
from grader.sandbox.modes import uid_problem
from support import hidden_lines, nb_cell, solution_lines, venv_env

SUBMITTED = ("03_causal", "04_multihead")  # the assignments the fake class hands in
# One realistic mistake per module, the same in the notebooks and in the .py files (solutions/ text).
MISTAKES = {
    "03_causal/causal_mask": ("return masked / masked.sum(dim=-1, keepdim=True)", "return masked"),
    "03_causal/causal_attention": ("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()"),
    "04_multihead/multihead_attention": ("return self.out_proj(context)", "return context"),
}
# The mistaken student's cells also use what the notebook gives them: a name of the setup cell, and a
# function of an earlier cell (the .py files import them, as their author would).
NOTEBOOK_NAMES = {
    "03_causal/causal_mask": ("\n_SHAPE = tuple(inputs.shape)\n",
                              "\ninputs = torch.tensor(kata_inputs)\n_SHAPE = tuple(inputs.shape)\n"),
    "03_causal/attention_dropout": ("\n_WEIGHTS = causal_attention_weights\n",
                                    "\nfrom causal_mask import causal_attention_weights\n_WEIGHTS = causal_attention_weights\n"),
    "04_multihead/multihead_attention": ("\n_SPLIT = split_heads\n", "\nfrom head_split import split_heads\n_SPLIT = split_heads\n"),
}
# A kernel tamperer: what defeats nbgrader autograde (later test cells skipped, asserts that cannot
# fail, the kernel told to stop), each put into a stub's solution cell of 03_causal.
TAMPER = {
    "causal_mask": "try:\n    ip = get_ipython()\n    ip.run_cell = ip.run_cell_async = lambda *a, **k: None\n"
                   "except NameError:\n    pass\n",
    "attention_dropout": "import builtins\nclass _Never(Exception):\n    pass\nbuiltins.AssertionError = _Never\n"
                         "torch.allclose = lambda *a, **k: True\n",
    "causal_attention": "import sys\nsys.exit(0)\n",
}


def _grader(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, env=venv_env(),
                          cwd=REPO_ROOT, timeout=600)


@pytest.mark.timeout(120)
def test_an_unusable_course_or_assignment_exits_2_with_one_line(tmp_path: Path):
    cases = [([str(tmp_path / "nowhere")], "not a directory"),
             ([str(tmp_path)], "no submitted/ folder"),
             ([str(tmp_path), "--assignment", "attention-kata"], "invalid choice")]
    for args, message in cases:
        result = _grader("nbgrader", *args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    (tmp_path / "submitted" / "alice" / "03_causal").mkdir(parents=True)
    result = _grader("nbgrader", str(tmp_path))
    assert result.returncode == 2 and "no gradebook.db" in result.stderr, result.stderr


@pytest.mark.timeout(60)
def test_an_assignment_the_gradebook_does_not_hold_is_refused_before_anything_is_written(tmp_path: Path):
    from nbgrader.api import Gradebook

    (tmp_path / "submitted" / "alice" / "03_causal").mkdir(parents=True)
    ensure_alembic_on_path()  # nbgrader's Gradebook runs alembic
    stamp_new_gradebook(tmp_path / "gradebook.db")  # but not for a stamped one (test_gradebook.py)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    with pytest.raises(CourseError, match="generate_assignment 03_causal first"):
        check_gradebook(find_course(tmp_path))
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:  # a due date set before generate_assignment
        gb.add_assignment("03_causal")
    with pytest.raises(CourseError, match="no notebook of this kata's course: run nbgrader generate_assignment"):
        check_gradebook(find_course(tmp_path))
    other = tmp_path / "other"
    (other / "submitted" / "bob" / "hw1").mkdir(parents=True)
    shutil.copy(tmp_path / "gradebook.db", other / "gradebook.db")
    with pytest.raises(CourseError, match="nothing submitted"):
        find_course(other)
    shutil.rmtree(other)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        assert [(a.name, a.notebooks) for a in gb.assignments] == [("03_causal", [])]  # nothing was added
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gradebook.db", "submitted"]


# --- the whole course (slow) -----------------------------------------------------------------------


def _generate_assignments(course: Path) -> None:
    """``nbgrader generate_assignment <group>`` for every group, through nbgrader's API."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    ensure_alembic_on_path()
    stamp_new_gradebook(course / "gradebook.db")  # saves nbgrader's run of alembic (test_gradebook.py)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    api = NbGraderAPI(config=config)
    for group in GROUPS:
        result = api.generate_assignment(group, force=True)
        assert result["success"], result.get("log", "") + result.get("error", "")


def _mistaken(text: str, ex_id: str, py: bool) -> str:
    if ex_id in NOTEBOOK_NAMES:
        text += NOTEBOOK_NAMES[ex_id][py].replace("kata_inputs", repr(JOURNEY))
    if ex_id not in MISTAKES:
        return text
    old, new = MISTAKES[ex_id]
    assert text.count(old) == 1, (ex_id, old)
    return text.replace(old, new)


def _hand_in(course: Path, student: str, group: str, nb, secret: str | None = "s3cret") -> None:
    folder = course / "submitted" / student / group
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{group}.ipynb")
    (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    if secret:
        (folder / "submission_secret.txt").write_text(secret + student)


def _class(course: Path, pyclass: Path) -> None:
    """The fake class: notebooks in submitted/, and the same code as .py files in pyclass/<student>/."""
    rubric = load_rubric()
    for group in SUBMITTED:
        source = nbformat.read(course / "source" / group / f"{group}.ipynb", as_version=4)
        released = nbformat.read(course / "release" / group / f"{group}.ipynb", as_version=4)
        _hand_in(course, "correct", group, source)
        mistaken = nbformat.from_dict(json.loads(json.dumps(source)))
        for ex in notebook_modules(group):
            cell = nb_cell(mistaken, ex.module)
            cell.source = _mistaken(cell.source, ex.id, py=False)
        _hand_in(course, "mistaken", group, mistaken)
        _hand_in(course, "stubs", group, released)
    tamperer = nbformat.read(course / "release" / "03_causal" / "03_causal.ipynb", as_version=4)
    for module, code in TAMPER.items():
        nb_cell(tamperer, module).source = code + nb_cell(tamperer, module).source
    _hand_in(course, "tamperer", "03_causal", tamperer)
    # unusable notebooks: that student's error, the others graded
    (course / "submitted" / "broken" / "03_causal").mkdir(parents=True)
    (course / "submitted" / "broken" / "03_causal" / "03_causal.ipynb").write_text('{"cells": [')
    deleted = nbformat.read(course / "source" / "04_multihead" / "04_multihead.ipynb", as_version=4)
    deleted.cells.remove(nb_cell(deleted, "head_split"))
    _hand_in(course, "broken", "04_multihead", deleted, secret=None)
    # the .py files of the same code
    for student, base in (("correct", REPO_ROOT / "solutions"), ("mistaken", REPO_ROOT / "solutions"),
                          ("stubs", REPO_ROOT / "exercises")):
        for ex in rubric.exercises.values():
            target = pyclass / student / ex.group / f"{ex.module}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            text = (base / ex.group / f"{ex.module}.py").read_text()
            target.write_text(_mistaken(text, ex.id, py=True) if student == "mistaken" else text)
    os.chmod(pyclass, 0o700)


RUN_CELLS = (  # every code cell of each notebook, in order, in one namespace, outside a kernel; each
    # cell's source is kept in linecache under a name of its own, as IPython's kernel does (inspect reads it)
    "import json, linecache, os, sys\n"
    "results = {}\n"
    "for path in sys.argv[1:]:\n"
    "    os.chdir(os.path.dirname(path)); sys.path.insert(0, os.getcwd())\n"
    "    sys.modules.pop('kata_checks', None)\n"
    "    ns = {'__name__': '__main__'}\n"
    "    for number, cell in enumerate(json.load(open(path))['cells']):\n"
    "        meta = cell['metadata'].get('nbgrader', {})\n"
    "        if cell['cell_type'] != 'code':\n"
    "            continue\n"
    "        code, name = ''.join(cell['source']), f'<cell {path}:{number}>'\n"
    "        linecache.cache[name] = (len(code), None, code.splitlines(True), name)\n"
    "        try:\n"
    "            exec(compile(code, name, 'exec'), ns)\n"
    "            outcome = 'ok'\n"
    "        except BaseException as err:\n"
    "            outcome = type(err).__name__\n"
    "        if meta.get('grade'):\n"
    "            results[path + ':' + meta['grade_id']] = outcome\n"
    "    sys.path.pop(0)\n"
    "print(json.dumps(results))\n")


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory, shared_domains) -> dict:
    out = tmp_path_factory.mktemp("release") / "out"
    build_release(out)
    course = out / "nbgrader"
    course.chmod(0o700)  # as docs/nbgrader.md asks (uid isolation refuses a course others can read)
    _generate_assignments(course)
    pyclass = out / "pyclass"
    _class(course, pyclass)
    before = _tree(course / "submitted")
    # the test cells of the source and released notebooks, run outside a kernel, beside the grading
    paths = [str(course / kind / g / f"{g}.ipynb") for kind in ("source", "release") for g in GROUPS]
    cells_run = subprocess.Popen([sys.executable, "-c", RUN_CELLS, *paths], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=venv_env())
    # the notebooks with the isolated grader, from the course folder, where instructors run nbgrader's
    # commands (and where a work folder named like the package would shadow it); meanwhile the same code
    # as .py files, graded as score-all's jobs grade each student (test_batch.py: rows equal single runs)
    nb_run = subprocess.Popen([sys.executable, "-m", "grader", "nbgrader", ".", "--jobs", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=venv_env(), cwd=course)
    reports = {student: to_json(grade(pyclass / student, GradeOptions(sandbox="isolated"), shared_domains))
               for student in ("correct", "mistaken", "stubs")}
    # the GPU-run check as the assignment holding its cell counts it: its own modules, a fixed share each
    in_gpu_group = assignment_options(GradeOptions(sandbox="isolated"), gpu_group())
    gpu_checks = {student: to_json(grade(pyclass / student, in_gpu_group, shared_domains))["gpu_check"]
                  for student in ("correct", "mistaken", "stubs")}
    nb_stdout, nb_stderr = nb_run.communicate(timeout=600)
    assert nb_run.returncode == 0, nb_stderr[-3000:]
    cells_stdout, cells_stderr = cells_run.communicate(timeout=600)
    cells = subprocess.CompletedProcess(cells_run.args, cells_run.returncode, cells_stdout, cells_stderr)
    return {"course": course, "out": out, "stderr": nb_stderr, "py": reports, "py_gpu": gpu_checks,
            "submitted_before": before,
            "cells_run": cells}


def _exported(course: Path, out: Path) -> dict[tuple[str, str], dict[str, str]]:
    """``nbgrader export``'s CSV (its plugin, in this process), by (assignment, student)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(out)).export(gb)
    with open(out, newline="") as f:
        return {(row["assignment"], row["student_id"]): row for row in csv.DictReader(f)}


def _cell_scores(course: Path, group: str, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(group, group, student)
        return {grade.name: grade.score for grade in notebook.grades}


@pytest.mark.slow
@pytest.mark.timeout(600)  # the course fixture may be built here
@pytest.mark.skipif(uid_problem() is not None, reason=f"uid isolation unusable here: {uid_problem()}")
def test_uid_isolation_refuses_a_course_other_users_can_read(course: dict):
    """Without a mount namespace, student code could read source/ (the solutions) and the others' notebooks."""
    root = course["course"]
    before = sorted(p.name for p in root.iterdir())
    root.chmod(0o755)
    try:
        result = _grader("nbgrader", str(root), "--sandbox", "uid")
    finally:
        root.chmod(0o700)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "readable by other users" in result.stderr and f"chmod o-rwx {root}" in result.stderr
    assert sorted(p.name for p in root.iterdir()) == before  # refused before anything was written


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_gradebook_has_each_assignments_exercises_and_export_shows_them(course: dict, tmp_path: Path):
    root = course["course"]
    rows = _exported(root, tmp_path / "grades.csv")
    rubric = load_rubric()
    full = {g: sum(ex.points for ex in rubric.in_group(g)) + (rubric.gpu_points if g == gpu_group() else 0) for g in GROUPS}
    for group in SUBMITTED:
        assert float(rows[group, "correct"]["score"]) == float(rows[group, "correct"]["max_score"]) == full[group]
        assert float(rows[group, "stubs"]["score"]) == 0.0
        assert 0 < float(rows[group, "mistaken"]["score"]) < full[group]
        assert rows[group, "correct"]["timestamp"].startswith("2026-11-20 10:00:00")
        cells = _cell_scores(root, group, "correct")
        expected = {f"{ex.module}_tests" for ex in rubric.in_group(group)} | ({GPU_CELL} if group == gpu_group() else set())
        assert set(cells) == expected, cells
    for group in SUBMITTED:  # each notebook graded on its assignment's exercises, the GPU-run check in 04 only
        report = json.loads((root / "kata-grading" / "json" / f"{group}__correct.json").read_text())
        assert set(report["exercises"]) == {ex.id for ex in rubric.in_group(group)}, report["exercises"].keys()
        assert (report["gpu_check"]["status"] == "skipped") == (group != gpu_group()), report["gpu_check"]
        assert f"] {group}__correct: {full[group]:.1f}/{full[group]:.1f} (" in course["stderr"]  # its progress line
    assert float(rows["03_causal", "tamperer"]["score"]) == 0.0, "tampering with the kernel gains nothing"
    assert float(rows["03_causal", "broken"]["score"]) == 0.0 and float(rows["04_multihead", "broken"]["score"]) == 0.0
    stderr = course["stderr"]
    assert "broken: 03_causal.ipynb: not a notebook (unreadable JSON" in stderr, stderr[-2000:]
    assert "broken: 04_multihead.ipynb: no solution cell 'head_split'" in stderr, stderr[-2000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        comment = gb.find_comment("causal_mask", "03_causal", "03_causal", "broken").auto_comment
        assert "unreadable JSON" in comment
        assert gb.find_assignment("03_causal").max_score == full["03_causal"]  # the course's max scores stay


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_each_assignment_has_a_class_summary_of_its_own_rows(course: dict):
    """One summary over 03 and 04 counted rows out of 26 under a total of 30 (issue 39): each assignment's
    summary is over its rows alone, out of its own total, and no summary mixes them."""
    work, rubric = course["course"] / "kata-grading", load_rubric()
    assert not list(work.glob("*-summary.*")), sorted(p.name for p in work.iterdir())
    for group in SUBMITTED:
        full = sum(ex.points for ex in rubric.in_group(group)) + (rubric.gpu_points if group == gpu_group() else 0)
        text = (work / group / "grades-summary.md").read_text()
        assert f"(out of {full:g})" in text, text[:800]
        assert all(other == group or f"{other}__" not in text for other in SUBMITTED)
        assert f"kata-grading/{group}/grades-summary.html" in course["stderr"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_notebook_scores_what_the_same_code_in_py_files_scores(course: dict):
    root = course["course"]
    for student, report in course["py"].items():
        for group in SUBMITTED:
            cells = _cell_scores(root, group, student)
            for ex in load_rubric().in_group(group):
                assert cells[f"{ex.module}_tests"] == pytest.approx(report["exercises"][ex.id]["score"]), (student, ex.id)
            if group == gpu_group():
                assert cells[GPU_CELL] == pytest.approx(course["py_gpu"][student]["score"]), student
    # the mistaken CausalAttention (pasted into 04 as well) costs its points once, in 03_causal: the
    # wrapper built on it is re-graded over a stand-in (never 03's answer: tests/standins/)
    mistaken = _cell_scores(root, "04_multihead", "mistaken")
    assert mistaken["multihead_wrapper_tests"] == load_rubric().exercises["04_multihead/multihead_wrapper"].points
    causal_attention = load_rubric().exercises["03_causal/causal_attention"].points
    assert 0 < _cell_scores(root, "03_causal", "mistaken")["causal_attention_tests"] < causal_attention, "partial credit"


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")  # nbgrader 0.9's exchange
def test_feedback_is_released_by_nbgrader_and_shows_no_hidden_test(course: dict):
    root = course["course"]
    hidden = hidden_lines()
    pages = sorted((root / "feedback").glob("*/*/*.html"))
    assert {(p.parent.parent.name, p.parent.name) for p in pages} == {
        *((s, g) for s in ("correct", "mistaken", "stubs", "broken") for g in SUBMITTED), ("tamperer", "03_causal")}
    for page in pages:
        text = page.read_text()
        assert [line for line in hidden if line in text] == [], page
        assert "<script" not in text
        assert page.name == f"{page.parent.name}.html"
    mistaken = (root / "feedback" / "mistaken" / "04_multihead" / "04_multihead.html").read_text()
    assert "04_multihead/multihead_attention" in mistaken and "03_causal/" not in mistaken and "GPU-run check" in mistaken
    assert "GPU-run check" not in (root / "feedback" / "mistaken" / "03_causal" / "03_causal.html").read_text()
    assert "no solution cell" in (root / "feedback" / "broken" / "04_multihead" / "04_multihead.html").read_text()
    assert (root / "feedback" / "correct" / "03_causal" / "submission_secret.txt").read_text() == "s3cretcorrect"
    assert _tree(root / "submitted") == course["submitted_before"], "the grader wrote into submitted/"
    # The folders are the instructor's alone, and the secret; the page is 0644 for its copy in the exchange.
    page = root / "feedback" / "correct" / "03_causal" / "03_causal.html"
    assert [oct(p.stat().st_mode & 0o777) for p in (root / "feedback", page.parent.parent, page.parent)] == ["0o700"] * 3
    assert (oct(page.stat().st_mode & 0o777), oct((page.parent / "submission_secret.txt").stat().st_mode & 0o777)) == (
        "0o644", "0o600")
    # Hand-built submitted/ folders (no secret, no timestamp: "broken") stop release_feedback: said, with the way out.
    for group in SUBMITTED:
        assert (f"warning: {group}: no timestamp.txt or submission_secret.txt in the submitted/ folder of broken "
                in course["stderr"]), course["stderr"][-2000:]
    assert "release the others with --CourseDirectory.student_id_exclude=broken\n" in course["stderr"]

    from nbgrader.apps import NbGraderAPI
    from nbgrader.utils import notebook_hash
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    exchange = course["out"] / "exchange"  # the course's own exchange, as its config names it (docs/nbgrader.md)
    assert config.Exchange.root == str(exchange)
    exchange.mkdir(exist_ok=True)
    exchange.chmod(0o1777)
    result = NbGraderAPI(config=config).release_feedback("03_causal", "correct")
    assert result["success"], result.get("log", "") + result.get("error", "")
    released = exchange / "attention-kata" / "feedback" / (
        notebook_hash(secret="s3cretcorrect", notebook_id="03_causal") + ".html")
    assert released.read_text() == (root / "feedback" / "correct" / "03_causal" / "03_causal.html").read_text()
    assert released.stat().st_mode & 0o004, "the student (another user) reads the released page"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_closing_count_says_what_this_run_graded(course: dict, tmp_path: Path):
    """The first run counted every notebook; a second run over the same course, after one notebook was
    handed in again without one of its cells, grades nothing, refuses that one (and the unusable one
    again) and counts the others as unchanged: what this run did, not what earlier runs did too; and shows
    a score changed in formgrader meanwhile. On a copy of the course; nothing to grade, so no job starts."""
    assert "03_causal: graded 4, errors 1, unchanged since an earlier run: 0\n" in course["stderr"], course["stderr"][-2000:]
    assert "04_multihead: graded 3, errors 1, unchanged since an earlier run: 0\n" in course["stderr"]
    root = tmp_path / "course"
    shutil.copytree(course["course"], root, symlinks=True)
    root.chmod(0o700)
    path = root / "submitted" / "tamperer" / "03_causal" / "03_causal.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.remove(nb_cell(notebook, "causal_mask"))
    nbformat.write(notebook, path)
    from nbgrader.api import Gradebook  # meanwhile, in formgrader: full marks for a mistake (test_gradebook.py: more)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        grade = gb.find_grade("causal_mask_tests", "03_causal", "03_causal", "mistaken")
        grade.manual_score = grade.max_score
        gb.db.commit()
    again = subprocess.run([sys.executable, "-m", "grader", "nbgrader", ".", "--jobs", "1"], capture_output=True,
                           text=True, env=venv_env(), cwd=root, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not [line for line in again.stderr.splitlines() if line.startswith("[")], again.stderr  # no progress line
    assert "03_causal: graded 0, errors 2, unchanged since an earlier run: 3\n" in again.stderr, again.stderr[-2000:]
    assert "  tamperer: 03_causal.ipynb: no solution cell 'causal_mask'" in again.stderr
    assert "04_multihead: graded 0, errors 1, unchanged since an earlier run: 3\n" in again.stderr
    page, exported = (root / "feedback" / "mistaken" / "03_causal" / "03_causal.html").read_text(), _exported(root, tmp_path / "e")
    assert "by formgrader" in page and f"Total: {float(exported['03_causal', 'mistaken']['score']):g} / " in page, page

@pytest.mark.slow
@pytest.mark.timeout(600)
def test_released_notebooks_hold_no_solution_and_the_source_notebooks_pass_their_public_tests(course: dict):
    """Every released notebook: no solution line of any exercise (04's CausalAttention cell is a stub);
    the test cells run (outside a kernel, in a subprocess) pass on the source notebooks and fail on the
    released stubs with NotImplementedError."""
    root = course["course"]
    solutions = solution_lines()
    for group in GROUPS:
        released = (root / "release" / group / f"{group}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in released
        for ex_id, lines in solutions.items():
            assert [line for line in lines if line in released] == [], f"{group} shows {ex_id}'s solution"
        assert (root / "release" / group / "kata_checks.py").is_file()
    result = course["cells_run"]
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = json.loads(result.stdout.splitlines()[-1])
    tests = [k for k in outcomes if not k.endswith(GPU_CELL)]
    assert len(tests) == 2 * len(load_rubric().exercises)
    assert {k: v for k, v in outcomes.items() if "/source/" in k and v != "ok"} == {}
    assert {k: v for k, v in outcomes.items() if "/release/" in k and k in tests and v != "AssertionError"} == {}
    # each failing public test says why, in one line: the stubs' NotImplementedError
    assert result.stdout.count("FAILED test_") >= len(tests) // 2 and "NotImplementedError" in result.stdout
