"""Grade one submission end to end: intake, isolated hidden tests, dependency re-grade, report.

Heavy imports (torch, pytest, the engine) happen inside ``grade`` after the worker has been started,
so that the worker's own torch import overlaps the grader's.
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
from grader.worker_client import Launcher


@dataclass(frozen=True)
class GradeOptions:
    call_timeout: float = 5.0  # seconds per call into the student's code
    memory_mb: int = 2048  # address-space allowance of the worker beyond torch itself
    sandbox: str = "auto"  # auto | bwrap | none (see grader/sandbox.py)
    gpu: str = "auto"  # auto | require | skip (see grader/gpu_check.py)


def grade(path: Path, options: GradeOptions = GradeOptions(),
          launcher_choice: tuple[Launcher, list[str]] | None = None) -> GradeReport:
    """Grade the submission at ``path``; raises SubmissionError when it cannot be graded at all.

    ``launcher_choice`` (a launcher and the warnings it implies) overrides ``options.sandbox``:
    batch grading passes one that forks workers from a template (grader/worker_template.py).
    """
    started = time.perf_counter()
    rubric = load_rubric()
    launcher, sandbox_warnings = launcher_choice or choose_launcher(options.sandbox)
    with tempfile.TemporaryDirectory(prefix="kata-grade-") as scratch:
        root = locate_submission(path, Path(scratch))
        # torch warns on import when NumPy is absent; nothing here needs NumPy.
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        from grader import engine  # after intake: bad input is rejected before anything heavy loads

        limits = {"call_timeout": options.call_timeout, "memory_mb": options.memory_mb, "launcher": launcher}
        worker = engine.start_worker(root, **limits)
        from grader.scoring import score_with_regrade

        try:
            gpu_check = _gpu_check(worker, rubric, options.gpu)
            outcomes = engine.run_hidden_tests(worker)
        finally:
            worker.close()

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
