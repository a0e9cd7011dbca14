"""The command line: ``python -m grader score [SUBMISSION] [--json OUT] [--format ...] [--timeout S]``.

Exit codes: 0 grading completed (whatever the score); 2 unusable command-line input (one line on
stderr, no traceback); 1 an internal error of the grader itself (one line; KATA_DEBUG=1 shows it all).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn, Sequence

PROG = "attention-kata"


class UsageError(Exception):
    """Unusable command-line input: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print the usage block too
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Grade attention-kata submissions in isolation.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    score = commands.add_parser("score", help="grade one submission (default: ./exercises)")
    score.add_argument("submission", nargs="?", default="exercises",
                       help="a directory laid out like exercises/, a repository root holding exercises/, or a .zip of either")
    score.add_argument("--json", metavar="OUT", type=Path, help="also write the JSON report to OUT")
    score.add_argument("--format", choices=("text", "json", "gradescope"), default="text",
                       help="what to print on stdout (default: text)")
    score.add_argument("--timeout", type=_positive_float, default=5.0, metavar="SECONDS",
                       help="time limit for each call into the student's code (default: 5)")
    score.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                       help="run the student's code under bubblewrap: auto (when it works here), bwrap (or exit 2), none")
    return parser


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds, got {text}")
    return value


def _check_writable(path: Path | None, flag: str) -> None:
    if path is not None and not path.parent.resolve().is_dir():
        raise UsageError(f"{flag} {path}: directory {path.parent} does not exist")
    if path is not None and path.is_dir():
        raise UsageError(f"{flag} {path}: is a directory")


def cmd_score(args: argparse.Namespace) -> int:
    from grader.grading import GradeOptions, grade
    from grader.report import dumps, to_gradescope, to_json, to_text
    from grader.sandbox import SandboxUnavailable
    from grader.submission import SubmissionError

    _check_writable(args.json, "--json")
    try:
        report = grade(Path(args.submission), GradeOptions(call_timeout=args.timeout, sandbox=args.sandbox))
    except (SubmissionError, SandboxUnavailable) as err:
        raise UsageError(str(err)) from None
    if args.json is not None:
        args.json.write_text(dumps(to_json(report)))
    if args.format == "json":
        sys.stdout.write(dumps(to_json(report)))
    elif args.format == "gradescope":
        sys.stdout.write(dumps(to_gradescope(report)))
    else:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sys.stdout.write(to_text(report, colour=colour))
    return 0


COMMANDS = {"score": cmd_score}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug of the grader: one line, never a traceback, unless asked
        if os.environ.get("KATA_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(err).__name__}: {err} (KATA_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1
