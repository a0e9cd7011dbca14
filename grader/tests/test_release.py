"""grader.authoring.release: the student folder holds no solution text; the documents travel with the exercises.

The nbgrader course of the release, and grading it, are tested in test_nbgrader_course.py. Slow parts
run real tools: pytest in the student folder.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.authoring.release import ReleaseError, build_release
from grader.rubric import GROUPS, REPO_ROOT, load_rubric
from support import LINK, broken_paths, solution_lines, venv_env
from public_runner import fill_in


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "out"
    build_release(out)
    return out


def test_solution_lines_are_found():
    lines = solution_lines()
    assert set(lines) == set(load_rubric().exercises)
    assert sum(len(v) for v in lines.values()) > 40, "the scan would be vacuous"
    assert all(lines.values()), [ex for ex, v in lines.items() if not v]


def test_refuses_a_non_empty_directory(tmp_path: Path):
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(ReleaseError, match="not empty"):
        build_release(tmp_path)


def test_student_release_has_the_exercises_and_no_solutions_or_hidden_tests(release: Path):
    student = release / "student"
    for ex in load_rubric().exercises.values():
        assert (student / "exercises" / ex.group / f"{ex.module}.py").is_file(), ex.id
    for name in ("README.md", "pytest.ini", "exercises/conftest.py", ".github/workflows/classroom.yml"):
        assert (student / name).is_file(), name
    for group in GROUPS:
        assert list((student / "exercises" / group).glob("test_*.py")), f"no public tests in {group}"
    names = {p.name for p in student.rglob("*")}
    assert not names & {"solutions", "tests", "rubric.json", "mutants", "kata_seam.py"}, names & {"solutions", "tests"}


def _quoted_solution_lines(paths: list[Path]) -> list[str]:
    forbidden = {line: ex_id for ex_id, lines in solution_lines().items() for line in lines}
    return [
        f"{path}: {line!r} (from {ex_id})"
        for path in paths
        for line, ex_id in forbidden.items()
        if line in path.read_bytes().decode("utf-8", errors="replace")
    ]


def test_no_solution_text_anywhere_in_the_student_release(release: Path):
    """No solution marker in any file; no solution line in any file but the hints (next test)."""
    files = [p for p in (release / "student").rglob("*") if p.is_file()]
    assert len(files) > 20
    markers = [f"{p}: a solution marker" for p in files if b"BEGIN SOLUTION" in p.read_bytes() or b"END SOLUTION" in p.read_bytes()]
    assert markers == [], "\n".join(markers)
    # The documents (exercises/documents/) are the course material the exercises follow: their listings
    # are the book's code, which the solutions build on; they are shipped on purpose and not scanned.
    documents = release / "student" / "exercises" / "documents"
    leaks = _quoted_solution_lines([p for p in files if p.name != "hints.md" and documents not in p.parents])
    assert leaks == [], "\n".join(leaks)


def test_hints_quote_no_solution_line(release: Path):
    leaks = _quoted_solution_lines(sorted((release / "student").rglob("hints.md")))
    assert leaks == [], "\n".join(leaks)


def test_student_readme_says_how_to_install_and_run(release: Path):
    readme = (release / "student" / "README.md").read_text()
    assert "python -m pip install torch==2.13.0 pytest pytest-timeout" in readme
    assert "python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in readme
    assert "pytest exercises/03_causal" in readme
    assert "python check_progress.py" in readme and "python view_attention.py" in readme
    assert "exercises/documents/" in readme and "zip" in readme
    positions = [readme.index(f"exercises/{group}`") for group in GROUPS]
    assert positions == sorted(positions), "the groups must be listed in order"
    ini = (release / "student" / "pytest.ini").read_text()
    assert "timeout = 10" in ini and "pytest-timeout" in ini
    unplaced = _full_repository_commands(release / "student")
    assert unplaced == [], "commands the students' repository does not have, with no note saying where they run:\n" \
        + "\n".join(unplaced)


# The full repository's commands, which the students' repository lacks: `python -m grader check` (not a module
# of the grader package: `python -m grader.authoring.stubs` says where a file came from). A mention is fine in a
# paragraph that says whose commands they are.
FULL_REPOSITORY_COMMAND = re.compile(r"python3? -m grader(?![\w.])")
WHERE_IT_RUNS = re.compile(r"full repository|instructor's (repository|side)")


def _full_repository_commands(student: Path) -> list[str]:
    """'file:line: text' for each full-repository command in the students' text (every file but the documents
    themselves) whose paragraph (lines between blank ones, comment marks aside) says nothing of where it runs."""
    found = []
    text_files = [p for p in student.rglob("*") if p.is_file() and p.suffix in (".md", ".py", ".yml", ".txt", ".ini")]
    for path in sorted(p for p in text_files if not (p.suffix == ".txt" and p.parent.name == "documents")):
        lines = path.read_text(encoding="utf-8").splitlines()
        starts = [0] + [i + 1 for i, line in enumerate(lines) if not line.strip(" \t#")] + [len(lines)]
        for start, end in zip(starts, starts[1:]):
            paragraph = "\n".join(lines[start:end])
            if WHERE_IT_RUNS.search(paragraph):
                continue
            found += [f"{path.relative_to(student)}:{i + 1}: {lines[i].strip()}"
                      for i in range(start, end) if FULL_REPOSITORY_COMMAND.search(lines[i])]
    return found


def test_the_command_check_finds_a_full_repository_command_with_no_note(tmp_path: Path):
    (tmp_path / "exercises" / "documents").mkdir(parents=True)
    (tmp_path / "README.md").write_text("Progress: `python check_progress.py`.\n\nGrade: `python -m grader score`.\n\n"
                                        "In the full repository: `python -m grader check`.\n")
    (tmp_path / "check_progress.py").write_text('"""Also: python -m grader check.\n\n'
                                                'In the full repository:\n    python -m grader check\n"""\n')
    (tmp_path / "exercises" / "kata.py").write_text("# written by python -m grader.authoring.stubs\n")
    (tmp_path / "exercises" / "documents" / "notes.txt").write_text("python -m grader score\n")
    assert _full_repository_commands(tmp_path) == ["README.md:3: Grade: `python -m grader score`.",
                                                   'check_progress.py:1: """Also: python -m grader check.']


# --- the documents, the links, and the students' own tools ----------------------------------------------

DOCUMENTS = {  # the shared folder's name -> the name in exercises/documents/ (docstrings cite these)
    "000_7ebab5a40414ec2e.txt": "chapter_notes_3.1-3.6.txt",
    "001_1e5e282f5721c1c1.txt": "notebook_causal_self_attention.txt",
    "002_f49f44e412528c0a.txt": "article_attention_mechanisms.txt",
    "003_9eefe3ab22cc3aaf.txt": "notebook_second_input_set.txt",
    "004_11bafdc60c18d391.txt": "notebook_trainable_weights.txt",
}


def _markdown_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "exercises").rglob("*.md"))]


STUDENT_SECTIONS = ("Set up", "Doing the kata (students)")


def test_every_relative_path_in_the_exercises_and_the_students_readme_sections_resolves():
    files = _markdown_files(REPO_ROOT)[1:]
    assert len(files) >= 9, files
    broken = [line for path in files for line in broken_paths(path)]
    broken += broken_paths(REPO_ROOT / "README.md", STUDENT_SECTIONS)
    assert broken == [], "\n".join(broken)


def test_every_relative_path_in_the_whole_top_readme_resolves():
    broken = broken_paths(REPO_ROOT / "README.md")
    assert broken == [], "\n".join(broken)


def test_the_link_check_finds_a_broken_path(tmp_path: Path):
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "a.txt").write_text("x")
    (tmp_path / "group").mkdir()
    md = tmp_path / "group" / "README.md"
    md.write_text("[ok](../documents/a.txt) `../documents/a.txt` [bad](../shared/docs/a.txt) `documents/a.txt` "
                  "`exercises/<group>/README.md` [web](https://example.org/x) `hints.md`\n")
    assert broken_paths(md) == [f"{md}: link ../shared/docs/a.txt", f"{md}: path `documents/a.txt`"]


def test_the_documents_travel_with_the_exercises(release: Path):
    here = REPO_ROOT / "exercises" / "documents"
    readme = (here / "README.md").read_text()
    for old, new in DOCUMENTS.items():
        assert (here / new).is_file() and (release / "student" / "exercises" / "documents" / new).is_file(), new
        assert readme.count(old) == 1, f"documents/README.md names {old} once, beside {new}"
        assert f"[{new}]({new})" in readme
    assert (release / "student" / "exercises" / "documents" / "README.md").read_text() == readme
    # the nbgrader course: the documents beside each assignment's notebook, the intro's links pointing there
    for group in GROUPS:
        source = release / "nbgrader" / "source" / group
        for new in DOCUMENTS.values():
            assert (source / "documents" / new).is_file(), (group, new)
        intro = nbformat.read(source / f"{group}.ipynb", as_version=4).cells[0].source
        links = LINK.findall(intro)
        assert links and all((source / link).is_file() for link in links if not link.startswith("http")), (group, links)
    assert "0.1766" in (REPO_ROOT / "exercises" / "03_causal" / "README.md").read_text(), \
        "03_causal/README.md warns about the unseeded 0.1766... values"
    broken = [line for path in _markdown_files(release / "student") for line in broken_paths(path)]
    assert broken == [], "\n".join(broken)


def test_hint_levels_are_folded():
    for hints in sorted((REPO_ROOT / "exercises").glob("*/hints.md")):
        text = hints.read_text()
        modules = re.findall(r"^## (\w+)$", text, re.M)
        assert modules, hints
        assert text.count("<details><summary>Level 1: a nudge</summary>") == len(modules), hints
        assert text.count("<details>") == text.count("</details>") == 3 * len(modules), hints
        assert "**Nudge:**" not in text, f"{hints}: an unfolded level"


def _student_run(student: Path, *args: str) -> subprocess.CompletedProcess:
    env = venv_env()
    env.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, *args], cwd=student, env=env, capture_output=True, text=True, timeout=120)


# The first six modules, causal_mask, and the wrapper without the CausalAttention it builds on.
WITH_SOLUTIONS = ("attention_scores", "normalization", "context_vectors", "scaled_attention", "self_attention",
                  "weight_transfer", "causal_mask", "multihead_wrapper")


@pytest.mark.slow  # a subprocess of the student release, end to end
@pytest.mark.timeout(150)
def test_check_progress_runs_in_the_student_release(release: Path, tmp_path: Path):
    """check_progress.py and its progress_pytest.py alone (no grader package) in a copy of the student folder
    where some modules are solved: the real public tests decide each module's state."""
    student = release / "student"
    modules = json.loads((student / "kata_modules.json").read_text())["modules"]
    assert [(m["group"], m["module"]) for m in modules] == [(ex.group, ex.module) for ex in load_rubric().exercises.values()]
    for shipped, source in (("check_progress.py", "progress.py"), ("progress_pytest.py", "progress_pytest.py")):
        assert (student / shipped).read_text() == (REPO_ROOT / "grader" / source).read_text(), shipped
    mine = tmp_path / "student"
    shutil.copytree(student, mine, ignore=shutil.ignore_patterns("__pycache__"))
    fill_in(mine / "exercises", WITH_SOLUTIONS)
    result = _student_run(mine, "check_progress.py")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    text = result.stdout
    rows = {line.split()[1].split("/")[1]: line for line in text.splitlines()
            if line[:3].strip().isdigit() and "/" in line}
    assert list(rows) == list(load_rubric().by_module), text
    for module, line in rows.items():
        if module in WITH_SOLUTIONS and module != "multihead_wrapper":
            assert " done " in line, line
        elif module == "multihead_wrapper":
            assert " failing " in line, line
        else:
            assert " not started " in line, line
    assert "needs causal_attention (not written yet)" in text, text
    assert f"attention kata: {len(WITH_SOLUTIONS) - 1}/{len(load_rubric().exercises)} modules done" in text
    assert "Next: attention_dropout (not started) -- exercises/03_causal/README.md, section '## attention_dropout'" in text
    bad = _student_run(student, "check_progress.py", "--bogus")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--bogus" in bad.stderr, bad.stderr


@pytest.mark.slow  # a subprocess of the student release, end to end
@pytest.mark.timeout(150)
def test_view_attention_runs_in_the_student_release(release: Path):
    student = release / "student"
    assert (student / "view_attention.py").read_text() == (REPO_ROOT / "grader" / "attention_view.py").read_text()
    result = _student_run(student, "view_attention.py", "--out", "attention.png")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "wrote attention.png (0/6 of your panels drawn)" in result.stdout
    assert (student / "attention.png").read_bytes()[:4] == b"\x89PNG"
    (student / "attention.png").unlink()


@pytest.mark.slow  # a subprocess of the student release, end to end
@pytest.mark.timeout(300)
def test_public_tests_of_the_student_release_fail_on_the_stubs(release: Path):
    student = release / "student"
    result = subprocess.run(
        [sys.executable, "-m", "pytest"], cwd=student, env=venv_env(),
        capture_output=True, text=True, timeout=280,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]  # 1: tests ran and failed (2 would be a collection error)
    assert "NotImplementedError" in output and "failed" in output.splitlines()[-1], output[-3000:]
    assert f"rootdir: {student}" in output and "configfile: pytest.ini" in output, output[:1000]
    assert "timeout: 10.0s" in output, "pytest-timeout must be on with a 10 s limit"


def test_classroom_workflow_runs_every_group_with_its_rubric_points(release: Path):
    workflow = yaml.safe_load((release / "student" / ".github" / "workflows" / "classroom.yml").read_text())
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    assert any("torch==2.13.0" in step.get("run", "") for step in steps)
    graders = {step["with"]["command"]: step for step in steps if "autograding-command-grader" in step.get("uses", "")}
    rubric = load_rubric()
    for group in GROUPS:
        step = graders[f"python -m pytest exercises/{group}"]
        assert step["with"]["max-score"] == sum(ex.points for ex in rubric.exercises.values() if ex.group == group)
    reporter = [step for step in steps if "autograding-grading-reporter" in step.get("uses", "")][0]
    ids = [step["id"] for step in graders.values()]
    assert reporter["with"]["runners"].split(",") == ids
    assert set(reporter["env"]) == {f"{i.upper()}_RESULTS" for i in ids}
