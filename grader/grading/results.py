"""The results of a grading, as plain data: one test's outcome, one exercise's score, the GPU-run
check, the whole report.

They live apart from the code that produces them (grader/grading/engine.py runs the tests, grader/grading/scoring.py
scores them, grader/grading/gpu_check.py runs the check) so that reading or formatting a report
(grader/reports/: the JSON report and every format rendered from it) never imports the worker client
or torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TestOutcome:
    __test__ = False  # not a pytest test class

    nodeid: str
    exercise: str
    max_points: float
    passed: bool
    message: str
    duration: float
    kind: str = "core"  # core | printed | edge: the test's kind marker (tests/conftest.py, grader/rubric.py)
    credit: float = 1.0  # the share of its points a passing test earns (edge tests: grader/grading/scoring.py)
    reached: tuple[str, ...] = ()  # the public names the test reached (``split_heads``): grader/grading/engine.py
    device: bool = False  # it checks what a device run shows: the GPU-run check's to charge when it runs
    # (public name, kind of operation, route) its calls ran (grader/sandbox/kata_worker/tracing.py): the from-scratch rule
    ran: tuple[tuple[str, str, str], ...] = ()

    @property
    def points(self) -> float:
        """The points this test earned."""
        return self.max_points * self.credit if self.passed else 0.0


@dataclass
class ExerciseResult:
    id: str
    score: float
    max_score: float
    status: str  # "passed" | "partial" | "failed"
    message: str
    outcomes: list[TestOutcome] = field(default_factory=list)
    regraded_with: tuple[str, ...] = ()  # exercise ids whose stand-ins (tests/standins/) took their modules' place


@dataclass
class GpuCheckResult:
    score: float
    max_score: float
    status: str  # passed | failed | simulated_passed | simulated_failed | skipped
    device: str
    message: str
    # "<module>: <how>" for each module whose code told the simulated GPU from CUDA (gpu_check.FOR_REVIEW)
    for_review: tuple[str, ...] = ()

    @classmethod
    def skipped(cls, message: str) -> "GpuCheckResult":
        return cls(0.0, 0.0, "skipped", "none", message)


@dataclass
class GradeReport:
    submission: str
    exercises: dict[str, ExerciseResult]
    gpu_check: GpuCheckResult
    isolation: str  # the name of the isolation mode it ran under (grader/sandbox/modes.py: MODES)
    execution_time: float
    warnings: list[str] = field(default_factory=list)
    # what the worker found that could hide operations from the trace (grader/sandbox/kata_worker/tracing.py):
    # never a grade, a reviewer's to judge
    review: list[str] = field(default_factory=list)
    # {module: passed | failed | not run}: its public tests, where they ran (grader/grading/public_tests.py):
    # computed in the student's domain, so read for a flag only, never a grade
    public_tests: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """The sum of the exercises' and the GPU-run check's scores as the CSV's cells hold them (4 places, as
        scoring rounds them): a spreadsheet's SUM of a row's cells gives it."""
        return round(sum(r.score for r in self.exercises.values()) + self.gpu_check.score, 4)

    @property
    def max_score(self) -> float:
        return round(sum(r.max_score for r in self.exercises.values()) + self.gpu_check.max_score, 4)
