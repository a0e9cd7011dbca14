"""Build a release: the students' repository and an nbgrader course for classes that use Jupyter.

    build_release(Path("release"))  ->  release/student/   (hand this to students, e.g. as a
                                                            GitHub Classroom template repository)
                                        release/nbgrader/  (instructor only: holds the solutions)

Why two outputs: the command-line kata (``exercises/`` + pytest) is the primary format, but some
classes work in Jupyter and collect with nbgrader; its SOURCE notebooks hold the solutions, which
nbgrader's ``generate_assignment`` strips (grader/authoring/nbgrader_release.py builds that course: one
assignment per group, public tests only). The student folder is built only from ``exercises/``
(already stubbed by grader/authoring/stubs.py), templates and the rubric's lists and points, never from
a file of ``solutions/`` or ``tests/``, so no solution text can reach it; grader/tests/test_release.py
scans it to make sure.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from string import Template

from grader import attention_view, progress, progress_pytest
from grader.authoring.nbgrader_release import _IGNORE, TEMPLATES, ReleaseError, build_nbgrader_course
from grader.rubric import EXERCISES_DIR, GROUPS, load_rubric


def build_release(out: Path) -> None:
    """Write ``out/student`` and ``out/nbgrader``; ``out`` must not exist or be an empty folder.

    Refusing a non-empty ``out`` keeps a stale file of an earlier release (or anything else) from
    being shipped to students along with the new one.
    """
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"{out} exists and is not empty: choose a new or empty directory")
    if not EXERCISES_DIR.is_dir():
        raise ReleaseError(f"{EXERCISES_DIR} is missing: generate the stubs first (python -m grader.authoring.stubs)")
    build_student_release(out / "student")
    build_nbgrader_course(out / "nbgrader")


# --- the student repository ----------------------------------------------------------------------


# The students' own tools, shipped as the very files the grader's `check` and `view` commands run. The progress
# view is two: check_progress.py imports progress_pytest.py from its own folder, by that name.
STUDENT_SCRIPTS = {"check_progress.py": progress.__file__, "progress_pytest.py": progress_pytest.__file__,
                   "view_attention.py": attention_view.__file__}


def build_student_release(dest: Path) -> None:
    """Copy ``exercises/`` (documents included) and add the student README, pytest.ini, a GitHub
    Classroom workflow, and the progress and attention-view scripts with the module list they read."""
    rubric = load_rubric()
    shutil.copytree(EXERCISES_DIR, dest / "exercises", ignore=_IGNORE)
    for name, source in STUDENT_SCRIPTS.items():
        shutil.copy(source, dest / name)
    modules = [{"group": ex.group, "module": ex.module} for ex in rubric.exercises.values()]
    (dest / progress.MODULES_FILE).write_text(json.dumps(
        {"about": "The modules in the order of the chapter (from the kata's rubric); check_progress.py reads it.",
         "modules": modules}, indent=1) + "\n")
    lines = []
    for number, group in enumerate(GROUPS, start=1):
        modules = [ex.module for ex in rubric.exercises.values() if ex.group == group]
        lines.append(f"{number}. `exercises/{group}` -- {rubric.groups[group].heading}: "
                     + ", ".join(f"`{m}.py`" for m in modules))
    readme = Template((TEMPLATES / "student_README.md").read_text()).substitute(group_list="\n".join(lines))
    (dest / "README.md").write_text(readme)
    shutil.copy(TEMPLATES / "pytest.ini", dest / "pytest.ini")
    shutil.copy(TEMPLATES / "requirements.txt", dest / "requirements.txt")
    shutil.copy(TEMPLATES / "student_gitignore", dest / ".gitignore")
    workflows = dest / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "classroom.yml").write_text(classroom_workflow())


# One autograding step of the Classroom workflow: a group's public tests, worth the group's points.
CLASSROOM_STEP = Template("""\
      - name: $group
        id: $id
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: $group
          setup-command: ""
          command: python -m pytest exercises/$group
          timeout: 5
          max-score: $points
""")


def classroom_workflow() -> str:
    """templates/github-classroom.yml with a step per group of the rubric, each worth the group's points,
    and the reporter that adds them up: written here, so that no point count is kept by hand."""
    rubric = load_rubric()
    ids = [f"group-{number:02d}" for number in range(1, len(GROUPS) + 1)]
    steps = [CLASSROOM_STEP.substitute(group=group, id=step_id,
                                       points=f"{sum(ex.points for ex in rubric.in_group(group)):g}")
             for group, step_id in zip(GROUPS, ids)]
    env = [f'          {step_id.upper()}_RESULTS: "${{{{ steps.{step_id}.outputs.result }}}}"' for step_id in ids]
    return Template((TEMPLATES / "github-classroom.yml").read_text()).substitute(
        group_steps="\n".join(steps), reporter_env="\n".join(env), runners=",".join(ids))
