"""Overrides: the grades an instructor changes by hand (a regrade request accepted, an excuse), kept as
data in one file and applied at the end of every run that writes the grades CSV.

``overrides.csv`` (``--overrides FILE`` of ``score-all``, ``merge`` and ``rescore``)::

    student,exercise,points,reason,who
    alice,03_causal/causal_attention,+2,accepted regrade request,TA Kim
    bob,total,-5,late by a day (syllabus rule),Prof. Lee
    carol,01_simple_attention/normalization,8,excused: ill,Prof. Lee

``exercise`` is an exercise id of tests/rubric.json or ``total``; ``points`` a change (``+2``, ``-1.5``)
or a value (``7``: from 0 to the exercise's points, or the rubric's total for ``total``); ``reason`` and
``who`` say why and who decided. The rows of one student apply in the file's order. A spreadsheet turns
``+2`` into ``2``: type ``'+2`` (the apostrophe is taken off, as the grades CSV's own escape is).

An override is never baked into a JSON report or a grading: the CSV's cells hold the graded values with
the overrides applied, and the ``overrides`` column (grader.classroom.grades_sheet.OVERRIDES_COLUMN) says
what was applied, old and new values included, so that every run takes them off the rows it keeps
(:func:`without_overrides`) and applies the file again (:func:`apply_overrides`): an override survives
``--force``, a resume, a regrade and a rescore, and is never applied twice. A CSV that holds overrides
is refused by a run not given ``--overrides`` (:func:`check_held`): forgetting the file never drops a
grade silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping

from grader.classroom.grades_sheet import OVERRIDES_COLUMN, SheetError, read_spreadsheet, unescaped
from grader.rubric import Rubric, load_rubric
from grader.safe_text import printable

COLUMNS = ("student", "exercise", "points", "reason", "who")
TOTAL = "total"
_CHANGE = re.compile(r"[+-]\d+(?:\.\d+)?")
_VALUE = re.compile(r"\d+(?:\.\d+)?")
# One applied override in the ``overrides`` column: "<target> <old> -> <new>[, total <old> -> <new>] (<why>)".
_APPLIED = re.compile(r"(?P<target>\S+) (?P<old>\S+) -> (?P<new>\S+)(?:, total (?P<total_old>\S+) -> (?P<total_new>\S+))? \(")
SEPARATOR = "; "
GPU_COLUMN = "gpu_check"  # the GPU-run check's cell: no file's override, but formgrader's manual score of its cell


class OverrideError(Exception):
    """An overrides file that cannot be used, or a CSV whose overrides cannot be taken off: one line."""


@dataclass(frozen=True)
class Override:
    student: str
    target: str  # an exercise id, or TOTAL
    change: str  # as written: "+2", "-1.5" (a change) or "7" (a value)
    reason: str
    who: str

    def applied_to(self, value: float) -> float:
        return value + float(self.change) if self.change[:1] in "+-" else float(self.change)

    @property
    def note(self) -> str:
        """What the student's feedback says: ``overridden: +2 by TA Kim: accepted regrade request``."""
        what = "" if self.target == TOTAL else f"{self.target} "
        return f"overridden: {what}{self.change} by {self.who}: {self.reason}"


@dataclass(frozen=True)
class Overrides:
    """An overrides file, read and checked (:func:`read_overrides`)."""

    path: Path
    items: tuple[Override, ...]

    def of(self, student: str) -> list[Override]:
        return [o for o in self.items if o.student == student]

    def check_students(self, known: Collection[str], where: str) -> None:
        """OverrideError naming the first student of the file that is not in ``known`` (the class)."""
        for o in self.items:
            if o.student not in known:
                raise OverrideError(f"{self.path}: no student {printable(o.student)!s} in {where}")


def read_overrides(path: Path, rubric: Rubric | None = None) -> Overrides:
    """The overrides of ``path``, checked against the rubric; OverrideError (one line, the file's line
    number) for a file that is missing, not this CSV, or holds a row that cannot be applied."""
    rubric = rubric or load_rubric()
    path = Path(path)
    try:
        records = read_spreadsheet(path, "--overrides")
    except SheetError as err:
        raise OverrideError(str(err)) from None
    header = [cell.strip() for cell in records[0]] if records else []
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise OverrideError(f"{path}: the header must name the columns {', '.join(COLUMNS)} (missing: {', '.join(missing)})")
    items = []
    for number, record in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            raise OverrideError(f"{path}:{number}: {len(record)} cells, the header has {len(header)}")
        items.append(_override(dict(zip(header, (_plain(cell) for cell in record))), rubric, f"{path}:{number}"))
    return Overrides(path, tuple(items))


def _plain(cell: str) -> str:
    """A cell's text, one line, without a spreadsheet's escape (an apostrophe before ``+``, ``-``, ...)."""
    return unescaped(" ".join(cell.split()))


def _override(cells: Mapping[str, str], rubric: Rubric, where: str) -> Override:
    for column in COLUMNS:
        if not cells[column]:
            raise OverrideError(f"{where}: no {column}")
    target, change = cells["exercise"], cells["points"]
    if target != TOTAL and target not in rubric.exercises:
        raise OverrideError(f"{where}: {printable(target)!s} is no exercise of tests/rubric.json (nor {TOTAL})")
    if not (_CHANGE.fullmatch(change) or _VALUE.fullmatch(change)):
        raise OverrideError(f"{where}: points {printable(change)!s} is neither a change (+2, -1.5) nor a value (7)")
    top = rubric.max_score if target == TOTAL else rubric.exercises[target].points
    if _VALUE.fullmatch(change) and float(change) > top:
        raise OverrideError(f"{where}: {change} points for {target}, which is out of {top:g}")
    # the overrides column separates its entries with "; ": a reason holds none
    reason, who = (cells[c].replace(";", ",") for c in ("reason", "who"))
    return Override(cells["student"], target, change, reason, who)


def _number(value: float) -> str:
    return str(round(value, 4))


def apply_overrides(rows: Mapping[str, Mapping[str, str]], overrides: Overrides | None) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The rows (plain text, no override applied) with ``overrides`` applied: the exercise's cell (or the
    total) and the total changed, and the ``overrides`` column saying what was applied; and the warnings
    (an override of an exercise the row was not graded on is not applied). Students without a row (in
    another shard) are left out."""
    result = {name: dict(row) for name, row in rows.items()}
    warnings = []
    for o in overrides.items if overrides is not None else ():
        row = result.get(o.student)
        if row is None:
            continue
        old_total = row["score"]
        if o.target == TOTAL:
            row["score"] = _number(o.applied_to(float(old_total)))
            entry = f"{TOTAL} {old_total} -> {row['score']}"
        elif row[o.target] == "":
            warnings.append(f"override of {printable(o.student)}'s {o.target} not applied: that row was not graded on it")
            continue
        else:
            old = row[o.target]
            row[o.target] = _number(o.applied_to(float(old)))
            row["score"] = _number(float(old_total) + float(row[o.target]) - float(old))
            entry = f"{o.target} {old} -> {row[o.target]}, {TOTAL} {old_total} -> {row['score']}"
        applied = f"{entry} ({o.change} by {o.who}: {o.reason})"
        row[OVERRIDES_COLUMN] = SEPARATOR.join(filter(None, [row.get(OVERRIDES_COLUMN, ""), applied]))
    return result, warnings


def without_overrides(row: Mapping[str, str]) -> dict[str, str]:
    """The row as graded: every override its ``overrides`` column records taken off, last first.
    OverrideError: a column that score-all did not write (edited by hand)."""
    plain = dict(row)
    text = plain.get(OVERRIDES_COLUMN, "")
    entries = text.split(SEPARATOR) if text else []
    for entry in reversed(entries):
        found = _APPLIED.match(entry)
        if found is None or (found["target"] != TOTAL and found["target"] not in plain):
            raise OverrideError(f"the overrides cell of {printable(str(row.get('student')))!s} is not what score-all "
                                f"writes ({printable(entry)!s}): restore it, or move the CSV away")
        if found["target"] == TOTAL:
            plain["score"] = found["old"]
        else:
            plain[found["target"]] = found["old"]
            plain["score"] = found["total_old"]
    plain[OVERRIDES_COLUMN] = ""
    return plain


def rows_without_overrides(rows: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    return {name: without_overrides(row) for name, row in rows.items()}


def check_held(rows: Mapping[str, Mapping[str, str]], where: object, given: bool) -> None:
    """OverrideError when ``rows`` (of the CSV ``where``) hold overrides and the run was not given the
    file: they are applied anew at the end of every run, so a run without it would drop them."""
    holding = sorted(name for name, row in rows.items() if row.get(OVERRIDES_COLUMN))
    if holding and not given:
        shown = ", ".join(printable(name) for name in holding[:3]) + (", ..." if len(holding) > 3 else "")
        raise OverrideError(f"{where}: overrides applied ({shown}): give --overrides FILE again (they are applied "
                            "at the end of every run), or a file with only its header to drop them")


def notes(row: Mapping[str, str], overrides: Overrides | None) -> list[str]:
    """The lines a student's feedback shows for the overrides applied to their ``row``."""
    if overrides is None or not row.get(OVERRIDES_COLUMN):
        return []
    return [o.note for o in overrides.of(str(row["student"])) if o.target == TOTAL or row.get(o.target, "") != ""]


def overridden_report(report: Mapping, row: Mapping[str, str]) -> dict:
    """A copy of a student's JSON report showing the scores of their ``row`` (overrides applied): what their
    feedback renders. The stored report is never changed."""
    shown = dict(report)
    shown["exercises"] = {ex_id: {**ex, "score": float(row[ex_id])} if row.get(ex_id, "") != "" else ex
                          for ex_id, ex in report["exercises"].items()}
    if isinstance(report.get("gpu_check"), Mapping) and row.get(GPU_COLUMN, "") != "":  # formgrader's may change it
        shown[GPU_COLUMN] = {**report[GPU_COLUMN], "score": float(row[GPU_COLUMN])}
    shown["score"] = float(row["score"])
    return shown
