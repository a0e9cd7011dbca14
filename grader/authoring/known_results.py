"""The known mistakes' results on the public tests' own inputs: ``exercises/known_results.json``.

    python -m grader.authoring.known_results          # write it
    python -m grader.authoring.known_results --check  # exit 1 if it is not what the library gives

The library of known mistakes is the patches of ``tests/mutants/`` (mutants.py and student_mistakes.py,
the format of grader/authoring/mutation.py) that carry a ``cause``: the name of a message of
``exercises/kata_mistakes.py``, or the message itself. The public tests run once on the solutions and
once per library mistake (the mistake's patch over the solutions), every check recording what it was
given (exercises/kata_known.py). For each mistake, the results that differ from the solutions' on the
same test and call are kept with its cause: when a student's result equals one of them, the public
test names that cause; no answer is shipped, only results. CI checks that the file is current
(grader/tests/test_public_tests.py), from the runs that prove the public tests catch each mistake.
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
LIBRARY = ((TESTS_DIR / "mutants" / "mutants.py", "MUTANTS"), (TESTS_DIR / "mutants" / "student_mistakes.py", "MISTAKES"))
SOLVED, STUBS, DOCTESTS = "solved", "stubs", "__doctests__"
INI = "[pytest]\ntimeout = 60\nfilterwarnings =\n    ignore:Failed to initialize NumPy\n"
SOLVED_PATH = [str(SOLUTIONS_DIR / group) for group in GROUPS]


def library() -> list[dict]:
    """Every patch of the library that names a cause, mutants first."""
    return [p for path, name in LIBRARY for p in mutation.load_patches(path, name) if p.get("cause")]


def _students_module(name: str):
    """A module of exercises/ (kata_mistakes: the one table of messages; kata_known: how checks record)."""
    sys.path.insert(0, str(EXERCISES_DIR))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXERCISES_DIR))


def cause_text(patch: dict) -> str:
    """The message a check shows for ``patch``: a name of exercises/kata_mistakes.py, or the text itself."""
    cause = patch["cause"]
    return cause if " " in cause else getattr(_students_module("kata_mistakes"), cause)


def public_test_file(ex_id: str, tree: Path = EXERCISES_DIR) -> Path:
    """``tree/<group>/test_<module>.py``: the public tests of an exercise (same layout as the hidden ones)."""
    return tree / load_rubric().exercises[ex_id].test_file.relative_to(TESTS_DIR)


def run_public_tests(patches: list[dict], doctests: bool = False) -> tuple[dict, dict[str, list[dict]]]:
    """The public tests on the stubs, on the solutions and once per patch (its test file, or its group's
    folder when it says ``"run": "group"``), every check recording; with ``doctests``, the solutions'
    ``>>>`` examples too. Returns ``({run: forked_pytest result, or {"__error__": ...}}, {run: records})``."""
    modules = [ex.module for ex in load_rubric().exercises.values()]
    with tempfile.TemporaryDirectory(prefix="public-runs-") as tmp_name:
        tmp = Path(tmp_name)
        shutil.copytree(EXERCISES_DIR, tmp / "exercises", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (tmp / "pytest.ini").write_text(INI)
        (tmp / "records").mkdir()

        record_env = _students_module("kata_known").RECORD_ENV

        def job(run: str, **spec) -> dict:
            return {"id": run, "env": {record_env: str(tmp / "records" / f"{run}.jsonl")}, **spec}

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
        raw = forked_pytest.run_sessions(sessions, timeout=180)
        records = {j["id"]: _read_records(Path(j["env"][record_env])) for j in jobs}
    return {**raw, **broken}, records


def _read_records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def known_results(records: dict[str, list[dict]], patches: list[dict]) -> dict[str, list[dict]]:
    """``{test::call: [{"cause", "mistake", "got"}]}``: each patch's results that the solutions do not give."""
    solved: dict[str, list] = {}
    for rec in records.get(SOLVED, []):
        solved.setdefault(rec["key"], []).append(rec["got"])
    data: dict[str, list[dict]] = {}
    for patch in patches:
        cause = cause_text(patch)
        for rec in records.get(patch["name"], []):
            entry = {"cause": cause, "mistake": patch["name"], "got": rec["got"]}
            if rec["got"] not in solved.get(rec["key"], []) and entry not in data.get(rec["key"], []):
                data.setdefault(rec["key"], []).append(entry)
    return {key: sorted(entries, key=lambda e: e["mistake"]) for key, entries in sorted(data.items())}


def render(data: dict[str, list[dict]]) -> str:
    """The file's text: one line per test and call, stable and compact, so that a change reads as a small diff."""
    lines = [f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(entries, sort_keys=True, ensure_ascii=False, separators=(',', ':'))}"
             for key, entries in sorted(data.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    patches = library()
    _, records = run_public_tests(patches)
    text = render(known_results(records, patches))
    if "--check" in argv:
        current = DATA_FILE.read_text(encoding="utf-8") if DATA_FILE.is_file() else ""
        print("exercises/known_results.json is current" if current == text else
              "exercises/known_results.json is out of date: run python -m grader.authoring.known_results")
        return 0 if current == text else 1
    DATA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {DATA_FILE.relative_to(REPO_ROOT)}: {sum(map(len, json.loads(text).values()))} results of "
          f"{len(patches)} mistakes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
