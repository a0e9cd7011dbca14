"""The rubric: exercise ids, points, their split over test kinds, public names and dependencies,
read from tests/rubric.json.

The rubric lives beside the hidden tests (one place defines points); this module only reads it and
says where the repository's parts are, so every other module asks here instead of guessing paths.

Every hidden test has a kind (a pytest marker; tests/conftest.py gives each test its kind's share):

* ``core``: randomized inputs, compared with the reference: the work itself;
* ``printed``: the documents' printed tensors, checks of the same computation (never worth more than
  ``core``);
* ``edge``: raising on bad input, shapes, dtypes, properties, inputs left untouched; they earn their
  points in proportion to the exercise's core points earned (grader/grading/scoring.py), so that code which
  does no attention at all (raising everywhere, identity modules) earns nothing from them.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS_DIR = REPO_ROOT / "tests"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
EXERCISES_DIR = REPO_ROOT / "exercises"  # the students' tree: stubs, public tests, READMEs, hints
STANDINS_DIR = TESTS_DIR / "standins"  # what a re-grade puts in place of a module (tests/standins/README.md)
# The students' tools that the grader's worker imports as its own: one file for both sides (exercises/<name>.py),
# so that a public test and the grader run the same code (the simulated GPU, the trace of the operations that
# ran). grader/sandbox/modes.py shows them
# to the worker.
WORKER_TOOLS = ("kata_gpu", "kata_trace")


class RubricError(ValueError):
    """tests/rubric.json is inconsistent (kinds that do not add up to the points, an unknown kind...)."""


@dataclass(frozen=True)
class Group:
    name: str  # "03_causal": the folder in exercises/, solutions/ and tests/
    section: str  # "3.5": the chapter section it follows
    title: str  # "Causal attention: masking the future, dropout"

    @property
    def heading(self) -> str:
        return f"{self.title} (section {self.section})"


@dataclass(frozen=True)
class Exercise:
    id: str  # "03_causal/causal_attention"
    points: float
    names: tuple[str, ...]  # the public names its module defines
    depends_on: tuple[str, ...]  # exercise ids whose modules it is expected to import
    kinds: tuple[tuple[str, float], ...] = ()  # (kind, points) in the rubric's kinds order; they add up to ``points``
    # public name -> the kinds of operation that must not run inside it (exercises/kata_trace.py's CATEGORIES)
    forbidden: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def kind_points(self) -> dict[str, float]:
        """``{"core": 7.0, "printed": 1.0, "edge": 2.0}``: the points of each kind of test."""
        return dict(self.kinds) if self.kinds else {"core": self.points}

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
    def stub_file(self) -> Path:
        """The student's module, generated from ``reference_file`` (grader/authoring/stubs.py)."""
        return EXERCISES_DIR / self.group / f"{self.module}.py"

    @property
    def public_test_file(self) -> Path:
        return EXERCISES_DIR / self.group / f"test_{self.module}.py"

    @property
    def standin_file(self) -> Path:
        """The stand-in a re-grade of an exercise that builds on this one (``depends_on``, or an import the
        worker saw) gets in place of the student's module: written for grading, not the answer
        (tests/standins/README.md)."""
        return STANDINS_DIR / f"{self.module}.py"

    @property
    def standin_is_a_class(self) -> bool:
        """Whether the stand-in is a class module's (deliberately not attention) rather than a function
        module's (the result computed with the library, correct by design): tests/standins/README.md."""
        tree = ast.parse(self.standin_file.read_text())
        return any(isinstance(node, ast.ClassDef) and node.name in self.names for node in tree.body)

    @property
    def test_file(self) -> Path:
        return TESTS_DIR / self.group / f"test_{self.module}.py"


@dataclass(frozen=True)
class GpuModule:
    """A module the GPU-run check runs on a device (rubric.json's ``gpu_check.modules``)."""

    name: str  # the public name: "CausalAttention"
    exercise: str  # the exercise that defines it: "03_causal/causal_attention"
    args: tuple  # the constructor's arguments in the check (d_in, d_out, context_length, dropout, ...)
    kwargs: dict

    @property
    def module(self) -> str:
        return self.exercise.split("/")[1]


@dataclass(frozen=True)
class Rubric:
    groups: dict[str, Group]  # in the order students do them
    kinds: dict[str, str]  # test kind -> what it checks, in scoring order
    exercises: dict[str, Exercise]
    gpu_points: float
    shortcuts_allowed: bool = False  # the instructor's switch: library shortcuts cost nothing
    gpu_modules: tuple[GpuModule, ...] = ()  # what the GPU-run check runs, in the rubric's order

    @property
    def shortcut_table(self) -> dict[str, dict[str, list[str]]]:
        """``{module: {public name: [kinds of operation]}}``: what exercises/shortcuts.json holds for the public tests."""
        return {ex.module: {name: list(kinds) for name, kinds in ex.forbidden}
                for ex in self.exercises.values() if ex.forbidden}

    @property
    def forbidden(self) -> dict[str, frozenset[str]]:
        """Public name -> the kinds of operation that must not run inside its calls (empty: none named)."""
        return {name: frozenset(kinds) for ex in self.exercises.values() for name, kinds in ex.forbidden}

    def in_group(self, group: str) -> list[Exercise]:
        return [ex for ex in self.exercises.values() if ex.group == group]

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

    def depends_on_all(self, ex_id: str) -> set[str]:
        """Every exercise whose module ``ex_id``'s module may import, directly or not (``depends_on``, followed)."""
        found: set[str] = set()
        todo = list(self.exercises[ex_id].depends_on)
        while todo:
            dep = todo.pop()
            if dep not in found:
                found.add(dep)
                todo.extend(self.exercises[dep].depends_on)
        return found

    def affected_by(self, ex_id: str) -> list[str]:
        """``ex_id`` and every exercise that depends on it: the only ones whose tests can import its module
        (grader/tests/test_hidden_tests.py proves it: each exercise's tests pass with every other module a
        tripwire)."""
        return [other for other in self.exercises if other == ex_id or ex_id in self.depends_on_all(other)]


@lru_cache(maxsize=None)
def tests_module(filename: str) -> ModuleType:
    """``tests/<filename>`` (the project's own code beside the hidden tests: the reference loader), loaded once into the grader under a private name; never into a worker."""
    spec = importlib.util.spec_from_file_location(f"kata_grader_{Path(filename).stem}", TESTS_DIR / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=4)
def load_rubric(tests_dir: Path = TESTS_DIR) -> Rubric:
    """The rubric of the hidden tests in ``tests_dir`` (the repository's ``tests/`` by default)."""
    raw = json.loads((tests_dir / "rubric.json").read_text())
    groups = {name: Group(name, g["section"], g["title"]) for name, g in raw["groups"].items()}
    kinds = dict(raw["kinds"])
    if "core" not in kinds:  # grader/grading/scoring.py counts edge tests only once the core ones pass
        raise RubricError("rubric.json's kinds must include 'core'")
    exercises = {
        ex_id: Exercise(ex_id, float(ex["points"]), tuple(ex["names"]), tuple(ex["depends_on"]),
                        _kinds(ex_id, float(ex["points"]), ex.get("kinds", {"core": ex["points"]}), tuple(kinds)),
                        tuple((name, tuple(kinds)) for name, kinds in ex.get("forbidden", {}).items()))
        for ex_id, ex in raw["exercises"].items()
    }
    strays = sorted(ex_id for ex_id, ex in exercises.items() if ex.group not in groups)
    if strays:
        raise RubricError(f"exercises outside the rubric's groups: {', '.join(strays)}")
    built_on = {dep for ex in exercises.values() for dep in ex.depends_on}
    unknown = sorted(built_on - set(exercises))
    if unknown:
        raise RubricError(f"depends_on names exercises that are not in the rubric: {', '.join(unknown)}")
    lacking = sorted(dep for dep in built_on if not (tests_dir / "standins" / f"{exercises[dep].module}.py").is_file())
    if lacking:
        raise RubricError(f"exercises built on (depends_on) without a stand-in in tests/standins/: {', '.join(lacking)}")
    strays = sorted(f"{ex.id}: {name}" for ex in exercises.values() for name, _ in ex.forbidden if name not in ex.names)
    if strays:
        raise RubricError(f"forbidden operations for names the exercises do not define: {', '.join(strays)}")
    return Rubric(groups, kinds, exercises, float(raw["gpu_check"]["points"]), bool(raw.get("shortcuts_allowed", False)),
                  _gpu_modules(raw["gpu_check"], exercises))


def _gpu_modules(raw: dict, exercises: dict[str, Exercise]) -> tuple[GpuModule, ...]:
    """rubric.json's ``gpu_check.modules``: ``{public name: {"args": [...], "kwargs": {...}}}``."""
    owner = {name: ex.id for ex in exercises.values() for name in ex.names}
    modules = raw.get("modules", {})
    unknown = sorted(set(modules) - set(owner))
    if unknown:
        raise RubricError(f"gpu_check.modules names what no exercise defines: {', '.join(unknown)}")
    if not modules and raw["points"]:
        raise RubricError("gpu_check has points but no modules to run")
    bad = sorted(name for name, m in modules.items()
                 if not isinstance(m.get("args"), list) or not isinstance(m.get("kwargs", {}), dict))
    if bad:
        raise RubricError(f"gpu_check.modules: give args as a list and kwargs as an object for {', '.join(bad)}")
    return tuple(GpuModule(name, owner[name], tuple(m["args"]), dict(m.get("kwargs", {}))) for name, m in modules.items())


def _kinds(ex_id: str, points: float, raw: dict, known: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise RubricError(f"{ex_id}: unknown test kinds {unknown} (expected some of {', '.join(known)})")
    kinds = tuple((kind, float(raw[kind])) for kind in known if kind in raw)
    split = dict(kinds)
    if abs(sum(split.values()) - points) > 1e-9:
        raise RubricError(f"{ex_id}: its kinds add up to {sum(split.values()):g} points, not {points:g}")
    if split.get("core", 0.0) <= 0 or any(v < 0 for v in split.values()):
        raise RubricError(f"{ex_id}: core tests must carry points, and no kind may be negative")
    if split.get("printed", 0.0) > split["core"]:
        raise RubricError(f"{ex_id}: printed tests ({split['printed']:g}) may not be worth more than core ones "
                          f"({split['core']:g})")
    return kinds


# Read once, at import: the groups in order (the release's folders, the nbgrader assignments, argparse's
# choices) and the kinds of hidden tests.
GROUPS: tuple[str, ...] = tuple(load_rubric().groups)
KINDS: tuple[str, ...] = tuple(load_rubric().kinds)


def exercise_of_test(path: str | Path) -> str | None:
    """The exercise whose tests a test file holds, hidden or public (both are ``<group>/test_<module>.py``):
    ``tests/03_causal/test_causal_mask.py`` or a pytest node id in it -> ``03_causal/causal_mask``; None
    for any other file. The inverse of ``Exercise.test_file`` and ``Exercise.public_test_file``."""
    return _exercises_by_test_file().get(Path(str(path).split("::")[0]).parts[-2:])


@lru_cache(maxsize=None)
def _exercises_by_test_file() -> dict[tuple[str, ...], str]:
    """``("03_causal", "test_causal_mask.py")`` -> ``03_causal/causal_mask``: a grading asks for every test
    it runs (a search of the rubric each time was 6% of a grading's CPU on the grader's side)."""
    return {ex.test_file.parts[-2:]: ex.id for ex in load_rubric().exercises.values()}
