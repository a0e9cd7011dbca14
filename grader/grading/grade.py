"""Grade one submission end to end: intake, isolated hidden tests, GPU-run check, re-grade, report.

Every worker runs in an isolation domain forked from a template that imported torch once
(grader/sandbox/domains.py): the template starts first, so its torch import overlaps the grader's own
(torch, pytest, collecting the hidden tests); the hidden tests' domain is forked on their first
request. The GPU-run check's device runs come next, in the same domain (under ``--gpu skip`` it runs
nothing); its wrapper part, when the student's CausalAttention does not pass it, in a domain over the
stand-in; its points once the exercises' results (re-grades included) exist. Last in that domain, while it
lives, the public tests of the modules that failed a hidden test (grader/grading/public_tests.py: for a flag,
never a grade). A re-grade
(grader/grading/scoring.py) gets a domain of its own, with stand-ins, never reference code, in place of
the modules it builds on. Each domain is ended (and, where the student's uid shares the
machine, its processes killed and files removed) before the next starts; a report is returned only
after that.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Collection
from contextlib import contextmanager
from pathlib import Path

from grader.grading import engine
from grader.grading.gpu_check import DeviceRuns, OverStandins, run_gpu_check
from grader.grading.intake import locate_submission
from grader.grading.options import GradeOptions
from grader.grading.public_tests import run_public_tests
from grader.grading.results import ExerciseResult, GradeReport, TestOutcome
from grader.grading.scoring import (charge_shortcuts, core_fraction, dependencies, leave_device_tests_to_the_gpu_check,
                                    score_with_regrade, summarize_each)
from grader.rubric import Rubric, load_rubric
from grader.sandbox.client import WorkerFailure
from grader.sandbox.domains import Domains
from grader.sandbox.modes import choose_isolation


def grade(path: Path, options: GradeOptions = GradeOptions(),
          domains: Domains | None = None, scratch_in: Path | None = None) -> GradeReport:
    """Grade the submission at ``path``; raises SubmissionError when it cannot be graded at all.

    ``domains`` overrides ``options.sandbox``: batch grading passes one template for all its students.
    The grading's scratch folder (unzipped and regrouped submissions) goes in ``scratch_in`` (a job's own
    folder, which the job removes however it ends), by default in the system's temporary folder.
    """
    started = time.perf_counter()
    rubric = load_rubric()
    unknown = set(options.exercises or ()) - set(rubric.exercises)
    if unknown:
        raise ValueError(f"not exercises of the rubric: {', '.join(sorted(unknown))}")
    if domains is None:
        with Domains(choose_isolation(options.sandbox)) as own:
            return grade(path, options, own)
    with tempfile.TemporaryDirectory(prefix="kata-grade-", dir=scratch_in) as scratch:
        left_out: list[str] = []  # files of the submission that are not graded (grader/grading/intake.py)
        root = locate_submission(path, Path(scratch), left_out)
        domains.warm_up()  # after intake: bad input is rejected before anything heavy starts
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch's, without NumPy: none needed
        limits = {"call_timeout": options.call_timeout, "memory_mb": options.memory_mb, "domains": domains,
                  "review": set()}  # what the workers found that could hide operations from the trace
        run = None if options.exercises is None else _built_on(rubric, options.exercises, ())  # + what they build on
        tests_worker = engine.start_worker(root, start=False, **limits)  # the GPU-run check runs in it too
        # Later domains refuse the imports that broke its workers; the edges its workers saw, filled as they run.
        limits["refused"], imports = tests_worker.preload.refused, tests_worker.preload.edges

        @contextmanager
        def over_standins(substitutes):  # asked for last, if at all: the tests' domain ends first
            tests_worker.close()
            from grader.grading.remote_impl import RemoteImpl  # imports torch (see _gpu_check)

            with engine.start_worker(root, substitutes=substitutes, **limits) as worker:
                yield RemoteImpl(worker, rubric.owner_of)

        try:
            outcomes = charge_shortcuts(rubric, engine.run_hidden_tests(tests_worker, exercises=run, keep_open=True))
            device_runs = _gpu_check(tests_worker, rubric, options, outcomes, over_standins, imports)
            public = run_public_tests(tests_worker, rubric, outcomes, options, limits["refused"])  # a flag's, last
        finally:
            tests_worker.close()

        def regrade(exercise_ids, substitutes):  # its domain imports what the exercises build on, nothing else
            preload = [rubric.exercises[e].module for e in _built_on(rubric, exercise_ids, imports)]
            return charge_shortcuts(rubric, engine.run_hidden_tests(engine.start_worker(
                root, substitutes=substitutes, preload=preload, **limits), exercises=exercise_ids))

        # One mistake, one charge: the check charges what it sees of a module it ran on the device.
        outcomes = leave_device_tests_to_the_gpu_check(
            outcomes, {rubric.owner_of[name] for name in device_runs.ran_on_the_device})
        results = score_with_regrade(rubric, outcomes, regrade, options.exercises, imports)
        gpu_check = device_runs.scored(_core_fractions(rubric, results))
    domains.check_clean()  # without a pid namespace: nothing of the student's may still run
    # for review: what could hide operations from the trace, or told the simulated GPU from CUDA
    review = sorted({*limits["review"], *(f"GPU-run check: {line}" for line in gpu_check.for_review)})
    return GradeReport(submission=str(path), exercises=results, gpu_check=gpu_check,
                       isolation=domains.isolation.mode.name, execution_time=time.perf_counter() - started,
                       warnings=[*domains.isolation.warnings, domains.isolation.memory_line(options.memory_mb), *left_out],
                       review=review, public_tests=public)


def _built_on(rubric: Rubric, exercise_ids: Collection[str], imports: Collection[tuple[str, str]]) -> list[str]:
    """``exercise_ids`` and the exercises they build on (grader/grading/scoring.py), in the rubric's order."""
    wanted = set(exercise_ids).union(*(dependencies(rubric, ex_id, imports) for ex_id in exercise_ids))
    return [ex_id for ex_id in rubric.exercises if ex_id in wanted]


def _core_fractions(rubric: Rubric, results: dict[str, ExerciseResult]) -> dict[str, float]:
    """Public name -> the share of its exercise's core points earned, re-grades included: what each module's
    share of the GPU-run check counts in proportion to."""
    return {name: core_fraction(results[ex].outcomes) or 0.0 for name, ex in rubric.owner_of.items() if ex in results}


def _gpu_check(worker, rubric: Rubric, options: GradeOptions, outcomes: list[TestOutcome],
               over_standins: OverStandins, imports: Collection[tuple[str, str]] = ()) -> DeviceRuns:
    """The GPU-run check's device runs on the submission's worker (GpuUnavailable propagates: --gpu
    require). A module that cannot earn (its exercise's core tests all fail, and none it builds on fails:
    no re-grade can change that) is not run; with ``options.exercises`` (an nbgrader assignment), only their
    modules' shares count; ``imports``: the edges the tests' worker saw (scoring.dependencies)."""
    from grader.grading.remote_impl import RemoteImpl  # imports torch: not before a grading needs it

    owner = rubric.owner_of
    before = summarize_each(rubric, outcomes)
    builds_on = {ex_id: dependencies(rubric, ex_id, imports) for ex_id in rubric.exercises}  # as the re-grades do
    broken = {ex_id for ex_id, result in before.items() if result.status != "passed"}
    may_earn = {name: (core_fraction(before[ex].outcomes) or 0.0) > 0
                or any(before[dep].status != "passed" for dep in builds_on[ex]) for name, ex in owner.items()}
    scope = None if options.exercises is None else {name for name, ex in owner.items() if ex in options.exercises}
    impl = RemoteImpl(worker, owner)
    try:
        return run_gpu_check(impl, options.gpu, rubric.gpu_points, over_standins, may_earn, scope, builds_on, broken)
    except WorkerFailure as failure:
        return DeviceRuns(rubric.gpu_points, failure=str(failure))
