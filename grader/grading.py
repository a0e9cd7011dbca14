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
from grader.submission import locate_submission


@dataclass(frozen=True)
class GradeOptions:
    call_timeout: float = 5.0  # seconds per call into the student's code
    memory_mb: int = 2048  # address-space allowance of the worker beyond torch itself


def grade(path: Path, options: GradeOptions = GradeOptions()) -> GradeReport:
    """Grade the submission at ``path``; raises SubmissionError when it cannot be graded at all."""
    started = time.perf_counter()
    rubric = load_rubric()
    with tempfile.TemporaryDirectory(prefix="kata-grade-") as scratch:
        root = locate_submission(path, Path(scratch))
        from grader import engine  # after intake: bad input is rejected before anything heavy loads

        worker = engine.start_worker(root, call_timeout=options.call_timeout, memory_mb=options.memory_mb)
        from grader.scoring import score_with_regrade

        try:
            outcomes = engine.run_hidden_tests(
                worker, call_timeout=options.call_timeout, memory_mb=options.memory_mb
            )
        finally:
            worker.close()

        def regrade(exercise_ids, substitutes):
            return engine.run_hidden_tests(
                root,
                exercises=exercise_ids,
                substitutes=substitutes,
                call_timeout=options.call_timeout,
                memory_mb=options.memory_mb,
            )

        results = score_with_regrade(rubric, root, outcomes, regrade)
    return GradeReport(
        submission=str(path),
        exercises=results,
        gpu_check=GpuCheckResult.skipped("the GPU-run check is not part of this grader version"),
        isolation="process",
        execution_time=time.perf_counter() - started,
        warnings=["graded without a sandbox: the student's code ran as a plain process of this user"],
    )
