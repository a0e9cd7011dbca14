"""The students' commands: ``check`` (their progress, grader/progress.py) and ``view`` (their attention
weights, grader/attention_view.py). Both tools are also copied into the students' release as scripts
of their own, so they import nothing of ``grader``; these two commands give them the repository's
module list and reference (grader/cli.py assembles them with the wings' commands)."""

from __future__ import annotations

import argparse

from grader import attention_view, progress
from grader.commands import Command, UsageError
from grader.rubric import SOLUTIONS_DIR, load_rubric


def run_check(args: argparse.Namespace) -> int:
    modules = progress.load_modules([(ex.group, ex.module) for ex in load_rubric().exercises.values()])
    try:
        return progress.run_command(args, modules)
    except progress.ProgressError as err:
        raise UsageError(str(err)) from None


def run_view(args: argparse.Namespace) -> int:
    try:
        return attention_view.run_command(args, reference=SOLUTIONS_DIR)
    except attention_view.ViewError as err:
        raise UsageError(str(err)) from None


COMMANDS = [Command("check", progress.HELP, progress.add_arguments, run_check),
            Command("view", attention_view.HELP, attention_view.add_arguments, run_view)]
