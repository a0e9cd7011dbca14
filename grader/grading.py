"""Grade one submission end to end: intake, isolated hidden tests, dependency re-grade, report.

Heavy imports (torch, pytest, the engine) happen inside ``grade`` after the worker has been started,
so that the worker's own torch import overlaps the grader's.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from grader.report import GpuCheckResult, GradeReport
from grader.rubric import load_rubric
from grader.sandbox import choose_launcher
from grader.submission import locate_submission


@dataclass(frozen=True)
class GradeOptions:
    call_timeout: float = 5.0  # seconds per call into the student's code
    memory_mb: int = 2048  # address-space allowance of the worker beyond torch itself
    sandbox: str = "auto"  # auto | bwrap | none (see grader/sandbox.py)


def grade(path: Path, options: GradeOptions = GradeOptions()) -> GradeReport:
    """Grade the submission at ``path``; raises SubmissionError when it cannot be graded at all."""
    started = time.perf_counter()
    rubric = load_rubric()
    launcher, warnings = choose_launcher(options.sandbox)
    with tempfile.TemporaryDirectory(prefix="kata-grade-") as scratch:
        root = locate_submission(path, Path(scratch))
        from grader import engine  # after intake: bad input is rejected before anything heavy loads

        limits = {"call_timeout": options.call_timeout, "memory_mb": options.memory_mb, "launcher": launcher}
        worker = engine.start_worker(root, **limits)
        from grader.scoring import score_with_regrade

        try:
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
        gpu_check=GpuCheckResult.skipped("the GPU-run check is not part of this grader version"),
        isolation=launcher.isolation,
        execution_time=time.perf_counter() - started,
        warnings=warnings,
    )
