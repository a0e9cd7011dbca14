"""The reports wing's commands: ``score`` (grade one submission and print its report in a format of
grader/reports/formats.py) and ``feedback`` (the students' feedback files again from score-all's JSON
reports, nobody graded); and the feedback options, which ``score-all`` shares."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader.blind_ids import add_blind_option, blind_ids
from grader.commands import Command, UsageError, check_writable, make_dir, say_warnings_and_outputs
from grader.files import private_files
from grader.grading.commands import add_grading_options, grade_options
from grader.grading.gpu_check import GpuUnavailable
from grader.grading.grade import grade
from grader.grading.intake import SubmissionError
from grader.reports.feedback import write_feedback
from grader.reports.feedback_from_json import FeedbackInputError, report_files, rewrite_feedback
from grader.reports.formats import FORMATS, render
from grader.reports.json_report import dumps, to_json
from grader.sandbox.modes import SandboxUnavailable
from grader.visibility import add_visibility_option


def add_feedback_options(parser: argparse.ArgumentParser, where: str, required: bool = False) -> None:
    parser.add_argument("--feedback-dir", type=Path, metavar="DIR", required=required, help=where)
    add_visibility_option(parser)


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submission", nargs="?", default="exercises",
                        help="a directory laid out like exercises/, a repository root holding exercises/, or a .zip of either")
    parser.add_argument("--json", metavar="OUT", type=Path, help="also write the JSON report to OUT")
    parser.add_argument("--format", choices=tuple(FORMATS), default="text", help="what to print on stdout (default: text)")
    add_grading_options(parser, for_class=False)
    add_feedback_options(parser, "also write the student's feedback (Markdown) to DIR/<submission name>.md")


def run_score(args: argparse.Namespace) -> int:
    check_writable(args.json, "--json")
    if args.feedback_dir is not None and not args.feedback_dir.is_dir():
        raise UsageError(f"--feedback-dir {args.feedback_dir}: not a directory")
    try:
        report = grade(Path(args.submission), grade_options(args))
    except (SubmissionError, SandboxUnavailable, GpuUnavailable) as err:
        raise UsageError(str(err)) from None
    report_json = to_json(report)
    with private_files():  # a student's report and feedback: readable by this user alone, as score-all's
        if args.json is not None:
            args.json.write_text(dumps(report_json))
        if args.feedback_dir is not None:
            submission = Path(args.submission).resolve()
            name = submission.stem if submission.suffix.lower() == ".zip" else submission.name
            written = write_feedback(name, report_json, args.feedback_dir, args.visibility)
            print(f"feedback: {written}", file=sys.stderr)
    colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    sys.stdout.write(render(args.format, report_json, args.visibility, colour))
    return 0


def add_feedback_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("json_dir", type=Path, metavar="JSON_DIR",
                        help="score-all's (or merge's) --json-dir: one <student>.json per graded student")
    add_feedback_options(parser, "write each student's feedback (Markdown) to DIR/<student>.md (created)", required=True)
    add_blind_option(parser, "the feedback names")


def run_feedback(args: argparse.Namespace) -> int:
    """The feedback files again from the JSON reports (grader/reports/feedback_from_json.py): a report that
    gives none is a warning, the others are written; nothing written at all is one line and exit 2."""
    try:
        files = report_files(args.json_dir)  # refuse before creating anything
    except FeedbackInputError as err:
        raise UsageError(str(err)) from None
    ids = blind_ids(args)
    make_dir(args.feedback_dir, "--feedback-dir")
    with private_files():  # other people's feedback: readable by this user alone, as score-all's
        done = rewrite_feedback(files, args.feedback_dir, args.visibility, ids or str)
    if not done.written:
        why = done.problems[0] if len(files) == 1 else f"none of {len(files)} JSON files gave one ({done.problems[0]}; …)"
        raise UsageError(f"no feedback file written to {args.feedback_dir}: {why}")
    say_warnings_and_outputs(done.problems, [])
    failed = len(done.problems)
    print(f"feedback ({args.visibility}): {len(done.written)} files written to {args.feedback_dir}"
          + (f"; {failed} JSON file{'s' if failed > 1 else ''} gave none (above)" if failed else ""), file=sys.stderr)
    return 0


COMMANDS = [
    Command("score", "grade one submission (default: ./exercises)", add_score_arguments, run_score),
    Command("feedback", "write the students' feedback files again from score-all's JSON reports, at any --visibility "
                        "(nobody is graded)", add_feedback_arguments, run_feedback),
]
