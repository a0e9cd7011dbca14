"""Grade one submission end to end: intake, isolated hidden tests, GPU-run check, re-grade, report.

Every worker is forked from a template that imported torch once (grader/worker_template.py): the
template starts first, so its torch import overlaps the grader's own (torch, pytest, collecting the
hidden tests); the hidden tests' worker is forked on their first request. The GPU-run check comes
last, in a fork of its own, by when the template has warmed up the meta device it simulates on.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from grader.report import GpuCheckResult, GradeReport
from grader.rubric import Rubric, load_rubric
from grader.sandbox import choose_launcher
from grader.submission import locate_submission
from grader.worker_template import TemplateLauncher


@dataclass(frozen=True)
class GradeOptions:
    call_timeout: float = 5.0  # seconds per call into the student's code
    memory_mb: int = 2048  # address-space allowance of the worker beyond torch itself
    sandbox: str = "auto"  # auto | bwrap | none (see grader/sandbox.py)
    gpu: str = "auto"  # auto | require | skip (see grader/gpu_check.py)


def grade(path: Path, options: GradeOptions = GradeOptions(),
          launcher_choice: tuple[TemplateLauncher, list[str]] | None = None) -> GradeReport:
    """Grade the submission at ``path``; raises SubmissionError when it cannot be graded at all.

    ``launcher_choice`` (a template launcher and the warnings it implies) overrides
    ``options.sandbox``: batch grading passes one template for all its students.
    """
    started = time.perf_counter()
    rubric = load_rubric()
    if launcher_choice is None:
        base, sandbox_warnings = choose_launcher(options.sandbox)
        with TemplateLauncher(base, options.memory_mb) as launcher:
            return grade(path, options, (launcher, sandbox_warnings))
    launcher, sandbox_warnings = launcher_choice
    with tempfile.TemporaryDirectory(prefix="kata-grade-") as scratch:
        root = locate_submission(path, Path(scratch))
        launcher.warm_up()  # after intake: bad input is rejected before anything heavy starts
        # torch warns on import when NumPy is absent; nothing here needs NumPy.
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        from grader import engine
        from grader.scoring import score_with_regrade

        limits = {"call_timeout": options.call_timeout, "memory_mb": options.memory_mb, "launcher": launcher}
        outcomes = engine.run_hidden_tests(engine.start_worker(root, start=False, **limits))
        gpu_worker = engine.start_worker(root, start=False, **limits)
        try:
            gpu_check = _gpu_check(gpu_worker, rubric, options.gpu)
        finally:
            gpu_worker.close()

        def regrade(exercise_ids, substitutes):
            retry_worker = engine.start_worker(root, substitutes=substitutes, **limits)
            return engine.run_hidden_tests(retry_worker, exercises=exercise_ids)

        results = score_with_regrade(rubric, root, outcomes, regrade)
    return GradeReport(
        submission=str(path),
        exercises=results,
        gpu_check=gpu_check,
        isolation=launcher.isolation,
        execution_time=time.perf_counter() - started,
        warnings=sandbox_warnings,
    )


def _gpu_check(worker, rubric: Rubric, mode: str) -> GpuCheckResult:
    """The GPU-run check on the submission's worker (GpuUnavailable propagates: --gpu require)."""
    from grader.gpu_check import run_gpu_check
    from grader.remote_impl import RemoteImpl
    from grader.worker_client import WorkerFailure

    impl = RemoteImpl(worker, rubric.owner_of)
    try:
        return run_gpu_check(impl, mode, rubric.gpu_points)
    except WorkerFailure as failure:
        return GpuCheckResult(0.0, rubric.gpu_points, "failed", "unknown", f"the worker failed: {failure}")
