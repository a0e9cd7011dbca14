"""The instructor's overrides (grader/classroom/overrides.py) in Gradescope's results.json: the file travels in
the autograder zip, and every autograder run applies the rows of its own submitters.

Gradescope's model: the autograder zip is the only file of the instructor's that a run sees, and each run
grades one submission into ``/autograder/results/results.json``, whose top-level ``score``, when given, is
the submission's score (it overrides the sum of the tests' scores), and whose ``output`` and ``tests`` the
student reads (https://gradescope-autograders.readthedocs.io/en/latest/specs/). Who submitted is in
``/autograder/submission_metadata.json``: ``users``, each with an ``email``, an ``id`` and a ``name``
(several for a group submission; https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).

So ``python -m grader gradescope-bundle autograder.zip --overrides overrides.csv`` checks the file (as
``score-all --overrides`` does) and bundles it as ``overrides.csv``; with it, ``run_autograder`` writes the
JSON report and has ``python -m grader gradescope-results`` render it: the rows of the file whose ``student``
is a submitter's e-mail address (any case) or Gradescope user id are applied as score-all applies them (an
exercise's score, or the total), ``score`` is the final grade, the ``output`` opens with one line per
override (``override: 03_causal/causal_attention 6 -> 8 (+2 by TA Kim: accepted regrade request)``) and the
``tests`` end with one entry per override, worth the points it changed, out of 0. An override is never kept
in the JSON report. To change an override, upload the zip again and rerun the autograder (Gradescope's
"Regrade all submissions"): results are always computed afresh, so nothing is applied twice.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from grader.authoring import commands as authoring
from grader.classroom.grades_sheet import OVERRIDES_COLUMN
from grader.classroom.overrides import (GPU_COLUMN, SEPARATOR, OverrideError, Overrides, apply_overrides,
                                        overridden_report, read_overrides)
from grader.commands import UsageError
from grader.reports.feedback_from_json import read_report
from grader.reports.gradescope import to_gradescope
from grader.reports.json_report import dumps
from grader.safe_text import escape_controls
from grader.visibility import add_visibility_option

KEY = "submission"  # the one row of a run


def submitters(metadata: Mapping[str, Any]) -> set[str]:
    """The names an overrides file may give a submission's students by: each user's e-mail address (lower
    case) and Gradescope user id."""
    users = metadata.get("users") if isinstance(metadata, Mapping) else None
    names = set()
    for user in users if isinstance(users, list) else []:
        if isinstance(user, Mapping):
            names |= {str(user[key]).strip().casefold() for key in ("email", "id") if user.get(key) not in (None, "")}
    return names


def read_metadata(path: Path) -> tuple[dict[str, Any], str]:
    """Gradescope's submission metadata, and a warning when there is none to read (a local run): then no
    override applies."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return {}, f"no submission metadata ({path}: {type(err).__name__}): no override applied"
    return (data, "") if isinstance(data, dict) else ({}, f"{path}: not Gradescope's submission metadata")


def results_with_overrides(report: Mapping[str, Any], overrides: Overrides, metadata: Mapping[str, Any],
                           visibility: str) -> tuple[dict[str, Any], list[str]]:
    """Gradescope's results of the JSON ``report`` with the overrides of its submitters applied, in the file's
    order; the warnings (an override of an exercise the report does not grade is not applied)."""
    who = submitters(metadata)
    row = {"student": KEY, "score": str(report["score"]), OVERRIDES_COLUMN: "",
           **{ex_id: str(ex["score"]) for ex_id, ex in report["exercises"].items()}}
    row[GPU_COLUMN] = str(report[GPU_COLUMN]["score"]) if report.get(GPU_COLUMN) else ""
    rows, warnings, lines, tests = {KEY: row}, [], [], []
    for o in overrides.items:
        if o.student.strip().casefold() not in who:
            continue
        before = float(rows[KEY]["score"])
        rows, said = apply_overrides(rows, Overrides(overrides.path, (replace(o, student=KEY),)))
        warnings += said
        entry = rows[KEY][OVERRIDES_COLUMN].split(SEPARATOR)[-1] if not said else ""
        if entry:
            line = f"override: {escape_controls(entry)}"
            lines.append(line)
            tests.append({"name": f"override of {o.target} by {escape_controls(o.who)}", "output": line,
                          "score": round(float(rows[KEY]["score"]) - before, 4), "max_score": 0.0,
                          "status": "passed", "visibility": "visible"})
            rows[KEY][OVERRIDES_COLUMN] = ""  # each entry read alone
    results = to_gradescope(overridden_report(report, rows[KEY]), visibility)
    if lines:
        results["output"] = "\n".join([*lines, results["output"]])
        results["tests"] += tests
    return results, warnings


# --- the commands (declared in grader/classroom/commands.py) ------------------------------------------------


def add_bundle_arguments(parser: argparse.ArgumentParser) -> None:
    """``gradescope-bundle``: the authoring wing's options, and the overrides to bundle."""
    authoring.add_bundle_arguments(parser)
    parser.add_argument("--overrides", type=Path, metavar="FILE",
                        help="bundle the instructor's overrides of FILE (student: the Gradescope e-mail address or user "
                             "id); every autograder run applies its submitters' rows to results.json")


def run_bundle(args: argparse.Namespace) -> int:
    text = None
    if args.overrides is not None:
        try:
            read_overrides(args.overrides)  # the rows are refused now, not at every student's run
        except OverrideError as err:
            raise UsageError(str(err)) from None
        text = args.overrides.read_bytes()
    return authoring.run_gradescope_bundle(args, text)


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, metavar="REPORT.json", help="a JSON report (score --format json)")
    parser.add_argument("--overrides", type=Path, required=True, metavar="FILE", help="the instructor's overrides")
    parser.add_argument("--metadata", type=Path, required=True, metavar="META.json",
                        help="Gradescope's submission_metadata.json (who submitted); missing: no override applies")
    add_visibility_option(parser)


def run_results(args: argparse.Namespace) -> int:
    """``gradescope-results``: results.json on stdout, the warnings on stderr."""
    try:
        report = read_report(args.report)
    except ValueError as err:
        raise UsageError(f"{args.report}: {err}") from None
    try:
        overrides = read_overrides(args.overrides)
    except OverrideError as err:
        raise UsageError(str(err)) from None
    metadata, warning = read_metadata(args.metadata)
    results, warnings = results_with_overrides(report, overrides, metadata, args.visibility)
    for line in filter(None, [warning, *warnings]):
        print(f"warning: {line}", file=sys.stderr)
    sys.stdout.write(dumps(results))
    return 0
