"""A late policy: the due date, the extensions and the penalty rule of one assignment, in one JSON file
given as ``--late-policy FILE`` (``score-all``, ``nbgrader``), read and checked here (:func:`read_late_policy`)
and applied to the graded rows at the end of a run (:func:`apply_late`, called by
grader/classroom/final_grades.py before the overrides: an instructor's override can correct a penalty)::

    {
      "due": "2026-03-01T23:59:00+01:00",
      "grace_minutes": 15,
      "penalty": {"percent": 5, "per": "day", "cap": 50},
      "cutoff_hours": 168,
      "extensions": {"alice": "2026-03-04T23:59:00+01:00", "bob": 48}
    }

- ``due``: ISO 8601 with its time zone (a time without one is refused: whose midnight?);
- ``penalty``: ``"none"``, ``"zero"`` (any late submission loses every point) or a percent of the score
  earned per started ``day`` (24 h) or ``hour``, at most ``cap`` percent (default 100);
- ``grace_minutes`` (default 0): a submission at most this late is on time; one later is late from its due
  date, the grace not deducted;
- ``cutoff_hours`` (optional): a submission more than this late gets 0, whatever the rule;
- ``extensions``: a student's own due date (ISO 8601) or the hours added to ``due``; grace and cutoff count
  from it.

The penalty is a share of the score the student earned (never below 0), rounded to 4 places; it is taken
from the row's total (``score``); the exercises' cells keep what the grading gave. The row says it:
``submitted_at`` (UTC), ``late_by`` (hours, from the student's due date; 0 when on time or in the grace),
``late_penalty`` (the points taken). A row whose submission time is unknown keeps these cells empty.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping

from grader.classroom.grades_sheet import LATE_BY_COLUMN, LATE_PENALTY_COLUMN, SUBMITTED_AT_COLUMN
from grader.safe_text import printable

KEYS = ("due", "grace_minutes", "penalty", "cutoff_hours", "extensions")
RULES = ("none", "zero")
UNITS = {"day": 24.0, "hour": 1.0}


class LatePolicyError(Exception):
    """A late-policy file that cannot be used (one line, exit 2)."""


@dataclass(frozen=True)
class LatePolicy:
    path: Path
    due: datetime
    rule: str = "none"  # "none", "zero" or "percent"
    percent: float = 0.0
    per: str = "day"
    cap: float = 100.0
    grace: timedelta = timedelta(0)
    cutoff_hours: float | None = None
    extensions: Mapping[str, datetime] = field(default_factory=dict)

    def due_of(self, student: str) -> datetime:
        return self.extensions.get(student, self.due)

    def describe(self) -> str:
        """The rule as the feedback and the summary say it: ``5%/day, cap 50%, grace 15 min``."""
        rule = {"none": "no penalty", "zero": "0 points when late"}.get(self.rule, f"{self.percent:g}%/{self.per}, "
                                                                                   f"cap {self.cap:g}%")
        extra = [f"grace {self.grace.total_seconds() / 60:g} min"] if self.grace else []
        extra += [f"0 points after {self.cutoff_hours:g} h"] if self.cutoff_hours is not None else []
        return ", ".join([rule, *extra])


@dataclass(frozen=True)
class Lateness:
    """What the policy makes of one submission: hours late (0: on time), the percent and points taken."""

    late_by: float
    percent: float
    points: float

    def note(self, policy: LatePolicy) -> str:
        """``late by 16.5 h: -5% (-4.5 points; policy: 5%/day, cap 50%)``, the line a student's feedback shows."""
        if not self.late_by:
            return ""
        return (f"late by {self.late_by:g} h: -{self.percent:g}% (-{self.points:g} points; "
                f"policy: {policy.describe()})")


def _instant(value: Any, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        raise LatePolicyError(f"{where}: {printable(str(value))!s} is not an ISO 8601 date and time")
    if when.tzinfo is None:
        raise LatePolicyError(f"{where}: {value} has no time zone (write it as 2026-03-01T23:59:00+01:00)")
    return when


def _number(data: Mapping[str, Any], key: str, where: str, default: float | None, top: float = math.inf) -> float | None:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= top or math.isnan(value):
        raise LatePolicyError(f"{where}: {key} must be a number from 0 to {top:g}, not {printable(str(value))!s}")
    return float(value)


def _penalty(value: Any, where: str) -> dict[str, Any]:
    if value in RULES:
        return {"rule": value}
    if not isinstance(value, dict) or set(value) - {"percent", "per", "cap"} or "percent" not in value:
        raise LatePolicyError(f'{where}: penalty must be "none", "zero" or {{"percent": 5, "per": "day", "cap": 50}}')
    if value.get("per", "day") not in UNITS:
        raise LatePolicyError(f"{where}: penalty per {printable(str(value.get('per')))!s}: day or hour")
    return {"rule": "percent", "percent": _number(value, "percent", f"{where}: penalty", None, 100.0),
            "per": value.get("per", "day"), "cap": _number(value, "cap", f"{where}: penalty", 100.0, 100.0)}


def _extensions(value: Any, due: datetime, where: str) -> dict[str, datetime]:
    if not isinstance(value, dict):
        raise LatePolicyError(f'{where}: extensions must map students to a due date or hours ({{"bob": 48}})')
    out = {}
    for student, given in value.items():
        if isinstance(given, (int, float)) and not isinstance(given, bool):
            out[student] = due + timedelta(hours=_number({"hours": given}, "hours", f"{where}: {printable(student)}", None))
        else:
            out[student] = _instant(given, f"{where}: extension of {printable(student)}")
    return out


def read_late_policy(path: Path) -> LatePolicy:
    """The policy of ``path``; LatePolicyError (one line) for a file that is missing, not JSON, or not a policy."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as err:
        raise LatePolicyError(f"--late-policy {path}: cannot read it ({err.strerror or err})") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise LatePolicyError(f"--late-policy {path}: not JSON ({' '.join(str(err).split())})") from None
    where = f"--late-policy {path}"
    if not isinstance(data, dict) or "due" not in data:
        raise LatePolicyError(f"{where}: a JSON object with at least a due date (\"due\") is needed")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise LatePolicyError(f"{where}: unknown key {printable(unknown[0])!s} (known: {', '.join(KEYS)})")
    due = _instant(data["due"], f"{where}: due")
    return LatePolicy(path, due, **_penalty(data.get("penalty", "none"), where),
                      grace=timedelta(minutes=_number(data, "grace_minutes", where, 0.0)),
                      cutoff_hours=_number(data, "cutoff_hours", where, None),
                      extensions=_extensions(data.get("extensions", {}), due, where))


def lateness(policy: LatePolicy, student: str, submitted_at: datetime, score: float) -> Lateness:
    """What ``policy`` takes from ``score`` for ``student``'s submission at ``submitted_at``."""
    late = submitted_at - policy.due_of(student)
    if late <= policy.grace:
        return Lateness(0.0, 0.0, 0.0)
    hours = late.total_seconds() / 3600
    if policy.rule == "zero" or (policy.cutoff_hours is not None and hours > policy.cutoff_hours):
        percent = 100.0
    elif policy.rule == "none":
        percent = 0.0
    else:
        percent = min(policy.cap, policy.percent * math.ceil(hours / UNITS[policy.per]))
    return Lateness(round(hours, 2), percent, round(max(score, 0.0) * percent / 100, 4))


# --- the rows -------------------------------------------------------------------------------------------


def without_late(row: Mapping[str, str]) -> dict[str, str]:
    """The row as graded: its penalty given back to the total, ``late_by`` and ``late_penalty`` emptied
    (``submitted_at`` stays: the time a run knew, for a student whose submission is no longer there)."""
    plain = dict(row)
    taken = plain.get(LATE_PENALTY_COLUMN, "")
    if taken and float(taken):
        plain["score"] = str(round(float(plain["score"]) + float(taken), 4))
    plain[LATE_BY_COLUMN] = plain[LATE_PENALTY_COLUMN] = ""
    return plain


def apply_late(rows: Mapping[str, Mapping[str, str]], policy: LatePolicy | None,
               times: Mapping[str, datetime]) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The rows with ``policy`` applied anew (None: as they are): each student's submission time from
    ``times`` or, where it has none, the row's own ``submitted_at``; and the feedback line of each student
    penalized. A row with no time at all gets no penalty."""
    if policy is None:
        return {name: dict(row) for name, row in rows.items()}, {}
    result, notes = {}, {}
    for name, row in rows.items():
        row = without_late(row)
        held = row.get(SUBMITTED_AT_COLUMN)
        when = times.get(name) or (datetime.fromisoformat(held) if held else None)
        if when is not None:
            late = lateness(policy, name, when, float(row["score"]))
            row[SUBMITTED_AT_COLUMN] = when.astimezone(timezone.utc).isoformat(timespec="seconds")
            row[LATE_BY_COLUMN], row[LATE_PENALTY_COLUMN] = f"{late.late_by:g}", f"{late.points:g}"
            if late.points:
                row["score"] = str(round(float(row["score"]) - late.points, 4))
            if late.late_by:
                notes[name] = late.note(policy)
        result[name] = row
    return result, notes


def row_note(row: Mapping[str, str], student: str, policy: LatePolicy | None) -> str:
    """The feedback line of a row :func:`apply_late` penalized (empty: on time, no policy, no time)."""
    if policy is None or not row.get(SUBMITTED_AT_COLUMN) or not row.get(LATE_PENALTY_COLUMN):
        return ""
    graded = without_late(row)
    return lateness(policy, student, datetime.fromisoformat(row[SUBMITTED_AT_COLUMN]), float(graded["score"])).note(policy)


def held_penalties(rows: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The students whose row holds a late penalty (a run without the policy would keep it as it is)."""
    return sorted(name for name, row in rows.items() if row.get(LATE_PENALTY_COLUMN) not in ("", "0", None))


def check_held(rows: Mapping[str, Mapping[str, str]], where: object, given: bool) -> None:
    """LatePolicyError when ``rows`` (of the CSV ``where``) hold late penalties and the run was not given
    the policy: a run regrades rows without their penalty, so one without the file would drop them."""
    holding = held_penalties(rows)
    if holding and not given:
        shown = ", ".join(printable(name) for name in holding[:3]) + (", ..." if len(holding) > 3 else "")
        raise LatePolicyError(f"{where}: late penalties applied ({shown}): give --late-policy FILE again (it is applied "
                              'at the end of every run), or a policy with "penalty": "none" to drop them')
