"""``python -m grader export``: the grades CSV as an LMS's import file (grader/classroom/lms_export.py),
declared here and listed in grader/classroom/commands.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.classroom.lms_export import DEFAULT_ASSIGNMENT, FORMATS, ExportError, ExportOptions, export
from grader.commands import Command, UsageError, check_writable
from grader.safe_text import printable


def _points(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"must be a positive number of points, got {text}")
    return value


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("grades", type=Path, metavar="GRADES.csv", help="a grades CSV of score-all (or merge)")
    parser.add_argument("--roster", type=Path, required=True, metavar="ROSTER.csv",
                        help="who each submission folder is: id, name, email, login, ... (docs/class-grading.md)")
    parser.add_argument("--to", required=True, metavar="|".join(FORMATS),
                        help="canvas: Gradebook import CSV; moodle: offline grading worksheet; "
                             "nbgrader: the student list of nbgrader db student import")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="the file to write")
    parser.add_argument("--assignment", default=DEFAULT_ASSIGNMENT, metavar="NAME", help="Canvas: the assignment's name")
    parser.add_argument("--assignment-id", default="", metavar="ID",
                        help="Canvas: the assignment's id (without one, Canvas creates a new assignment)")
    parser.add_argument("--points", type=_points, metavar="P",
                        help="scale the scores to P points (the LMS assignment's total)")
    parser.add_argument("--no-names", dest="no_names", action="store_true",
                        help="no names or e-mail addresses in the file (the LMS matches students by id)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse (exit 2) when a submission or a roster row matches nothing")


def run_export(args: argparse.Namespace) -> int:
    check_writable(args.out, "--out")
    options = ExportOptions(to=args.to, assignment=args.assignment, assignment_id=args.assignment_id,
                            points=args.points, blind=args.no_names, strict=args.strict)
    try:
        lines = export(args.grades, args.roster, args.out, options)
    except ExportError as err:
        raise UsageError(str(err)) from None
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)
    print(f"wrote {printable(str(args.out))} ({args.to})", file=sys.stderr)
    return 0


EXPORT = Command("export", "write a grades CSV as Canvas's or Moodle's grade import file, or nbgrader's student list",
                 add_export_arguments, run_export)
