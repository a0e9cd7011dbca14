"""From test outcomes to exercise scores, including the re-grade of dependent exercises.

A student loses points once per mistake: when exercise E fails and an exercise E builds on fails its
own tests, is a stub or is missing, E is graded again with stand-ins in place of those modules, and
the better of the two results counts. E builds on the rubric's ``depends_on`` and on every module of
the student's that E's module imported while the tests ran, directly or through another of the
student's modules (the worker notes the imports as they run: grader/sandbox/kata_worker/imports.py);
a module without a stand-in is never replaced. Exercises are settled in the order they build on each
other: a module that passes over stand-ins of its own (its re-grade) is not replaced in the exercises
built on it, only what it builds on is.

A stand-in (``tests/standins/``) is written for grading and is not the answer. For a class: the
stated constructor and parameters, a forward that is not attention. For a function: its result
computed with the library (``torch.softmax``, ``torch.tril``, ``view``/``transpose``), which holds
nothing the library's documentation does not. The hidden tests compute the expected values of the
re-grade in the grader, with the reference dependent over the same stand-ins. So no reference code
ever enters a student's domain, a stub and a deleted file are the same to every rule, and an import
the code only pretends to need gains nothing: over a function stand-in the student's own code still
has to give the reference's values, over a class stand-in it gives them only where it does not use
that class's forward.

A re-grade's failure messages are about the stand-ins, not the student's own modules: only its
pass/fail counts reach a report, and a test that fails in it shows its message from the student's
own run, or a line saying why there is none.

Not every passing test counts in full: an exercise's edge-case tests (kind ``edge``: raises on bad
input, shapes, dtypes, properties) earn their points in proportion to the core points earned (the
core tests: randomized, against the reference). A passing edge test says what share it counts, so
that the tests' scores in a report add up to the exercise's. Code that does no attention at all
(raising everywhere, identity modules, answers only for the documents' inputs) earns nothing from
them, and failing one more core test never costs more than its points and its share of the edge
points; see grader/rubric.py for the kinds.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from grader.grading.results import ExerciseResult, TestOutcome
from grader.rubric import Exercise, Rubric


def edge_share(fraction: float, core_failed: int, core_total: int) -> str:
    """The message of a passing edge-case test that earns ``fraction`` of its points."""
    why = (f"edge-case tests count in proportion to the core tests' points earned (randomized inputs "
           f"against the reference; {core_failed} of {core_total} fail)")
    if fraction <= 0:
        return f"passed, but not counted: {why}"
    return f"passed; counts {fraction:.0%} of its points: {why}"


def weigh_edge_tests(outcomes: list[TestOutcome]) -> list[TestOutcome]:
    """The outcomes as they count: a passing edge test earns its points times the share of the core
    points earned. So code that does no attention (every core test failing) earns nothing from them,
    and failing one more core test costs that test's points and its share of the edge points, never
    more: no cliffs."""
    core = [o for o in outcomes if o.kind == "core"]
    fraction = core_fraction(outcomes)
    if fraction is None or fraction >= 1.0:
        return list(outcomes)
    message = edge_share(fraction, sum(not o.passed for o in core), len(core))
    return [replace(o, credit=fraction, message=message) if o.kind == "edge" and o.passed else o for o in outcomes]


def core_fraction(outcomes: Iterable[TestOutcome]) -> float | None:
    """The share of the core points earned (None: no core test ran): what an exercise's edge tests, and its
    module's share of the GPU-run check (grader/grading/gpu_check.py), count in proportion to."""
    core = [o for o in outcomes if o.kind == "core"]
    core_points = sum(o.max_points for o in core)
    return sum(o.points for o in core) / core_points if core_points else None


def summarize(exercise: Exercise, outcomes: list[TestOutcome]) -> ExerciseResult:
    """Score one exercise from its tests' outcomes; an exercise with no outcome scores 0.

    Edge-case tests count in proportion to the core points earned (:func:`weigh_edge_tests`)."""
    counted = weigh_edge_tests(outcomes)
    score = sum(o.points for o in counted)
    failures = [o for o in counted if not o.passed]
    weighed = sum(o.credit < 1.0 for o in counted if o.passed)
    if not counted:
        status, message = "failed", "no hidden test ran for this exercise"
    elif not failures:
        status = "passed" if not weighed else "partial"
        message = f"all {len(counted)} tests passed" if not weighed else (
            f"{weighed} edge-case tests passed but count in proportion to the core tests; {counted[0].message}")
    else:
        status = "failed" if score == 0 else "partial"
        note = f" ({weighed} edge-case tests passed and count in proportion to the core tests)" if weighed else ""
        message = f"{len(failures)} of {len(counted)} tests failed{note}; first: {failures[0].message}"
    return ExerciseResult(exercise.id, round(score, 4), exercise.points, status, message, counted)


def split_points(exercise: Exercise, outcomes: Iterable[TestOutcome]) -> list[TestOutcome]:
    """The outcomes with each test's points as the rubric gives them now, unweighed (credit 1): its kind's
    points split evenly over the exercise's tests of that kind, as tests/conftest.py splits them when the
    tests run. For a rescore from stored outcomes (grader/classroom/rescore.py): the pass/fail of each test
    is what ran; its points are the rubric's. ValueError: tests of a kind the rubric gives no points."""
    outcomes = list(outcomes)
    counts = Counter(o.kind for o in outcomes)
    points = exercise.kind_points
    unpaid = sorted(kind for kind in counts if points.get(kind, 0.0) <= 0)
    if unpaid:
        raise ValueError(f"{exercise.id} has {', '.join(unpaid)} tests, but the rubric gives them no points")
    return [replace(o, max_points=points[o.kind] / counts[o.kind], credit=1.0) for o in outcomes]


def rescore(exercise: Exercise, outcomes: Iterable[TestOutcome], message: str = "") -> ExerciseResult:
    """One exercise's result from its tests' stored outcomes (those that counted, after any re-grade)
    under the rubric's points now: :func:`split_points`, then :func:`summarize` as a grading scores them.
    ``message``: the exercise's stored message, whose note of a re-grade over stand-ins is kept."""
    result = summarize(exercise, split_points(exercise, outcomes))
    result.message = regraded_note(message) + result.message
    return result


def summarize_each(rubric: Rubric, outcomes: Collection[TestOutcome]) -> dict[str, ExerciseResult]:
    """Every exercise's result from its tests' outcomes as they stand, before any re-grade."""
    return {ex_id: summarize(ex, [o for o in outcomes if o.exercise == ex_id]) for ex_id, ex in rubric.exercises.items()}


def shortcuts_run(rubric: Rubric, outcome: TestOutcome) -> dict[str, list[str]]:
    """``{public name: ["softmax (torch function softmin, aten op _softmax)"]}``: the kinds of operation the rubric
    forbids in a public name of the test's exercise that ran inside a call of that name while the test ran
    (grader/sandbox/kata_worker/tracing.py records them; an operation that never ran is never here)."""
    forbidden = rubric.forbidden
    names = set(rubric.exercises[outcome.exercise].names) if outcome.exercise in rubric.exercises else set()
    routes: dict[tuple[str, str], list[str]] = {}
    for owner, kind, route in outcome.ran:
        if owner in names and kind in forbidden.get(owner, ()):
            routes.setdefault((owner, kind), []).append(route)
    found: dict[str, list[str]] = {}
    for (owner, kind), ways in sorted(routes.items()):
        found.setdefault(owner, []).append(f"{kind} ({', '.join(ways)})")
    return found


SHORTCUT_CHARGED = "counts nothing: "  # how a test charged by the from-scratch rule starts (the class's flags read it)


def charge_shortcuts(rubric: Rubric, outcomes: Iterable[TestOutcome]) -> list[TestOutcome]:
    """The outcomes with every passing test failed in which a kind of operation its exercise asks to write by
    hand ran inside a call of the public name that forbids it (unless the rubric's ``shortcuts_allowed``)."""
    outcomes = list(outcomes)
    if rubric.shortcuts_allowed:
        return outcomes
    charged = []
    for o in outcomes:
        found = shortcuts_run(rubric, o) if o.passed and o.ran else {}
        if found:
            ran = "; ".join(f"{name} ran {', '.join(kinds)}" for name, kinds in found.items())
            o = replace(o, passed=False, message=(
                f"{SHORTCUT_CHARGED}{ran}, which does this exercise's work; write it yourself "
                f"(exercises/shortcuts.json lists the operations each name must not run)"))
        charged.append(o)
    return charged


LEFT_TO_THE_GPU_CHECK = ("not charged here: what follows .to() (a mask kept as a plain attribute) is what a "
                        "device run shows, and the GPU-run check charges it, once")


def leave_device_tests_to_the_gpu_check(outcomes: Iterable[TestOutcome], judged: Collection[str]) -> list[TestOutcome]:
    """The outcomes with the failing device tests (tests/conftest.py's ``device`` marker) of the exercises
    ``judged`` not charged: a mistake both they and the GPU-run check see is the check's to charge, where it
    ran the module on the device. Elsewhere (a file that does not parse, a module the check left out) the
    test failed for another reason and stays failed: no test of a module that does not import "passes"."""
    return [replace(o, passed=True, message=LEFT_TO_THE_GPU_CHECK) if o.device and not o.passed and o.exercise in judged
            else o for o in outcomes]


# The start of the message of an exercise whose re-grade over stand-ins counted (its own result's follows).
REGRADED = ("graded over a stand-in {names} in place of yours, because yours fails its own tests, is not written or "
            "is missing (those points are lost there, once). ")


def regraded_note(message: str) -> str:
    """The start of an exercise's message that says it was graded over stand-ins (:data:`REGRADED`), or ""."""
    head, end = REGRADED.split("{names}")
    cut = message.find(end)
    return message[:cut + len(end)] if message.startswith(head) and cut >= 0 else ""


REGRADE_SILENT = "failed in the re-grade over stand-ins (its messages are about the stand-ins: not shown)"


def _own_message(outcome: TestOutcome, own_messages: Mapping[str, str]) -> TestOutcome:
    """A re-grade's outcome with its message replaced: from the student's own run, or a fixed line."""
    message = "" if outcome.passed else (own_messages.get(outcome.nodeid) or REGRADE_SILENT)
    return replace(outcome, message=message)


def imported_modules(tree: ast.AST) -> set[str]:
    """The top-level names of the modules a parsed source imports absolutely (``from a.b import c`` -> ``a``)."""
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module.split(".")[0])
    return modules


def dependencies(rubric: Rubric, ex_id: str, imports: Collection[tuple[str, str]] = ()) -> set[str]:
    """The exercises ``ex_id`` builds on: the rubric's ``depends_on``, and those whose module (one with a
    stand-in) the student's module of ``ex_id`` (or of a ``depends_on``) imported as it ran (``imports``:
    ``(importer, imported)`` module names, the worker's; followed through every module of the student's)."""
    found = set(rubric.exercises[ex_id].depends_on)
    by_module = rubric.by_module
    reached, todo = set(), [rubric.exercises[ex_id].module, *(rubric.exercises[dep].module for dep in found)]
    while todo:
        importer = todo.pop()
        for source, target in imports:
            if source == importer and target not in reached:
                reached.add(target)
                todo.append(target)
    found |= {by_module[m].id for m in reached if m in by_module and by_module[m].standin_file.is_file()}
    return found - {ex_id}


def _settling_order(rubric: Rubric, built_on: Mapping[str, set[str]]) -> list[str]:
    """The exercises, each after those it builds on (the rubric's order where they build on each other in a loop)."""
    order: list[str] = []
    placed: set[str] = set()

    def place(ex_id: str, visiting: frozenset[str]) -> None:
        if ex_id in placed or ex_id in visiting:
            return
        for dep in sorted(built_on[ex_id], key=list(rubric.exercises).index):
            place(dep, visiting | {ex_id})
        placed.add(ex_id)
        order.append(ex_id)

    for ex_id in rubric.exercises:
        place(ex_id, frozenset())
    return order


def score_with_regrade(
    rubric: Rubric,
    outcomes: Iterable[TestOutcome],
    regrade: Callable[[set[str], Mapping[str, Path]], Iterable[TestOutcome]],
    exercises: Collection[str] | None = None,
    imports: Collection[tuple[str, str]] = (),
) -> dict[str, ExerciseResult]:
    """Exercise results, re-grading dependents of broken exercises over stand-ins.

    ``regrade(exercise_ids, substitutes)`` runs the hidden tests of ``exercise_ids`` again with each
    module in ``substitutes`` (module name -> stand-in file) in place of the student's.
    ``exercises``: score only these (default: the whole rubric); ``outcomes`` should hold their
    :func:`dependencies`' too (one without outcomes counts as broken). ``imports``: the edges the
    worker saw (see :func:`dependencies`).
    """
    outcomes = list(outcomes)
    results = summarize_each(rubric, outcomes)
    scored = list(rubric.exercises) if exercises is None else [ex_id for ex_id in rubric.exercises if ex_id in exercises]
    built_on = {ex_id: dependencies(rubric, ex_id, imports) for ex_id in rubric.exercises}

    for ex_id in (ex_id for ex_id in _settling_order(rubric, built_on) if ex_id in scored):
        result = results[ex_id]
        if result.status == "passed":
            continue
        exercise = rubric.exercises[ex_id]
        broken = sorted(dep for dep in built_on[ex_id] if results[dep].status != "passed")
        if not broken:
            continue
        substitutes = {rubric.exercises[dep].module: rubric.exercises[dep].standin_file for dep in broken}
        own = {o.nodeid: o.message for o in outcomes if o.exercise == ex_id}
        retry = summarize(exercise, [_own_message(o, own) for o in regrade({ex_id}, substitutes)
                                     if o.exercise == ex_id])
        if retry.score > result.score:
            names = ", ".join(rubric.exercises[dep].module for dep in broken)
            retry.message = REGRADED.format(names=names) + retry.message
            retry.regraded_with = tuple(broken)
            results[ex_id] = retry
    return {ex_id: results[ex_id] for ex_id in scored}
