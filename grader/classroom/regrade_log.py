"""The regrade log: an append-only CSV beside the grades CSV (``grades.csv`` -> ``grades-regrades.csv``)
with one line each time a run changes a student's total from what the grades CSV held: ``student``,
``old``, ``new``, ``when`` (UTC, ISO 8601), ``grader_version``, ``why``.

``why`` says what changed it: what graded the row again (``regrade (--only)``, ``regrade (--force)``,
``regrade``: the submission changed or an error row was graded again; ``merge of shards``; ``rescore
under changed rubric``), and ``override <reason>`` (or ``override removed``) when the overrides applied
to the row changed; ``late penalty -4.5 (late by 16.5 h)`` (or ``late penalty removed``) when the late
policy's penalty changed (grader/classroom/late_policy.py); all that did. score-all,
merge and rescore write it (grader/classroom/final_grades.py) after the CSV; nothing rewrites or
shortens it. Cells are escaped as the grades CSV's are (grader.classroom.grades_sheet.csv_cell).
"""

from __future__ import annotations

import csv
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from grader.classroom.grades_sheet import (LATE_BY_COLUMN, LATE_PENALTY_COLUMN, OVERRIDES_COLUMN, SheetError, csv_cell,
                                           read_grades)
from grader.classroom.overrides import SEPARATOR, Overrides, without_overrides
from grader.classroom.provenance import grader_version

LOG_COLUMNS = ("student", "old", "new", "when", "grader_version", "why")


def log_path(csv_path: Path) -> Path:
    """``<csv stem>-regrades.csv`` beside the CSV."""
    csv_path = Path(csv_path)
    return csv_path.with_name(f"{csv_path.stem}-regrades.csv")


def held_rows(csv_path: Path) -> dict[str, dict[str, str]]:
    """The rows the CSV at ``csv_path`` holds before a run (none, or not a grades CSV: none)."""
    try:
        return read_grades(Path(csv_path)).rows
    except SheetError:
        return {}


def _same(a: str, b: str) -> bool:
    try:
        return abs(float(a) - float(b)) < 1e-9
    except ValueError:
        return a == b


def _decisions(row: Mapping[str, str]) -> list[str]:
    """The overrides a row's ``overrides`` cell records, without the values they changed: ``(+2 by TA Kim: why)``."""
    text = row.get(OVERRIDES_COLUMN, "")
    return [entry[entry.find(" ("):] for entry in text.split(SEPARATOR)] if text else []


def _graded(row: Mapping[str, str]) -> str:
    """The total the grading gave: without the overrides, the late penalty given back."""
    return str(float(without_overrides(row)["score"]) + float(row.get(LATE_PENALTY_COLUMN) or 0))


def _why(student: str, held: Mapping[str, str], final: Mapping[str, str], regraded: str,
         overrides: Overrides | None) -> str:
    parts = []
    if not _same(_graded(held), _graded(final)):
        parts.append(regraded)
    if not _same(held.get(LATE_PENALTY_COLUMN) or "0", final.get(LATE_PENALTY_COLUMN) or "0"):
        taken = final.get(LATE_PENALTY_COLUMN) or "0"
        parts.append(f"late penalty -{taken} (late by {final[LATE_BY_COLUMN]} h)" if float(taken)
                     else "late penalty removed")
    if _decisions(held) != _decisions(final):
        reasons = [o.reason for o in overrides.of(student)] if overrides is not None and final.get(OVERRIDES_COLUMN) else []
        parts.append("override " + ", ".join(reasons) if reasons else "override removed")
    return "; ".join(parts) or regraded


def log_changes(csv_path: Path, held: Mapping[str, Mapping[str, str]], final: Mapping[str, Mapping[str, str]],
                regraded: str, overrides: Overrides | None) -> list[str]:
    """Append a line for every student whose total in ``final`` differs from ``held`` (what the CSV held);
    ``regraded``: what graded rows again in this run (the ``why`` of a change no override made). The
    students logged."""
    changed = sorted(name for name in final if name in held and not _same(held[name]["score"], final[name]["score"]))
    if not changed:
        return []
    path = log_path(csv_path)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    version = grader_version()
    new_file = not path.is_file() or path.stat().st_size == 0
    with open(path, "a", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        if new_file:
            writer.writerow(LOG_COLUMNS)
        for name in changed:
            why = _why(name, held[name], final[name], regraded, overrides)
            writer.writerow([csv_cell(cell) for cell in (name, held[name]["score"], final[name]["score"], when, version, why)])
        out.flush()
        os.fsync(out.fileno())
    return changed
