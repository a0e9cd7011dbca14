"""The known mistakes' results on the tests' own inputs: ``exercises/known_results.json`` for the public
tests, ``tests/known_results.json`` for the hidden tests (their feedback names the same causes).

    python -m grader.authoring.known_results          # write both (a file current but for float noise is kept)
    python -m grader.authoring.known_results --check  # exit 1 if either is not what the library gives
    ... --check --other-float-path                    # the same on another float path (OTHER_FLOAT_PATH)

The library of known mistakes is the patches of ``tests/mutants/`` (mutants.py and student_mistakes.py,
the format of grader/authoring/mutation.py) that carry a ``cause``: the name of a message of
``exercises/kata_mistakes.py``, or the message itself. The public tests run once on the solutions and
once per library mistake (the mistake's patch over the solutions), every check recording what it was
given (exercises/kata_known.py). For each mistake, the results that differ from the solutions' on the
same test and call are kept with its cause: when a student's result equals one of them, the public
test names that cause; no answer is shipped, only results. The hidden tests run the same way on the
solutions and once per mutant with a cause (its exercise's tests and those of the exercises built on it).
CI checks that both files are current (grader/tests/test_public_tests.py, test_hidden_tests.py), from
the runs that prove the tests catch each mistake: equal but for float noise (``mismatches``), since a file
written on one CPU is read on others, and again on another float path (test_float_paths.py).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from grader.authoring import forked_pytest, mutation
from grader.rubric import GROUPS, REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, load_rubric

EXERCISES_DIR = REPO_ROOT / "exercises"
DATA_FILE = EXERCISES_DIR / "known_results.json"
HIDDEN_DATA_FILE = TESTS_DIR / "known_results.json"
MUTANTS = (TESTS_DIR / "mutants" / "mutants.py", "MUTANTS")
LIBRARY = (MUTANTS, (TESTS_DIR / "mutants" / "student_mistakes.py", "MISTAKES"))
SOLVED, STUBS, DOCTESTS = "solved", "stubs", "__doctests__"
INI = "[pytest]\ntimeout = 60\nfilterwarnings =\n    ignore:Failed to initialize NumPy\n"
SOLVED_PATH = [str(SOLUTIONS_DIR / group) for group in GROUPS]
# Another float path than this CPU's: ATen's portable kernels instead of its AVX2/AVX-512 ones, and MKL's
# compatible code path instead of the one it picks for this CPU. The results move by float noise, as they do
# from an AMD to an Intel machine; CI recomputes the known results so (grader/tests/test_float_paths.py).
OTHER_FLOAT_PATH = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}


def library(files: tuple[tuple[Path, str], ...] = LIBRARY) -> list[dict]:
    """Every patch of the library (or of ``files``) that names a cause, mutants first."""
    return [p for path, name in files for p in mutation.load_patches(path, name) if p.get("cause")]


def students_module(name: str):
    """A module of exercises/ (kata_mistakes: the one table of messages; kata_known: how checks record)."""
    sys.path.insert(0, str(EXERCISES_DIR))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXERCISES_DIR))


def cause_text(patch: dict) -> str:
    """The message a check shows for ``patch``: a name of exercises/kata_mistakes.py, or the text itself."""
    cause = patch["cause"]
    return cause if " " in cause else getattr(students_module("kata_mistakes"), cause)


def named_words(patch: dict) -> list[str]:
    """What a "likely cause:" line of ``patch``'s runs may contain: its cause, its expected message, and the
    other words it is documented to be named in (``also_named``)."""
    cause = [cause_text(patch)] if patch.get("cause") else []
    return [*cause, *([patch["expect_message"]] if "expect_message" in patch else []), *patch.get("also_named", [])]


def likely_causes(outcomes) -> list[str]:
    """The causes the failing tests of a run name: ``outcomes``, each test's ``(status, message, ...)``."""
    return [line.strip()[len("likely cause: "):] for status, *_, message in outcomes if status == "failed"
            for line in message.splitlines() if line.strip().startswith("likely cause: ")]


def public_test_file(ex_id: str, tree: Path = EXERCISES_DIR) -> Path:
    """``tree/<group>/test_<module>.py``: the public tests of an exercise (same layout as the hidden ones)."""
    return tree / load_rubric().exercises[ex_id].test_file.relative_to(TESTS_DIR)


def run_public_tests(patches: list[dict], doctests: bool = False,
                     environ: dict[str, str] | None = None) -> tuple[dict, dict[str, list[dict]]]:
    """The public tests on the stubs, on the solutions and once per patch (its test file, or its group's
    folder when it says ``"run": "group"``), every check recording; with ``doctests``, the solutions'
    ``>>>`` examples too; with ``environ``, on that float path (:data:`OTHER_FLOAT_PATH`). Returns ``({run: forked_pytest result, or {"__error__": ...}}, {run: records})``."""
    modules = [ex.module for ex in load_rubric().exercises.values()]
    with tempfile.TemporaryDirectory(prefix="public-runs-") as tmp_name:
        tmp = Path(tmp_name)
        shutil.copytree(EXERCISES_DIR, tmp / "exercises", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (tmp / "pytest.ini").write_text(INI)
        (tmp / "records").mkdir()

        def job(run: str, **spec) -> dict:
            return {"id": run, "env": record_env(tmp / "records", run), **spec}

        jobs, broken = [job(STUBS), job(SOLVED, path=SOLVED_PATH)], {}
        for patch in patches:
            try:
                patched = mutation.write_patched(patch, tmp / "mistakes" / patch["name"])
            except mutation.PatchError as err:
                broken[patch["name"]] = {"__error__": ("patch", str(err))}
                continue
            target = public_test_file(patch["exercise"], Path("exercises"))
            select = f"{target.parent.as_posix()}/" if patch.get("run") == "group" else f"{target.as_posix()}::"
            jobs.append(job(patch["name"], path=[str(patched.parent), *SOLVED_PATH], select=[select]))
        sessions = [{"args": ["exercises", "-c", "pytest.ini", "--rootdir", str(tmp)], "cwd": str(tmp),
                     "forbid": modules, "jobs": jobs}]
        if doctests:
            sessions.append({"args": ["--doctest-modules", "solutions"], "cwd": str(REPO_ROOT), "jobs": [{"id": DOCTESTS}]})
        raw = forked_pytest.run_sessions(sessions, timeout=180, environ=environ)
        records = read_records(tmp / "records", [j["id"] for j in jobs])
    return {**raw, **broken}, records


def hidden_select(exercises: list[str] | None) -> list[str] | None:
    """The node id prefixes of the hidden tests of ``exercises`` (None: all)."""
    if exercises is None:
        return None
    rubric = load_rubric().exercises
    return [f"{rubric[ex].test_file.relative_to(REPO_ROOT).as_posix()}::" for ex in exercises]


def record_env(record_dir: Path, run: str) -> dict[str, str]:
    """The environment under which a run's checks record what they are given (exercises/kata_known.py)."""
    return {students_module("kata_known").RECORD_ENV: str(record_file(record_dir, run))}


def hidden_job(run: str, impl: Path, exercises: list[str] | None, record_dir: Path) -> dict:
    """A forked_pytest job running the hidden tests of ``exercises`` (all: None) on ``impl``, recording."""
    return {"id": run, "options": {"impl": str(impl)}, "select": hidden_select(exercises), "env": record_env(record_dir, run)}


def run_hidden_tests(patches: list[dict], environ: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """What every check of the hidden tests was given on the solutions (``SOLVED``) and on each patch over
    them (its exercise's tests and those of the exercises built on it, as test_hidden_tests.py runs them)."""
    rubric = load_rubric()
    with tempfile.TemporaryDirectory(prefix="hidden-runs-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "records").mkdir()
        jobs = [hidden_job(SOLVED, SOLUTIONS_DIR, None, tmp / "records")]
        for patch in patches:
            impl = tmp / "impl" / patch["name"]
            shutil.copytree(SOLUTIONS_DIR, impl, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            mutation.write_patched(patch, impl)
            jobs.append(hidden_job(patch["name"], impl, rubric.affected_by(patch["exercise"]), tmp / "records"))
        modules = [ex.module for ex in rubric.exercises.values()]
        forked_pytest.run_sessions([{"args": [str(TESTS_DIR)], "cwd": str(REPO_ROOT), "forbid": modules,
                                     "jobs": jobs}], timeout=180, environ=environ)
        return read_records(tmp / "records", [j["id"] for j in jobs])


def read_records(folder: Path, runs: list[str]) -> dict[str, list[dict]]:
    """The records of ``runs`` (in ``folder``, see :func:`record_file`)."""
    return {run: _read_records(record_file(folder, run)) for run in runs}


def record_file(folder: Path, run: str) -> Path:
    """Where a run's checks record what they were given: one file per run, its id made a file name."""
    return folder / (run.replace("/", "__") + ".jsonl")


def _read_records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def known_results(records: dict[str, list[dict]], patches: list[dict]) -> dict[str, list[dict]]:
    """``{test::call: [{"cause", "mistake", "got"}]}``: each patch's results that the solutions do not give
    (beyond float noise: the least tolerance a known result is matched with, exercises/kata_known.py), but for
    a result that is NaN everywhere, which names no one mistake."""
    same = students_module("kata_known").same
    solved: dict[str, list] = {}
    for rec in records.get(SOLVED, []):
        solved.setdefault(rec["key"], []).append(rec["got"])
    data: dict[str, list[dict]] = {}
    for patch in patches:
        cause = cause_text(patch)
        for rec in records.get(patch["name"], []):
            if _only_nan(rec["got"]):  # NaN alone: any mistake that gives NaN there reproduces it
                continue
            kept = data.get(rec["key"], [])
            if not any(same(rec["got"], got) for got in solved.get(rec["key"], [])) and not any(
                    e["mistake"] == patch["name"] and same(rec["got"], e["got"]) for e in kept):
                data.setdefault(rec["key"], []).append({"cause": cause, "mistake": patch["name"], "got": rec["got"]})
    return {key: sorted(entries, key=lambda e: e["mistake"]) for key, entries in sorted(data.items())}


def _only_nan(got: dict) -> bool:
    """A recorded tensor without one value that is not NaN (exercises/kata_known.py writes NaN as "nan")."""
    values = got.get("values")
    return bool(values) and all(v == "nan" for v in values)


def mismatches(written: dict[str, list[dict]], computed: dict[str, list[dict]]) -> list[str]:
    """Where the known results ``written`` (a file's) are not what a run ``computed``: a test and call, a
    mistake or cause, or a result beyond float noise (the tolerance the matching uses at the least), so
    that a file written on one CPU is current on another. Empty: current."""
    same = students_module("kata_known").same
    found = [f"{key}: {'only in the file' if key in written else 'not in the file'}"
             for key in sorted(set(written) ^ set(computed))]
    for key in sorted(set(written) & set(computed)):
        old, new = written[key], computed[key]
        if [(e["mistake"], e["cause"]) for e in old] != [(e["mistake"], e["cause"]) for e in new]:
            found.append(f"{key}: the file has {[e['mistake'] for e in old]}, the run gave {[e['mistake'] for e in new]}")
        else:
            found += [f"{key}: {e['mistake']}'s result differs beyond float noise"
                      for e, n in zip(old, new) if not same(n["got"], e["got"])]
    return found


def render(data: dict[str, list[dict]]) -> str:
    """The file's text: one line per test and call, stable and compact, so that a change reads as a small diff."""
    lines = [f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(entries, sort_keys=True, ensure_ascii=False, separators=(',', ':'))}"
             for key, entries in sorted(data.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def computed(environ: dict[str, str] | None = None) -> dict[Path, dict[str, list[dict]]]:
    """Both files' known results as the library gives them now (on the float path ``environ`` sets)."""
    return computed_with_runs(environ)[0]


def computed_with_runs(environ: dict[str, str] | None = None) -> tuple[dict[Path, dict[str, list[dict]]], dict]:
    """:func:`computed`, and the public runs it came from (``{run: forked_pytest result}``: what their
    failing tests said, the causes named on that float path among it)."""
    patches, mutants = library(), library((MUTANTS,))
    runs, records = run_public_tests(patches, environ=environ)
    return {DATA_FILE: known_results(records, patches),
            HIDDEN_DATA_FILE: known_results(run_hidden_tests(mutants, environ=environ), mutants)}, runs


def read(path: Path) -> dict[str, list[dict]]:
    """A file's known results ({} when it is missing or not JSON)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    results = computed(OTHER_FLOAT_PATH if "--other-float-path" in argv else None)
    stale = {path: mismatches(read(path), data) for path, data in results.items()}
    for path, data in results.items():
        name = path.relative_to(REPO_ROOT)
        if "--check" in argv:
            print(f"{name} is {'out of date: run python -m grader.authoring.known_results' if stale[path] else 'current'}",
                  *stale[path][:10], sep="\n  ")
        elif stale[path] or not path.is_file():  # a file current but for float noise is left as it is
            path.write_text(render(data), encoding="utf-8")
            print(f"wrote {name}: {sum(map(len, data.values()))} results")
        else:
            print(f"{name} is current")
    return 1 if "--check" in argv and any(stale.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
