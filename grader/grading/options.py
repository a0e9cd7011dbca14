"""How a submission is graded: the options every grading path passes down, as plain data a job process
can be sent (no import of the worker's machinery: the grades sheet and the reports read them too)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from grader.sandbox.limits import CALL_TIMEOUT, MEMORY_MB


@dataclass(frozen=True)
class GradeOptions:
    """How each student is graded: the one object ``score``, ``score-all``'s jobs and the nbgrader path
    pass down (the command line's flags are declared once, in grader/grading/commands.py)."""

    call_timeout: float = CALL_TIMEOUT  # seconds per call into the student's code
    memory_mb: int = MEMORY_MB  # address-space allowance of the worker beyond torch itself
    sandbox: str = "auto"  # one of grader.sandbox.modes.SANDBOX_CHOICES
    gpu: str = "auto"  # one of grader.grading.gpu_check.GPU_CHOICES
    # The exercises graded (None: the whole rubric), e.g. one nbgrader assignment's. The tests of the
    # exercises they build on run too, to decide re-grades (grader/grading/scoring.py), and score nothing.
    exercises: tuple[str, ...] | None = None
    # The public tests of each module that failed a hidden test, run for the flag "public tests pass, hidden
    # fail" (grader/grading/public_tests.py); never a grade, so not one of the options a row's key records.
    public_tests: bool = True

    def to_json(self) -> str:
        """For a job process (grader/classroom/jobs.py), read back by :meth:`from_json`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> GradeOptions:
        fields = json.loads(text)
        if fields.get("exercises") is not None:
            fields["exercises"] = tuple(fields["exercises"])
        return cls(**fields)
