"""What a command of ``python -m grader`` is, for the wings that declare them.

Each wing declares its own commands and their options in its ``commands.py`` (grader/reports,
grader/classroom, grader/authoring, grader/sandbox; the students' tools in grader/student_commands.py),
as :class:`Command` objects in a list ``COMMANDS``; grader/cli.py only assembles them into one parser
and runs the one chosen. Adding a command edits its wing's ``commands.py`` alone.

On the ground floor because every wing's commands share it: the one way to refuse unusable input
(:class:`UsageError`: one line, exit 2) and the checks of paths and numbers every command makes alike.
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn, Sequence


class UsageError(Exception):
    """Unusable command-line input: reported as one line, exit code 2."""


@dataclass(frozen=True)
class Command:
    """One command: its name, its line in ``--help``, its options (declared on the parser it is given)
    and what it runs (the exit code; a :class:`UsageError` for unusable input)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return int(text)


def positive_float(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds, got {text}")
    return value


def share(text: str) -> float:
    """A share, above 0 and at most 1 (a threshold)."""
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text}")
    return value


def points(text: str) -> float:
    """A positive number of points (an LMS assignment's total)."""
    value = _number(text)
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"must be a positive number of points, got {text}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def check_writable(path: Path | None, flag: str) -> None:
    """UsageError unless ``path`` (None: not asked for) can be written: its folder exists, it is no folder."""
    if path is not None and not path.parent.resolve().is_dir():
        raise UsageError(f"{flag} {path}: directory {path.parent} does not exist")
    if path is not None and path.is_dir():
        raise UsageError(f"{flag} {path}: is a directory")


def make_dir(path: Path | None, flag: str) -> None:
    """Create the output folder ``path`` (None: not asked for), readable by this user alone."""
    if path is None:
        return
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{flag} {path}: {err.strerror or err}") from None


def say_warnings_and_outputs(warnings: Sequence[str], outputs: Sequence[Path]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path in outputs:
        print(f"written: {path}", file=sys.stderr)


def stop_on_sigterm() -> None:
    """A batch system's stop (Slurm, CI) ends a long run as Ctrl-C does (KeyboardInterrupt)."""
    signal.signal(signal.SIGTERM, _raise_interrupt)


def _raise_interrupt(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt
