"""``rescore``: every grade of a class again, from the JSON reports score-all stored, under tests/rubric.json
as it is now, without running any student code (nor importing torch).

    python -m grader rescore reports/ --csv grades.csv [--from old.csv] [--overrides overrides.csv]

A JSON report holds every hidden test that counted (grader/reports/json_report.py): its exercise, its
kind and whether it passed (after the from-scratch rule's charges, and the re-grade over stand-ins
where that one counted). Rescoring gives each test its points under the rubric now (its kind's points
split evenly over the exercise's tests of that kind, as the hidden tests' conftest splits them) and
scores each exercise as a grading does (grader.grading.scoring.rescore: the edge-case tests weighed by
the core points earned); the GPU-run check, whose parts are earned in proportion to their exercises'
core points (a share no change of the point split moves), keeps the share of its points it earned.
So a change of points or of their split over the kinds gives what a full regrade would. What it cannot
give: a rubric with other exercises (the CSV's header differs: grade again), tests added or removed
(the report holds the tests that ran), and an exercise graded over stand-ins whose own run would now
score more than its re-grade (the report keeps the run that counted: rare, as both runs' tests are
weighed alike).

The rows of ``--from`` (default: the ``--csv`` file itself) are rescored: a graded row from
``JSON_DIR/<student>.json``, an error row kept as it is (regrade it). Then, as every run that writes
the CSV, the overrides are applied and the changed totals logged (grader/classroom/final_grades.py),
the class-level outputs written from the rescored reports, and with ``--feedback-dir`` every graded
student's feedback from their rescored report. The JSON reports are left as graded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from grader.blind_ids import BlindIds
from grader.classroom.class_outputs import write_class_outputs
from grader.classroom.final_grades import Shown, finish, held_and_checked
from grader.classroom.grades_sheet import (GRADED_AT_COLUMN, GRADED_BY_COLUMN, HASH_COLUMN, SUBMITTED_AT_COLUMN,
                                           SheetError, csv_row, json_path, read_grades, write_grades)
from grader.classroom.late_policy import LatePolicy, LatePolicyError
from grader.classroom.late_policy import check_held as check_late_held
from grader.classroom.overrides import OverrideError, Overrides, rows_without_overrides
from grader.classroom.provenance import Provenance, known_keys, record_key, rubric_hash
from grader.classroom.sheet_lock import SheetBusy, take_lock
from grader.files import private_files
from grader.grading.results import TestOutcome
from grader.grading.scoring import rescore
from grader.reports.feedback_from_json import read_report
from grader.reports.json_report import MAX_OUTPUT
from grader.rubric import TESTS_DIR, Rubric, load_rubric
from grader.safe_text import escape_controls, printable


class RescoreError(Exception):
    """A report or CSV that cannot be rescored under the rubric now (one line); no file written."""


@dataclass
class Rescored:
    """What a rescore wrote: every row (overrides not applied), the rescored reports of the graded rows,
    the warnings and the class-level outputs' files."""

    rows: dict[str, dict[str, str]]
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)


def rescored_report(report: dict[str, Any], rubric: Rubric) -> dict[str, Any]:
    """A copy of ``report`` scored under ``rubric``: its tests' points, its exercises' scores, the GPU-run
    check's points and the totals. RescoreError: an exercise the rubric does not have, or tests of a kind
    it gives no points."""
    tests = {t["name"]: dict(t) for t in report["tests"]}
    exercises = {}
    for ex_id, stored in report["exercises"].items():
        if ex_id not in rubric.exercises:
            raise RescoreError(f"exercise {ex_id} is not in tests/rubric.json any more: grade again")
        own = [t for name, t in tests.items() if name.startswith(ex_id + ": ")]
        outcomes = [TestOutcome(t["name"], ex_id, float(t["max_score"]), t["status"] == "passed", str(t.get("output", "")),
                                0.0, kind=str(t.get("kind", "core"))) for t in own]
        try:
            result = rescore(rubric.exercises[ex_id], outcomes, str(stored.get("message", "")))
        except ValueError as err:
            raise RescoreError(str(err)) from None
        for o in result.outcomes:
            tests[o.nodeid].update(score=round(o.points, 4), max_score=round(o.max_points, 4), output=o.message)
        if ex_id in tests:  # the one line of an exercise whose tests never ran
            tests[ex_id]["max_score"] = result.max_score
        exercises[ex_id] = {**stored, "score": result.score, "max_score": result.max_score, "status": result.status,
                            "message": escape_controls(result.message)[:MAX_OUTPUT]}  # as the JSON report keeps it
    gpu = dict(report["gpu_check"])
    if gpu["max_score"] and gpu["max_score"] != rubric.gpu_points:  # the share earned stays (module docstring)
        gpu.update(score=round(gpu["score"] / gpu["max_score"] * rubric.gpu_points, 2), max_score=rubric.gpu_points)
    if "gpu_check" in tests:
        tests["gpu_check"].update(score=gpu["score"], max_score=gpu["max_score"])
    return {**report, "tests": list(tests.values()), "exercises": exercises, "gpu_check": gpu,
            "score": round(sum(e["score"] for e in exercises.values()) + gpu["score"], 4),
            "max_score": round(sum(e["max_score"] for e in exercises.values()) + gpu["max_score"], 4)}


def _rekeyed(source: Path, csv_path: Path, rubric_sha: str, warnings: list[str]) -> Callable[[str], str]:
    """A rescored row's ``graded_by``: the key it was graded under (``source``'s sidecar describes it) with
    its rubric part the rubric's now, recorded in ``csv_path``'s sidecar, so that a resume under this
    checkout keeps the row (grader/classroom/provenance.py). A key the sidecar does not describe is kept,
    with a warning: a resume will say it does not know it."""
    known, new_keys = known_keys(source), {}

    def key(old: str) -> str:
        if old not in new_keys:
            described = known.get(old)
            if described is None:
                new_keys[old] = old
                warnings.append(f"{source.name}'s sidecar does not describe the key {old or '(none)'}: rows graded "
                                "under it keep it, so a resume cannot tell that they were rescored")
            else:
                rekeyed = {**described, "rubric": rubric_sha}
                new_keys[old] = Provenance(**{**rekeyed, "options": json.dumps(rekeyed["options"], sort_keys=True)}).key
                record_key(csv_path, new_keys[old], rekeyed)
        return new_keys[old]

    return key


def rescore_class(json_dir: Path, csv_path: Path, *, source: Path | None = None, overrides: Overrides | None = None,
                  tests_dir: Path | None = None, feedback_dir: Path | None = None, visibility: str = "full",
                  late_policy: LatePolicy | None = None, blind: BlindIds | None = None) -> Rescored:
    """Rescore the rows of ``source`` (default ``csv_path``) from the reports in ``json_dir`` into ``csv_path``
    under the rubric of ``tests_dir`` (default: the repository's tests/; see the module docstring), and write
    every graded student's feedback from their rescored report into ``feedback_dir``; ``late_policy`` applied
    again to the rows' own ``submitted_at`` (a CSV holding penalties is refused without it); what it creates is
    for this user alone, as score-all's outputs are, and it holds ``csv_path``'s lock as score-all does. Under
    blind grading (``blind``: the run's ids) the feedback and the summary name students by their ids."""
    with private_files():
        try:
            lock = take_lock(Path(csv_path), "rescore")
        except SheetBusy as err:
            raise RescoreError(str(err)) from None
        with lock:
            return _rescore_class(Path(json_dir), Path(csv_path), Path(source or csv_path), overrides, tests_dir,
                                  Shown(feedback_dir=feedback_dir, visibility=visibility, every_report=True,
                                        blind=blind), late_policy)


def _rescore_class(json_dir: Path, csv_path: Path, source: Path, overrides: Overrides | None,
                   tests_dir: Path | None, shown: Shown, late_policy: LatePolicy | None = None) -> Rescored:
    rubric = load_rubric(tests_dir or TESTS_DIR)
    if not source.is_file():
        raise RescoreError(f"{source}: no such file (the grades CSV the reports were graded into: --from names it)")
    try:
        content = read_grades(source)
        if content.warnings:
            raise RescoreError(f"{content.warnings[0]}; resume that run (the same score-all command) first")
        held = held_and_checked(source, overrides, set(content.rows), str(source))
        check_late_held(held, source, late_policy is not None)
        rows = rows_without_overrides(content.rows)
    except (SheetError, OverrideError, LatePolicyError) as err:
        raise RescoreError(str(err)) from None
    result = Rescored(rows)
    reports, graded_by = result.reports, _rekeyed(source, csv_path, rubric_hash(tests_dir), result.warnings)
    for name, row in rows.items():
        if row["status"] != "graded":
            continue
        try:
            path = json_path(json_dir, name)
        except ValueError as err:  # score-all wrote no report for this name either
            result.warnings.append(f"kept the row of {printable(name)} as it is: {err}")
            continue
        try:
            report = read_report(path)
            reports[name] = rescored_report(report, rubric)
        except (ValueError, RescoreError) as err:
            raise RescoreError(f"{printable(name)}: {err} (in {json_dir})") from None
        rows[name] = {**csv_row(name, {"report": reports[name]}, row[HASH_COLUMN]),
                      SUBMITTED_AT_COLUMN: row[SUBMITTED_AT_COLUMN], GRADED_BY_COLUMN: graded_by(row[GRADED_BY_COLUMN]), GRADED_AT_COLUMN: row[GRADED_AT_COLUMN]}
    write_grades(csv_path, rows.values())
    result.warnings += finish(csv_path, held, overrides, "rescore under changed rubric", replace(shown, reports=reports),
                              late_policy)
    result.outputs = write_class_outputs(csv_path, reports, result.warnings, blind=shown.blind)
    return result
