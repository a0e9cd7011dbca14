"""Realistic mistakes as small patches to the reference solutions: ONE format, ONE applier.

Two suites store their mistakes in this format:

* ``tests/mutants/mutants.py`` (``MUTANTS``): what the HIDDEN tests must catch, each by its own
  exercise only (grader/tests/test_hidden_tests.py); benchmarks/run.py also uses them as the
  failing students of its class;
* ``tests/mutants/student_mistakes.py`` (``MISTAKES``): what the PUBLIC tests must catch and
  name (grader/tests/test_public_tests.py).

A patch is a dict:

* ``name``: unique in its suite;
* ``exercise``: the exercise id (``03_causal/causal_mask``, see tests/rubric.json) whose module it
  changes: ``solutions/03_causal/causal_mask.py``;
* ``replace``: text that occurs exactly once in that file (the anchor);
* ``with``: the text it becomes;

plus the keys of its suite (documented beside the data). An anchor that is missing, or that occurs
more than once, is an error naming the patch and the anchor: a patch never lands somewhere else
quietly when the reference changes.

This module lives in the ``grader`` package (it is no part of grading) because benchmarks/run.py,
which only has the repository root on its path, builds its class of students with it too.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from grader.authoring.student_text import without_student_text
from grader.rubric import TESTS_DIR, load_rubric

MUTANTS_FILE = TESTS_DIR / "mutants" / "mutants.py"
PATCH_KEYS = ("name", "exercise", "replace", "with")


class PatchError(ValueError):
    """A patch that cannot be applied: unknown exercise, missing keys, or an anchor not found exactly once."""


def reference_file(patch: dict) -> Path:
    """The reference solution the patch changes (``solutions/<group>/<module>.py``)."""
    exercises = load_rubric().exercises
    if patch.get("exercise") not in exercises:
        raise PatchError(f"{patch.get('name', '?')}: unknown exercise {patch.get('exercise')!r} (see tests/rubric.json)")
    return exercises[patch["exercise"]].reference_file


def apply(source: str, patch: dict, where: str = "") -> str:
    """``source`` with the patch's one replacement; PatchError unless its anchor occurs exactly once."""
    missing = [key for key in PATCH_KEYS if not isinstance(patch.get(key), str)]
    if missing:
        raise PatchError(f"{patch.get('name', '?')}: no {', '.join(missing)} (a patch has {', '.join(PATCH_KEYS)})")
    anchor = patch["replace"]
    count = source.count(anchor) if anchor else 0
    if count != 1:
        where = where or f"solutions/{patch['exercise']}.py"
        problem = "is not found" if count == 0 else f"occurs {count} times (it must be unique)"
        raise PatchError(f"{patch['name']}: the anchor {anchor!r} {problem} in {where}")
    return source.replace(anchor, patch["with"])


def reference_source(patch: dict) -> str:
    """The reference solution the patch changes, as code: without its student text (whose README and hints
    may quote the very line a patch anchors on: grader/authoring/student_text.py)."""
    return without_student_text(reference_file(patch).read_text(), str(reference_file(patch)))


def patched_source(patch: dict) -> str:
    """The reference solution of the patch's exercise with the patch applied."""
    return apply(reference_source(patch), patch)


def write_patched(patch: dict, root: Path) -> Path:
    """Write the patched module to ``root/<group>/<module>.py`` (an implementation or exercises/ tree); its path."""
    target = root / reference_file(patch).relative_to(reference_file(patch).parents[1])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(patched_source(patch))
    return target


def load_patches(path: Path, name: str) -> list[dict]:
    """The list ``name`` of the data module ``path`` (e.g. ``MUTANTS`` of tests/mutants/mutants.py)."""
    return list(runpy.run_path(str(path))[name])


def load_mutants() -> list[dict]:
    """The hidden tests' mutants (``tests/mutants/mutants.py``), in file order."""
    return load_patches(MUTANTS_FILE, "MUTANTS")


def mutant(name: str) -> dict:
    """One mutant by name; KeyError naming the known ones otherwise."""
    found = [m for m in load_mutants() if m["name"] == name]
    if not found:
        raise KeyError(f"no mutant {name!r} in {MUTANTS_FILE}")
    return found[0]
