"""The authoring wing's commands: what leaves this repository for the students and the graders.

``release OUT`` (the students' repository and the nbgrader course, grader/authoring/release.py),
the Gradescope bundle's options (grader/authoring/gradescope_bundle.py; its command, ``gradescope-bundle OUT.zip``,
is declared in grader/classroom/commands.py, since it checks the instructor's overrides it bundles) and, for
maintainers, ``dev check`` (grader/authoring/dev_check.py; docs/maintainers.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.authoring import dev_check
from grader.authoring.gradescope_bundle import BUNDLE_VISIBILITY, build_bundle
from grader.authoring.release import ReleaseError, build_release
from grader.commands import Command, UsageError, check_writable
from grader.visibility import add_visibility_option


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="a new (or empty) folder")


def run_release(args: argparse.Namespace) -> int:
    if not args.out.resolve().parent.is_dir():
        raise UsageError(f"release {args.out}: directory {args.out.parent} does not exist")
    try:
        build_release(args.out)
    except ReleaseError as err:
        raise UsageError(str(err)) from None
    print(f"student release: {args.out / 'student'}; nbgrader course: {args.out / 'nbgrader'}", file=sys.stderr)
    return 0


def add_bundle_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, metavar="OUT.zip")
    add_visibility_option(parser, default=BUNDLE_VISIBILITY)


def run_gradescope_bundle(args: argparse.Namespace, overrides: bytes | None = None) -> int:
    """``gradescope-bundle``: ``overrides``, the text of a checked overrides file to bundle."""
    if args.out.suffix != ".zip":
        raise UsageError(f"{args.out}: the bundle must be a .zip file")
    check_writable(args.out, "gradescope-bundle")
    build_bundle(args.out, visibility=args.visibility, overrides=overrides)
    print(f"Gradescope autograder: {args.out}", file=sys.stderr)
    return 0


COMMANDS = [
    Command("release", "write the student release and an nbgrader course to OUT", add_release_arguments, run_release),
    Command("dev", dev_check.HELP, dev_check.add_arguments, dev_check.run),  # maintainers: docs/maintainers.md
]
