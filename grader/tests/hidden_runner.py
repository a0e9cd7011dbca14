"""Helpers for proving the hidden tests: run them on implementation dirs, read back per-test outcomes.

* ``run_hidden({job id: (impl dir, exercises or None)})`` runs the hidden tests of those exercises
  (all when None) on each dir, ``python -m pytest tests/... --impl=DIR`` as it were: one process
  imports torch and collects the hidden tests once, each run is a child forked from it, two at a
  time (grader/authoring/forked_pytest.py);
* ``overlay(mutant, dest)``: ``solutions/`` copied to ``dest`` with the mutant's patch applied;
* ``over_standins(dest)``: ``solutions/`` with every stand-in (tests/standins/) in place, as re-grades
  give them;
* ``one_script(dest)``: the solutions written as one script, split back into modules by the intake;
* ``alone(exercise, dest)``: an implementation holding the reference modules of ``exercise`` and of
  what it depends on (rubric.json's ``depends_on``), every other module a tripwire that kills the
  process importing it;
* ``mutant_problems()`` judges one mutant's run (which exercises' tests can reach a module:
  ``Rubric.affected_by`` in grader/rubric.py);
* ``proof_runs()``: every run of test_hidden_tests.py and of test_book_variants.py, in one driver, once
  per process (the two modules run on one worker: grader/tests/conftest.py).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple

from grader.authoring import forked_pytest, known_results, mutation
from grader.rubric import REPO_ROOT, SOLUTIONS_DIR, TESTS_DIR, exercise_of_test, load_rubric


EXERCISES_DIR = REPO_ROOT / "exercises"
TRIPWIRE_EXIT = 97
TRIPWIRE = (
    "import os\n"
    "os.write(2, b'tripwire: {module} was imported while testing {exercise} alone\\n')\n"
    f"os._exit({TRIPWIRE_EXIT})\n"
)


class Outcome(NamedTuple):
    """One hidden test's result. ``status`` is ``passed``, ``failed``, ``error`` or ``skipped``."""

    exercise: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def first_line(self) -> str:
        lines = [line for line in self.message.splitlines() if line.startswith("E ")]
        return (lines or self.message.splitlines() or [""])[0]


class HiddenRunError(RuntimeError):
    """pytest did not produce a usable report (usage error, crash, nothing collected, tripwire, ...)."""


def run_hidden(runs: dict[str, tuple[Path, list[str] | None]], standins: tuple[str, ...] = (), kinds: dict[str, str] | None = None,
               record_dir: Path | None = None) -> dict[str, dict[str, Outcome] | HiddenRunError]:
    """``{job id: {nodeid: Outcome}}`` for ``{job id: (impl dir, exercises or None for all)}``, or the
    HiddenRunError of a run that did not end with pytest's 0 or 1 (or that reported no test at all).

    The hidden tests are collected once (``pytest tests``); each run is a forked child that sets
    ``--impl`` to its dir and runs the tests of its exercises. The runs named in ``standins`` are
    re-grades: their dirs hold the stand-ins of what their exercises build on (:func:`over_standins`),
    and their expected values are the reference's over the same stand-ins.
    The runs named in ``kinds`` run their tests of that kind alone (``{job id: "core"}``). With ``record_dir``, every check records what it
    was given in ``<job id>.jsonl`` there (exercises/kata_known.py; grader/authoring/known_results.py reads them).
    """
    jobs = [{"id": job_id, "options": {"impl": str(impl),
                                       **({"standins": ",".join(STANDIN_MODULES)} if job_id in standins else {})},
             "select": known_results.hidden_select(exercises), **({"kind": kinds[job_id]} if job_id in (kinds or {}) else {}),
             **({"env": known_results.record_env(record_dir, job_id)} if record_dir else {})}
            for job_id, (impl, exercises) in runs.items()]
    modules = [ex.module for ex in load_rubric().exercises.values()]
    raw = forked_pytest.run_sessions([{"args": [str(TESTS_DIR)], "cwd": str(REPO_ROOT), "forbid": modules,
                                       "jobs": jobs}], timeout=180)
    results: dict[str, dict[str, Outcome] | HiddenRunError] = {}
    for job_id, (impl, exercises) in runs.items():
        res = raw[job_id]
        if res["rc"] not in (0, 1) or not res["tests"]:
            results[job_id] = HiddenRunError(f"the hidden tests of {exercises or 'every exercise'} on {impl} ended with "
                                             f"{res['rc']} ({len(res['tests'])} tests):\n{res['output']}")
        else:
            results[job_id] = {nodeid: Outcome(exercise or exercise_of_test(nodeid) or "", status, message)
                               for nodeid, (status, exercise, message) in res["tests"].items()}
    return results


def _copy_solutions(dest: Path) -> Path:
    shutil.copytree(SOLUTIONS_DIR, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def overlay(mutant: dict, dest: Path) -> Path:
    """``dest``: a copy of ``solutions/`` with the mutant's patch applied."""
    mutation.write_patched(mutant, _copy_solutions(dest))
    return dest


WITH_STANDINS = [ex for ex in load_rubric().exercises.values() if ex.standin_file.is_file()]
STANDIN_MODULES = tuple(sorted(ex.module for ex in WITH_STANDINS))
# A class's stand-in is deliberately not attention: it fails every core test of its exercise. A function's
# computes the result with the library: it passes every test of its exercise (tests/standins/README.md).
CLASS_STANDINS = sorted(ex.id for ex in WITH_STANDINS if ex.standin_is_a_class)
FUNCTION_STANDINS = sorted(ex.id for ex in WITH_STANDINS if not ex.standin_is_a_class)


def over_standins(dest: Path) -> Path:
    """``dest``: a copy of ``solutions/`` with every module that has a stand-in replaced by it."""
    _copy_solutions(dest)
    for exercise in WITH_STANDINS:
        shutil.copy(exercise.standin_file, dest / exercise.reference_file.relative_to(SOLUTIONS_DIR))
    return dest


def one_script(dest: Path) -> Path:
    """The solutions as a student following the chapter in one file writes them (every module's file, in
    the rubric's order, in ``chapter3_attention.py``, with a demo at the end), split back into modules by
    the intake (grader/grading/script_split.py); returns the split's root."""
    from grader.grading.intake import locate_submission

    (dest / "upload").mkdir(parents=True)
    script = "\n".join(ex.reference_file.read_text() for ex in load_rubric().exercises.values())
    demo = "\nif __name__ == '__main__':\n    print(CausalAttention(3, 2, 6, 0.0)(torch.rand(1, 6, 3)))\n"
    (dest / "upload" / "chapter3_attention.py").write_text(script + demo)
    return locate_submission(dest / "upload", dest / "scratch")


def alone(ex_id: str, dest: Path) -> Path:
    """``dest``: the reference modules of ``ex_id`` and of what it depends on; tripwires for all the others."""
    keep = {ex_id, *load_rubric().depends_on_all(ex_id)}
    _copy_solutions(dest)
    for other in load_rubric().exercises.values():
        if other.id not in keep:
            target = dest / other.reference_file.relative_to(SOLUTIONS_DIR)
            target.write_text(TRIPWIRE.format(module=other.module, exercise=ex_id))
    return dest


def mutant_problems(mutant: dict, results: dict[str, Outcome] | HiddenRunError) -> list[str]:
    """What is wrong with one mutant's run (empty: caught by its own exercise, and no other exercise broken)."""
    if isinstance(results, HiddenRunError):
        return [f"the hidden-test run did not complete: {results}"]
    own = mutant["exercise"]
    problems = []
    if not any(o.exercise == own and not o.passed for o in results.values()):
        problems.append(f"survived: no test of {own} fails ({mutant['mistake']})")
    allowed = {own, *mutant.get("collateral", ())}
    for nodeid, o in sorted(results.items()):
        if o.exercise not in allowed and not o.passed:
            problems.append(f"breaks {o.exercise or '?'}: {nodeid} {o.status}: {o.first_line}")
    return problems


MUTANTS = mutation.load_mutants()
# A mutant that changes nothing, and mutant 20 without the collateral it needs: the mutant verdict
# must judge both wrong (test_hidden_tests.py (e)), with these beginnings of a problem.
_M20 = next(m for m in MUTANTS if m["name"] == "20_causal_mask_not_cut_to_tokens")
CONTROLS = {
    "control_noop": ({"name": "control_noop", "exercise": _M20["exercise"], "mistake": "none",
                      "replace": _M20["replace"], "with": _M20["replace"]}, "survived: no test of "),
    "control_undeclared_collateral": ({**_M20, "name": "control_undeclared_collateral", "collateral": []},
                                      "breaks 04_multihead/multihead_wrapper: "),
}
VARIANTS = mutation.load_patches(TESTS_DIR / "mutants" / "book_variants.py", "VARIANTS")
# The book variants' verdict can fail: the notebook's scale forgotten altogether is no book variant.
BOOK_CONTROL = {"name": "control_no_scale", "exercise": "02_trainable_weights/scaled_attention",
                "source": "none", "differs": "a real mistake",
                "replace": "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
                "with": "attn_weights = torch.softmax(attn_scores, dim=-1)"}
# The documents' verbatim code that only the printed tests must accept, and a control: no exp is no softmax.
PRINTED_VARIANTS = mutation.load_patches(TESTS_DIR / "mutants" / "book_variants.py", "PRINTED_VARIANTS")
PRINTED_CONTROL = {"name": "control_printed_without_exp", "exercise": "01_simple_attention/normalization",
                   "source": "none", "differs": "a real mistake",
                   "replace": "exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)",
                   "with": "return scores / torch.sum(scores)"}
# Student mistakes whose false cause once reached the grade's feedback too (issue 38: a mask cut to the batch
# size told six times, and again in the grade, that it was not cut): the hidden tests must not say it either.
PREMISES_IN_THE_GRADE = [m for m in mutation.load_patches(TESTS_DIR / "mutants" / "student_mistakes_premises.py", "MISTAKES")
                         if m["name"] in ("causal_attention_counts_tokens_on_the_batch_axis",
                                          "self_attention_v2_ignores_qkv_bias_seen_from_weight_transfer")]


@functools.cache
def proof_runs() -> tuple[dict[str, dict[str, Outcome] | HiddenRunError], dict[str, list[dict]]]:
    """``({run: {nodeid: Outcome} or the error}, {run: what its checks recorded})``: the solutions, the
    stubs, the solutions as one script, the stand-ins alone and under a correct dependent, each exercise alone, every mutant and
    control, every book variant and its control, the printed variants and theirs (their printed tests alone), the
    student mistakes of PREMISES_IN_THE_GRADE (a patch that cannot be applied: its HiddenRunError)."""
    exercises = load_rubric().exercises
    with tempfile.TemporaryDirectory(prefix="hidden-proofs-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "records").mkdir()
        jobs = {"solutions": (SOLUTIONS_DIR, None), "stubs": (EXERCISES_DIR, None),
                "one script": (one_script(tmp / "one-script"), None)}
        standins = over_standins(tmp / "standins")
        jobs["standins alone"] = (standins, CLASS_STANDINS)
        jobs["over standins"] = (standins, [ex_id for ex_id, ex in exercises.items() if ex.depends_on] + FUNCTION_STANDINS)
        for i, ex_id in enumerate(exercises):
            jobs[f"alone {ex_id}"] = (alone(ex_id, tmp / f"alone-{i}"), [ex_id])
        broken: dict[str, HiddenRunError] = {}
        printed_only = [*PRINTED_VARIANTS, PRINTED_CONTROL]
        patches = [*MUTANTS, *(control for control, _ in CONTROLS.values()), *VARIANTS, BOOK_CONTROL, *printed_only,
                   *PREMISES_IN_THE_GRADE]
        assert len({p["name"] for p in patches} | set(jobs)) == len(patches) + len(jobs), "two runs of one name"
        for patch in patches:
            try:
                jobs[patch["name"]] = (overlay(patch, tmp / patch["name"]), load_rubric().affected_by(patch["exercise"]))
            except (mutation.PatchError, KeyError) as err:
                broken[patch["name"]] = HiddenRunError(str(err))
        kinds = {"standins alone": "core", **{p["name"]: "printed" for p in printed_only}}
        results = run_hidden(jobs, standins=("over standins",), kinds=kinds, record_dir=tmp / "records")
        records = known_results.read_records(tmp / "records", ["solutions", *(m["name"] for m in MUTANTS)])
    return {**results, **broken}, records
