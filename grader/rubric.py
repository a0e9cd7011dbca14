"""The rubric: exercise ids, points, public names and dependencies, read from tests/rubric.json.

The rubric lives beside the hidden tests (one place defines points); this module only reads it and
says where the repository's parts are, so every other module asks here instead of guessing paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS_DIR = REPO_ROOT / "tests"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
GROUPS = ("01_simple_attention", "02_trainable_weights", "03_causal", "04_multihead")


@dataclass(frozen=True)
class Exercise:
    id: str  # "03_causal/causal_attention"
    points: float
    names: tuple[str, ...]  # the public names its module defines
    depends_on: tuple[str, ...]  # exercise ids whose modules it is expected to import

    @property
    def group(self) -> str:
        return self.id.split("/")[0]

    @property
    def module(self) -> str:
        return self.id.split("/")[1]

    @property
    def reference_file(self) -> Path:
        return SOLUTIONS_DIR / self.group / f"{self.module}.py"

    @property
    def test_file(self) -> Path:
        return TESTS_DIR / self.group / f"test_{self.module}.py"


@dataclass(frozen=True)
class Rubric:
    exercises: dict[str, Exercise]
    gpu_points: float

    @property
    def by_module(self) -> dict[str, Exercise]:
        return {ex.module: ex for ex in self.exercises.values()}

    @property
    def owner_of(self) -> dict[str, str]:
        """Public name -> exercise id (``CausalAttention`` -> ``03_causal/causal_attention``)."""
        return {name: ex.id for ex in self.exercises.values() for name in ex.names}

    @property
    def module_groups(self) -> dict[str, str]:
        """Module name -> group folder (``causal_attention`` -> ``03_causal``)."""
        return {ex.module: ex.group for ex in self.exercises.values()}

    @property
    def max_score(self) -> float:
        return sum(ex.points for ex in self.exercises.values()) + self.gpu_points


@lru_cache(maxsize=4)
def load_rubric(tests_dir: Path = TESTS_DIR) -> Rubric:
    """The rubric of the hidden tests in ``tests_dir`` (the repository's ``tests/`` by default)."""
    raw = json.loads((tests_dir / "rubric.json").read_text())
    exercises = {
        ex_id: Exercise(ex_id, float(ex["points"]), tuple(ex["names"]), tuple(ex["depends_on"]))
        for ex_id, ex in raw["exercises"].items()
    }
    return Rubric(exercises, float(raw["gpu_check"]["points"]))
