"""The grading wing's options, for every command that grades (``score`` in grader/reports/commands.py;
``score-all`` and ``nbgrader`` in grader/classroom/commands.py): the flags of
:class:`grader.grading.options.GradeOptions`, declared once here and read back by :func:`grade_options`.
The wing has no command of its own: a grading is always reported or recorded by a wing above it."""

from __future__ import annotations

import argparse
import os

from grader.commands import positive_float, positive_int
from grader.grading.gpu_check import GPU_CHOICES
from grader.grading.options import GradeOptions
from grader.sandbox.modes import SANDBOX_CHOICES, SANDBOX_HELP


def add_grading_options(parser: argparse.ArgumentParser, *, for_class: bool) -> None:
    """The flags of GradeOptions. ``for_class``: other people's work (score-all, nbgrader) runs in
    parallel jobs and is never run without isolation unless ``--sandbox none`` says so."""
    defaults = GradeOptions()
    parser.add_argument("--timeout", type=positive_float, default=defaults.call_timeout, metavar="SECONDS",
                        help=f"time limit for each call into the student's code (default: {defaults.call_timeout:g})")
    parser.add_argument("--sandbox", choices=SANDBOX_CHOICES, default="isolated" if for_class else defaults.sandbox,
                        help=SANDBOX_HELP + (" (default: isolated)" if for_class else f" (default: {defaults.sandbox})"))
    parser.add_argument("--gpu", choices=GPU_CHOICES, default=defaults.gpu,
                        help="the GPU-run check: on CUDA when available, else on a simulated GPU (auto); "
                             "require CUDA (or exit 2); simulate even with CUDA; skip it")
    parser.add_argument("--no-public-tests", dest="public_tests", action="store_false",
                        help="do not run the public tests of the modules that failed a hidden test (they only "
                             "flag 'public tests pass, hidden fail'; under a second of CPU a module)")
    if for_class:
        parser.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                            help="parallel jobs (default: the number of cores)")


def grade_options(args: argparse.Namespace) -> GradeOptions:
    return GradeOptions(call_timeout=args.timeout, sandbox=args.sandbox, gpu=args.gpu, public_tests=args.public_tests)
