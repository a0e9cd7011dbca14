"""``merge``: join the CSVs of ``score-all --shard K/N`` runs into what one run would have written.

    python -m grader merge grades.csv shard-1.csv shard-2.csv ... \\
        [--json-dir reports --from-json-dirs reports-1 reports-2 ...] [--gradebook gradebook.db --assignment NAME]

One run over the whole class writes its CSV sorted by student (grader/classroom/score_all.py): the merged CSV is
the shards' rows, sorted the same way, with the same header and the same cells (the rows are copied
as written, never re-computed). With ``--json-dir``, each graded student's JSON report is copied from
the shard folder that holds it (the folders are searched in turn; two different reports of one
student are refused), and an error row's stale report is removed, as score-all does. With
``--gradebook``, every row is recorded there (grader/classroom/gradebook.py), as a run records its rows; run
the shards without ``--gradebook`` (they may be on different machines) and give it to the merge.
The class-level outputs (grader.classroom.class_outputs: the class summary) are written beside the
merged CSV with the reports of ``--json-dir``.

Refused (MergeError, nothing written): a shard CSV that is not complete (a last row cut short: resume
that shard first) or not a score-all CSV; a student with two different rows in two shards; a
graded student whose JSON report none of ``--from-json-dirs`` holds; shards graded under different
provenance keys, or under another rubric than this checkout's (grader/classroom/provenance.py: the
merged CSV's sidecar describes the shards' one key); a shard or the output that another run holds
(grader/classroom/sheet_lock.py: merge holds the locks of all of them while it runs).

A late policy (``--late-policy FILE``, grader/classroom/late_policy.py) is applied as one run applies it: taken
off the rows and applied anew from each row's ``submitted_at`` (merge has no submissions folder), so the merged
CSV is what one run under that policy writes. Each shard's rows record what its policy made of each submission
(``submitted_at``, ``late_by``, ``late_penalty``): merge recomputes them under FILE and refuses the first row
whose late cells differ (a shard graded under another policy, or under none), and refuses shards holding
penalties when not given the file (it would keep them without the policy that explains them). To change a
policy after the shards ran (an extension), merge under the shards' policy, then resume or rescore the merged
CSV under the new one.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from grader.blind_ids import BlindIds
from grader.classroom.class_outputs import write_class_outputs
from grader.classroom.final_grades import Shown, finish, held_and_checked  # overrides, regrade log
from grader.classroom.gradebook import ClassGradebook
from grader.classroom.grades_sheet import (GRADED_BY_COLUMN, LATE_COLUMNS, SheetError, json_path, read_grades,
                                           safe_file_name, write_grades)
from grader.classroom.late_policy import LatePolicy, LatePolicyError, apply_late
from grader.classroom.late_policy import check_held as check_late_held
from grader.classroom.provenance import MixedGradings, one_grading, record_key
from grader.classroom.sheet_lock import SheetBusy, take_lock
from grader.classroom.overrides import OverrideError, Overrides, check_held, rows_without_overrides
from grader.files import private_files, write_atomically


class MergeError(Exception):
    """The shards cannot be merged (one line for the instructor); nothing was written."""


@dataclass
class MergeResult:
    rows: int = 0
    warnings: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)  # what the class-level outputs wrote


@dataclass
class _Reports:
    """What ``--json-dir`` gets: each graded student's report (text, by target file), the error rows'
    stale reports to remove, and the reports for the class summary."""

    texts: dict[Path, str] = field(default_factory=dict)
    stale: list[Path] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)


def merge(out: Path, shards: Sequence[Path], *, json_dir: Path | None = None, from_json_dirs: Sequence[Path] = (),
          gradebook: Path | None = None, assignment: str | None = None, blind: BlindIds | None = None,
          overrides: Overrides | None = None, late_policy: LatePolicy | None = None) -> MergeResult:
    """Write ``out`` (and ``json_dir``, ``gradebook``) from the shards (see the module docstring); what
    it creates is for this user alone, as score-all's outputs are (grader.files.private_files)."""
    with private_files(), ExitStack() as locks:
        try:
            existing = [Path(out), *(Path(p) for p in shards if Path(p).is_file())]
            for csv_path in {p.resolve(): p for p in reversed(existing)}.values():  # each file once
                locks.enter_context(take_lock(csv_path, "merge"))
        except SheetBusy as err:
            raise MergeError(str(err)) from None
        return _merge(out, shards, json_dir, from_json_dirs, gradebook, assignment, blind, overrides, late_policy)


def _merge(out: Path, shards: Sequence[Path], json_dir: Path | None, from_json_dirs: Sequence[Path],
           gradebook: Path | None, assignment: str | None, blind: BlindIds | None,
           overrides: Overrides | None = None, late_policy: LatePolicy | None = None) -> MergeResult:
    result = MergeResult()
    rows, graded_by, source = _read_shards(Path(out), shards)
    try:  # overrides: taken off the shards' rows, applied to the merged ones at the end
        grading = one_grading(graded_by)
        held = held_and_checked(Path(out), overrides, set(rows), "the shards")
        check_held(rows, "a shard", overrides is not None)
        rows = rows_without_overrides(rows)
        check_late_held(rows, "a shard", late_policy is not None)
        _check_late_policy(rows, late_policy, source)
    except (MixedGradings, OverrideError, LatePolicyError) as err:
        raise MergeError(str(err)) from None
    found = _find_reports(rows, json_dir, from_json_dirs, result.warnings) if json_dir is not None else _Reports()
    book = None
    if gradebook is not None:
        book = ClassGradebook(gradebook, assignment or "")  # refuses a foreign assignment before any write
        result.warnings += book.warnings
    try:
        for target, text in found.texts.items():
            write_atomically(target, text)
        for target in found.stale:
            if target.is_file() or target.is_symlink():
                target.unlink()
        if grading is not None:
            record_key(Path(out), next(iter(graded_by)), grading)
        write_grades(Path(out), rows.values())
        if book is not None:
            for name in sorted(rows):
                book.record(rows[name])
    finally:
        if book is not None:
            book.close()
    result.rows = len(rows)
    result.warnings += finish(Path(out), held, overrides, "merge of shards", Shown(found.reports, json_dir, None,
                              gradebook=gradebook, assignment=assignment, blind=blind), late_policy)
    result.outputs = write_class_outputs(Path(out), found.reports, result.warnings, blind=blind)
    return result


def _check_late_policy(rows: dict[str, dict[str, str]], policy: LatePolicy | None, source: dict[str, Path]) -> None:
    """MergeError (one line) at the first row whose late cells ``policy`` would not have written: its shard was
    graded under another late policy, or under none (the rows hold no override here)."""
    if policy is None:
        return
    timed = {source[name] for name, row in rows.items() if row[LATE_COLUMNS[0]]}
    untimed = sorted({str(shard) for shard in source.values()} - {str(shard) for shard in timed})
    if untimed:  # a run without a policy reads no submission time: nothing here to apply one to
        raise MergeError(f"{untimed[0]}: graded without a late policy (no submission times): grade it again with "
                         f"--late-policy {policy.path}, then merge")
    again, _ = apply_late(rows, policy, {})
    for name in sorted(rows):
        held, now = ([row[c] for c in LATE_COLUMNS[1:]] for row in (rows[name], again[name]))
        if held != now:
            said = f"late by {held[0]} h, -{held[1]} points" if held[0] else "no late policy"
            raise MergeError(f"{source[name]}: the row of {name!r} was graded under another late policy ({said}; "
                             f"{policy.path} gives late by {now[0]} h, -{now[1]} points): merge with the shards' "
                             "policy, then resume or rescore the merged CSV under the new one")


def _read_shards(out: Path, shards: Sequence[Path]) -> tuple[dict[str, dict[str, str]], dict[str, Path], dict[str, Path]]:
    """Every row of the shards, by student, {graded_by: the first shard with a row graded under it} and
    {student: their shard}; MergeError for a shard that is not whole or not disjoint."""
    rows: dict[str, dict[str, str]] = {}
    source: dict[str, Path] = {}
    graded_by: dict[str, Path] = {}
    for shard in map(Path, shards):
        if not shard.is_file():
            raise MergeError(f"{shard}: no such file")
        if shard.resolve() == out.resolve():
            raise MergeError(f"{shard}: is the output too; write the merge to a new file")
        try:
            content = read_grades(shard)
        except SheetError as err:
            raise MergeError(str(err)) from None
        if content.warnings:
            raise MergeError(f"{content.warnings[0]}; resume that shard (the same score-all command) first")
        for name, row in content.rows.items():
            if name in rows and rows[name] != row:
                raise MergeError(f"student {name!r} has different rows in {source[name]} and {shard}: "
                                 "shards must be disjoint (the same N, each K once)")
            rows[name] = row
            source.setdefault(name, shard)
            graded_by.setdefault(row[GRADED_BY_COLUMN], shard)
    return rows, graded_by, source


def _find_reports(rows: dict[str, dict[str, str]], json_dir: Path, from_json_dirs: Sequence[Path],
                  warnings: list[str]) -> _Reports:
    found = _Reports()
    for name, row in rows.items():
        try:
            target = json_path(json_dir, name)
        except ValueError as err:
            warnings.append(f"no JSON report for {name!r}: {err}")
            continue
        if row["status"] != "graded":
            found.stale.append(target)
            continue
        text = _find_report(name, from_json_dirs)
        found.texts[target] = text
        found.reports[name] = json.loads(text)
    return found


def _find_report(student: str, folders: Sequence[Path]) -> str:
    """The text of ``student``'s JSON report in one of ``folders`` (the same in all that hold it)."""
    name = safe_file_name(student, ".json")
    found: dict[str, Path] = {}
    for folder in folders:
        candidate = Path(folder) / name
        if candidate.is_file():
            text = candidate.read_text(encoding="utf-8")
            try:
                json.loads(text)
            except ValueError:
                raise MergeError(f"{candidate}: not a JSON report") from None
            found.setdefault(text, candidate)
    if not found:
        raise MergeError(f"no JSON report of the graded student {student!r} in "
                         f"{', '.join(map(str, folders)) or '--from-json-dirs'}")
    if len(found) > 1:
        raise MergeError(f"two different JSON reports of {student!r}: {' and '.join(map(str, found.values()))}")
    return next(iter(found))
