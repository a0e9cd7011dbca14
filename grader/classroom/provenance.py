"""What graded a row of the grades CSV: its provenance key, so that a resume never mixes two gradings.

A row's grade depends on more than the student's submission. Its key (:class:`Provenance`) holds
what else decides it:

- ``rubric``: the content hash of ``tests/rubric.json`` (points, kinds, dependencies);
- ``hidden_tests``: the content hash of the rest of ``tests/`` that a grading runs: the hidden tests,
  ``conftest.py``, the stand-ins, the known results, the fixtures and the seam (its READMEs and
  ``tests/mutants/``, the project's own mutation tests, are left out: no grading reads them);
- ``reference``: the content hash of ``solutions/``, which the hidden tests compare with;
- ``grader``: the package's version and a hash of the grader's code a grading runs: the job
  (grader/classroom/jobs.py) and every grader module it imports, found from their import statements,
  the worker (grader/sandbox/kata_worker/) and the students' tools it loads (grader/rubric.py
  ``WORKER_TOOLS``). The rest of the grader (the CSV, the summary, the feedback, the commands) only
  writes down what a grading returned, and a change there regrades no one;
- ``torch``: the installed torch's version (read from its metadata; score-all never imports torch):
  the hidden tests hold values printed from torch's random numbers;
- ``options``: the grading options that change a grade: ``--timeout`` (a slow call passes under one
  limit and fails under another), ``--gpu`` (``skip`` takes the GPU-run check's points out of the
  total; ``require`` and ``simulate`` choose where it runs), the memory allowance (an allocation fits
  or not) and the exercises graded (an nbgrader assignment's). ``--sandbox`` is not among them: the
  isolation mode decides where a student's code runs, not what it scores (every mode must grade alike,
  and the project's tests grade in each); nor are ``--jobs``, ``--visibility`` or the output folders.

A row holds the key's short hash (``graded_by``, 12 hex digits) and when it was graded (``graded_at``,
UTC): grader/classroom/grades_sheet.py's columns. The whole key is written beside the CSV, in
``<csv>.provenance.json`` (:func:`record_key`, the last keys a CSV was graded under), so a refusal can
say what changed (:func:`what_changed`): "the rubric (tests/rubric.json) changed since these 32 rows
were graded".
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import time
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from grader.classroom.grades_sheet import GRADED_AT_COLUMN, GRADED_BY_COLUMN
from grader.files import write_atomically
from grader.grading.options import GradeOptions
from grader.rubric import EXERCISES_DIR, REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, WORKER_TOOLS

KEY_DIGITS = 12
KEPT_KEYS = 20  # the sidecar describes the last keys a CSV was graded under
_SKIPPED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache"}
# What each part of the key is, in a refusal's words.
PARTS = {"rubric": "the rubric (tests/rubric.json)", "hidden_tests": "the hidden tests (tests/)",
         "reference": "the reference solutions (solutions/)", "grader": "the grader", "torch": "torch"}


@dataclass(frozen=True)
class Provenance:
    """What grades a run's rows (see the module docstring); :attr:`key` is its short hash."""

    rubric: str
    hidden_tests: str
    reference: str
    grader: str
    torch: str
    options: str  # JSON: {flag: value} of the grading options that change a grade

    @property
    def key(self) -> str:
        text = json.dumps(self.describe(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:KEY_DIGITS]

    def describe(self) -> dict[str, Any]:
        """The key's parts as the sidecar holds them."""
        return {**asdict(self), "options": json.loads(self.options)}


def current(grading: GradeOptions) -> Provenance:
    """The key of a grading, with ``grading``'s options, by this checkout and its installed torch."""
    tests_dir = TESTS_DIR  # read here, not bound as a default: a test points it at a changed copy
    return Provenance(
        rubric=_files_hash([tests_dir / "rubric.json"], tests_dir),
        hidden_tests=_files_hash(_tree(tests_dir, leave_out=("rubric.json", "mutants")), tests_dir),
        reference=_files_hash(_tree(SOLUTIONS_DIR), SOLUTIONS_DIR),
        grader=grader_version(),
        torch=_version("torch"),
        options=json.dumps(grade_deciding_options(grading), sort_keys=True))


def grade_deciding_options(grading: GradeOptions) -> dict[str, Any]:
    """The options of ``grading`` that change a grade (see the module docstring for why these)."""
    return {"--timeout": grading.call_timeout, "--gpu": grading.gpu, "memory (MB)": grading.memory_mb,
            "exercises": "all" if grading.exercises is None else " ".join(grading.exercises)}


def rubric_hash(tests_dir: Path | None = None) -> str:
    """The ``rubric`` part of this checkout's key (merge compares its shards' with it; rescore stamps its
    rows with it), of ``tests_dir``'s rubric (default: the repository's)."""
    tests_dir = tests_dir or TESTS_DIR
    return _files_hash([tests_dir / "rubric.json"], tests_dir)


def stamp(key: str) -> dict[str, str]:
    """The provenance cells of a row graded now under ``key``."""
    return {GRADED_BY_COLUMN: key, GRADED_AT_COLUMN: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


# --- what changed -------------------------------------------------------------------------------


def what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The parts of two keys' descriptions (:meth:`Provenance.describe`) that differ, in words:
    ``["the rubric (tests/rubric.json)", "--timeout (5.0 -> 10.0)"]``."""
    said = []
    for part, words in PARTS.items():
        if old.get(part) != new.get(part):
            detail = f" ({old.get(part)} -> {new.get(part)})" if part in ("grader", "torch") else ""
            said.append(words + detail)
    old_options, new_options = old.get("options") or {}, new.get("options") or {}
    for flag in sorted(set(old_options) | set(new_options)):
        if old_options.get(flag) != new_options.get(flag):
            said.append(f"{flag} ({old_options.get(flag)} -> {new_options.get(flag)})")
    return said


def stale_refusal(csv_path: Path, stale: Mapping[str, str], now: Provenance) -> str:
    """The one line refusing a run over ``csv_path`` whose rows ``stale`` ({student: graded_by}) were
    graded under another key than ``now``'s: what changed (:func:`stale_reason`), and the ways on (a change of
    the rubric alone: the rescore too, which runs no code)."""
    reason = stale_reason(csv_path, stale, now)
    rescore = (f", python -m grader rescore JSON_DIR --csv {csv_path} scores them again from their JSON reports "
               "(points changed only)" if reason.startswith(f"{PARTS['rubric']} changed since") else "")
    return (f"{csv_path}: {reason}; --regrade-stale grades them again, --force grades everyone again{rescore} "
            "(a CSV never mixes two gradings)")


def stale_reason(csv_path: Path, stale: Mapping[str, str], now: Provenance) -> str:
    """"the rubric (tests/rubric.json) changed since 32 rows were graded", from the CSV's sidecar; or,
    when it does not describe the rows' key, which keys they were graded under."""
    keys = sorted(set(stale.values()), key=list(stale.values()).count, reverse=True)
    count = f"{len(stale)} row{'s' if len(stale) != 1 else ''}"
    described = known_keys(csv_path)
    if keys[0] in described:
        changes = what_changed(described[keys[0]], now.describe()) or [f"the key ({keys[0]} -> {now.key})"]
        return f"{' and '.join(changes)} changed since {count} were graded"
    if not keys[0]:
        return f"{count} record no key they were graded under (graded_by is empty)"
    return (f"{count} were graded under {', '.join(keys)}, this run grades under {now.key}, and "
            f"{sidecar_path(csv_path).name} does not say what {keys[0]} was")


class MixedGradings(Exception):
    """CSVs graded under different keys, or under another rubric than this checkout's, cannot be joined
    (one line for the instructor)."""


def one_grading(sources: Mapping[str, Path]) -> dict[str, Any] | None:
    """The description of the one key that the rows of some CSVs (``sources``: {graded_by: a CSV holding
    rows graded under it}) were graded under (None: rows but no sidecar describing it, or no rows);
    MixedGradings for two keys, or a key whose rubric is not this checkout's (the merged CSV's columns
    and summary are this rubric's)."""
    if len(sources) > 1:
        (key_a, a), (key_b, b) = list(sources.items())[:2]
        old, new = known_keys(a).get(key_a), known_keys(b).get(key_b)
        what = " and ".join(what_changed(old, new)) if old and new else f"{key_a} and {key_b}"
        raise MixedGradings(f"{a} and {b} were graded under different keys ({what} differ): grade them again with "
                            "one checkout and the same options (score-all --regrade-stale) before merging")
    for key, source in sources.items():
        described = known_keys(source).get(key)
        if described is not None and described.get("rubric") != rubric_hash():
            raise MixedGradings(f"{source}: {PARTS['rubric']} changed since its rows were graded: grade it "
                                "again (score-all --regrade-stale) before merging")
        return described
    return None


# --- the sidecar: <csv>.provenance.json ---------------------------------------------------------


def sidecar_path(csv_path: Path) -> Path:
    csv_path = Path(csv_path)
    return csv_path.with_name(csv_path.name + ".provenance.json")


def known_keys(csv_path: Path) -> dict[str, dict[str, Any]]:
    """{key: its description} from the CSV's sidecar (none, or unreadable: {})."""
    try:
        keys = json.loads(sidecar_path(csv_path).read_text(encoding="utf-8")).get("keys", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {key: value for key, value in keys.items() if isinstance(value, dict)} if isinstance(keys, dict) else {}


def record_key(csv_path: Path, key: str, description: Mapping[str, Any]) -> None:
    """Add ``key`` (described) to the CSV's sidecar, the newest last, keeping the last :data:`KEPT_KEYS`."""
    keys = known_keys(csv_path)
    keys.pop(key, None)
    keys[key] = dict(description)
    kept = dict(list(keys.items())[-KEPT_KEYS:])
    text = json.dumps({"about": f"what graded the rows of {Path(csv_path).name} (their graded_by column): "
                                "grader/classroom/provenance.py", "keys": kept}, indent=2, sort_keys=False)
    write_atomically(sidecar_path(csv_path), text + "\n")


# --- content hashes ------------------------------------------------------------------------------


def _tree(root: Path, leave_out: tuple[str, ...] = ()) -> list[Path]:
    """The files under ``root`` but caches, READMEs and ``leave_out`` (names at its top)."""
    return [path for path in root.rglob("*") if path.is_file() and path.name != "README.md"
            and not path.name.endswith(".pyc") and path.relative_to(root).parts[0] not in leave_out
            and not _SKIPPED.intersection(path.relative_to(root).parts)]


def _files_hash(paths: Iterable[Path], root: Path) -> str:
    """SHA-256 over the files' paths (relative to ``root``) and bytes, in path order; a missing file counts as such."""
    digest = hashlib.sha256()
    for path in sorted(set(paths)):
        digest.update(path.relative_to(root).as_posix().encode("utf-8", "surrogateescape") + b"\0")
        try:
            data = path.read_bytes()
        except OSError as err:
            data = f"unreadable: {err.strerror}".encode()
        digest.update(f"{len(data)}\0".encode() + data)
    return digest.hexdigest()


def grader_version() -> str:
    """This grader: its package version and a hash of the code a grading runs (``1.0+3f2a...``): what the
    key and the regrade log record."""
    return f"{_version('attention-kata')}+{_files_hash(grading_code(), REPO_ROOT)[:KEY_DIGITS]}"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@cache  # which files, once a process (parsing them takes 0.2 s); their bytes are hashed at every run
def grading_code() -> tuple[Path, ...]:
    """The grader's files a grading runs (see the module docstring): the job module and every grader
    module it imports, transitively, read from their import statements; the worker's files; the
    students' tools the worker loads."""
    found: set[Path] = set()
    todo = ["grader.classroom.jobs"]
    while todo:
        path = _module_file(todo.pop())
        if path is None or path in found:
            continue
        found.add(path)
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and _ours(node.module or ""):
                todo += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names if _ours(alias.name)]
    found.update((REPO_ROOT / "grader" / "sandbox" / "kata_worker").rglob("*.py"))
    found.update(EXERCISES_DIR / f"{name}.py" for name in WORKER_TOOLS)
    return tuple(sorted(found))


def _ours(module: str) -> bool:
    return module == "grader" or module.startswith("grader.")


def _module_file(module: str) -> Path | None:
    base = REPO_ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None
