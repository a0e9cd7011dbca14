"""Build the Gradescope autograder zip: the grader, the hidden tests and the solutions, plus the
``setup.sh`` / ``run_autograder`` scripts Gradescope expects at the zip's root.

    build_bundle(Path("autograder.zip"))   # upload as the programming assignment's autograder

Gradescope unzips the bundle into ``/autograder/source``, runs ``setup.sh`` once to build the image,
then ``run_autograder`` for every submission, which grades ``/autograder/submission`` with
``python -m grader score --format gradescope`` into ``/autograder/results/results.json``. A
submission it cannot use (exit 2) gets results with score 0 and the reason; an autograder that
cannot start (no torch, no isolation) or a grader error exits 1 without results, which Gradescope
shows as an autograder failure instead of a 0 for the student.

Why the solutions travel too: the hidden tests compute their expected values with the reference,
in the grader's process (never in a student's: a re-grade gives the student's code stand-ins,
``tests/standins/``). The grader's own tests and ``tests/mutants`` (one-mistake implementations used
to test the hidden tests) stay out; of ``exercises/`` only the tools the worker imports travel.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from grader.rubric import REPO_ROOT, WORKER_TOOLS
from grader.visibility import check_visibility

SCRIPTS = Path(__file__).resolve().parent / "templates" / "gradescope"
# (folder, excluded sub-folders) copied from the repository.
FOLDERS = (("grader", ("tests",)), ("tests", ("mutants",)), ("solutions", ()))
# The top-level files, the students' tools the worker imports (grader/rubric.py WORKER_TOOLS), and
# exercises/documents/README.md: its table names the documents, so that Gradescope's output cites them as
# students know them (grader/reports/sources.py), not by the hidden tests' numbers ([001 In[832]]).
FILES = ("pyproject.toml", "README.md", *(f"exercises/{name}.py" for name in WORKER_TOOLS), "exercises/documents/README.md")
_SKIP = ("__pycache__", ".pytest_cache", ".ipynb_checkpoints")
_README = "# attention-kata autograder\n\nThe grader, hidden tests and solutions of the attention kata, bundled for Gradescope.\n"


def bundle_members(repo_root: Path = REPO_ROOT) -> dict[str, Path]:
    """{path in the zip: file in the repository} for everything but the two scripts."""
    members: dict[str, Path] = {}
    for folder, excluded in FOLDERS:
        base = repo_root / folder
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(base)
            if (not path.is_file() or (rel.parts and rel.parts[0] in excluded)
                    or any(part in _SKIP for part in rel.parts) or path.suffix == ".pyc"):
                continue
            members[f"{folder}/{rel.as_posix()}"] = path
    for name in FILES:
        if (repo_root / name).is_file():
            members[name] = repo_root / name
    return members


# What students see unless the instructor says otherwise: Gradescope lets them resubmit, and with the hidden
# tests' inputs and expected values in view they could resubmit until they match.
BUNDLE_VISIBILITY = "messages"
# The instructor's overrides, where the bundle holds them (run_autograder applies them to every run's results:
# grader/classroom/gradescope_overrides.py, which checks the file before it is bundled).
OVERRIDES_FILE = "overrides.csv"


def build_bundle(out_zip: Path, visibility: str = BUNDLE_VISIBILITY, overrides: bytes | None = None) -> None:
    """Write the autograder zip to ``out_zip`` (replacing an older one).

    ``visibility`` (full | messages | scores, see grader.visibility.redact) is what students see of the
    hidden tests' messages in Gradescope; ``KATA_VISIBILITY`` in the image overrides it. ``overrides``: the
    text of an overrides file, bundled as :data:`OVERRIDES_FILE`.
    """
    check_visibility(visibility)
    out_zip = Path(out_zip)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    run = (SCRIPTS / "run_autograder").read_text()
    if f"\nDEFAULT_VISIBILITY={BUNDLE_VISIBILITY}\n" not in run:
        raise RuntimeError(f"run_autograder has no DEFAULT_VISIBILITY={BUNDLE_VISIBILITY} line to set")
    scripts = {"setup.sh": (SCRIPTS / "setup.sh").read_bytes(),
               "run_autograder": run.replace(f"\nDEFAULT_VISIBILITY={BUNDLE_VISIBILITY}\n",
                                            f"\nDEFAULT_VISIBILITY={visibility}\n").encode()}
    with zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as zf:
        for script, data in scripts.items():
            _write(zf, script, data, executable=True)
        for name, path in bundle_members().items():
            _write(zf, name, path.read_bytes())
        if overrides is not None:  # other students' addresses and grades: the student's uid may not read them
            _write(zf, OVERRIDES_FILE, overrides, mode=0o600)
        if "README.md" not in zf.namelist():  # pyproject.toml names it: pip install needs it
            _write(zf, "README.md", _README.encode())


def _write(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool = False, mode: int = 0o644) -> None:
    """Add a file with Unix permissions (Gradescope needs ``run_autograder`` executable)."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | (0o755 if executable else mode)) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
