"""The sandbox wing's command: ``isolation`` says which isolation grading gets on this machine
(grader/sandbox/modes.py) and which bound holds a domain's memory (grader/sandbox/cgroups.py), and
nothing changes; exit 2 when none is possible."""

from __future__ import annotations

import argparse
import sys

from grader.commands import Command, UsageError
from grader.sandbox.limits import MEMORY_MB
from grader.sandbox.modes import SANDBOX_CHOICES, SANDBOX_HELP, SandboxUnavailable, choose_isolation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sandbox", choices=SANDBOX_CHOICES, default="isolated", help=SANDBOX_HELP)


def run(args: argparse.Namespace) -> int:
    try:
        isolation = choose_isolation(args.sandbox, for_class=True, protect=False)  # a question: nothing changes
    except SandboxUnavailable as err:
        raise UsageError(str(err)) from None
    print(isolation.mode.name)
    print(isolation.memory_line(MEMORY_MB), file=sys.stderr)
    for warning in isolation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


COMMANDS = [Command("isolation", "say which isolation grading gets here (exit 2: none possible)", add_arguments, run)]
