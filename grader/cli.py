"""The command line: ``python -m grader COMMAND ...`` (``attention-kata COMMAND ...``), assembled from the
commands the wings declare (grader/commands.py says how); this module only builds the parser from them,
runs the one chosen and turns its outcome into an exit code.

Instructors: ``score`` and ``feedback`` (grader/reports/commands.py); ``score-all``, ``merge``,
``nbgrader``, ``export``, ``gradescope-bundle`` and ``gradescope-results`` (grader/classroom/commands.py);
``release`` (grader/authoring/commands.py); ``isolation`` (grader/sandbox/commands.py). Maintainers: ``dev check``
(grader/authoring/commands.py). Students: ``check`` and ``view`` (grader/student_commands.py), the
standard library only at import (grader/progress.py, grader/attention_view.py).

Exit codes: 0 the command completed (a grading whatever the score); 2 unusable command-line input (one
line on stderr, no traceback); 1 an internal error of the grader itself (one line; KATA_DEBUG=1 shows it all).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Sequence

from grader import student_commands
from grader.authoring import commands as authoring
from grader.classroom import commands as classroom
from grader.commands import Command, UsageError
from grader.reports import commands as reports
from grader.sandbox import commands as sandbox

PROG = "attention-kata"
# In the order ``--help`` lists them: a class's grading first, then releasing, then the rest.
COMMANDS: list[Command] = [*reports.COMMANDS, *classroom.COMMANDS, *authoring.COMMANDS, *sandbox.COMMANDS,
                           *student_commands.COMMANDS]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print the usage block too
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Grade attention-kata submissions in isolation.")
    choices = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_arguments(choices.add_parser(command.name, help=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {command.name: command.run for command in COMMANDS}[args.command](args)
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
