"""The command line: ``python -m grader COMMAND ...`` (``attention-kata COMMAND ...``), every command's
arguments and the code that turns them into a call of the grader and one line per outcome.

Instructors: ``score`` (one submission), ``score-all`` (a class, into a CSV), ``merge`` (the CSVs of
``score-all --shard`` runs), ``feedback`` (the feedback files again, from score-all's JSON reports),
``nbgrader`` (an nbgrader course's notebooks), ``release`` (the students' repository and the nbgrader
course), ``gradescope-bundle``, ``isolation`` (which isolation grading gets here). Maintainers: ``dev check`` (what an exercise of the rubric still lacks). Students: ``check`` (their progress) and ``view`` (their attention weights), the standard library
only at import (grader/progress.py, grader/attention_view.py).

Exit codes: 0 grading completed (whatever the score); 2 unusable command-line input (one line on
stderr, no traceback); 1 an internal error of the grader itself (one line; KATA_DEBUG=1 shows it all).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from grader import attention_view, progress
from grader.authoring.gradescope_bundle import build_bundle
from grader.authoring.release import ReleaseError, build_release
from grader.classroom.gradebook import GradebookError
from grader.classroom.grades_sheet import unescaped
from grader.classroom.merge import MergeError, merge
from grader.classroom.nbgrader_course import CourseError, check_gradebook, find_course, grade_course, prepare_work_dir
from grader.classroom.roster import parse_shard
from grader.classroom.score_all import BatchError, BatchOptions, score_all
from grader.files import private_files
from grader.grading.gpu_check import GPU_CHOICES, GpuUnavailable
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.intake import SubmissionError
from grader.reports.feedback import write_feedback
from grader.reports.feedback_from_json import FeedbackInputError, report_files, rewrite_feedback
from grader.reports.formats import FORMATS, render
from grader.reports.json_report import dumps, to_json
from grader.reports.visibility import VISIBILITIES
from grader.rubric import GROUPS, SOLUTIONS_DIR, load_rubric
from grader.authoring import dev_check
from grader.sandbox.modes import SANDBOX_CHOICES, SANDBOX_HELP, SandboxUnavailable, choose_isolation

PROG = "attention-kata"
NBGRADER_HELP = "grade an nbgrader course's submitted notebooks with the isolated grader (instead of nbgrader autograde)"


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
    score.add_argument("--format", choices=tuple(FORMATS), default="text",
                       help="what to print on stdout (default: text)")
    add_grading_options(score, for_class=False)
    add_feedback_options(score, "also write the student's feedback (Markdown) to DIR/<submission name>.md")

    batch = commands.add_parser("score-all", help="grade every subfolder or .zip of SUBMISSIONS into a CSV")
    batch.add_argument("submissions", type=Path, help="a folder holding one subfolder or .zip per student")
    batch.add_argument("--csv", type=Path, required=True, metavar="GRADES.csv",
                       help="the CSV to write, sorted by student; an existing one is resumed: its rows stay unless the "
                            "student's submission changed, the row is an error, or --only names them")
    batch.add_argument("--json-dir", type=Path, metavar="DIR",
                       help="also write each student's JSON report to DIR/<student>.json (DIR is created)")
    batch.add_argument("--force", action="store_true", help="grade everyone again and write the CSV anew")
    batch.add_argument("--only", nargs="+", metavar="NAME", help="grade (again) these students only; the other rows stay")
    batch.add_argument("--shard", metavar="K/N", help="grade the K-th of N disjoint slices of the class (by a hash of "
                                                      "the student's name); python -m grader merge joins the shards")
    add_grading_options(batch, for_class=True)
    add_feedback_options(batch, "also write each graded student's feedback (Markdown) to DIR (created)")
    add_gradebook_options(batch, "record the scores in this nbgrader gradebook (sqlite file)")

    merge = commands.add_parser("merge", help="join the CSVs (and JSON reports) of score-all --shard runs into one")
    merge.add_argument("out", type=Path, metavar="OUT.csv", help="the CSV to write: what one run would have written")
    merge.add_argument("shards", type=Path, nargs="+", metavar="SHARD.csv", help="the shards' CSVs")
    merge.add_argument("--json-dir", type=Path, metavar="DIR", help="write each graded student's JSON report to DIR (created)")
    merge.add_argument("--from-json-dirs", type=Path, nargs="+", metavar="D",
                       help="the shards' --json-dir folders (with --json-dir), searched for each student's report")
    add_gradebook_options(merge, "record every row in this nbgrader gradebook")

    feedback = commands.add_parser("feedback", help="write the students' feedback files again from score-all's JSON "
                                                    "reports, at any --visibility (nobody is graded)")
    feedback.add_argument("json_dir", type=Path, metavar="JSON_DIR",
                          help="score-all's (or merge's) --json-dir: one <student>.json per graded student")
    add_feedback_options(feedback, "write each student's feedback (Markdown) to DIR/<student>.md (created)",
                         required=True)

    release = commands.add_parser("release", help="write the student release and an nbgrader course to OUT")
    release.add_argument("out", type=Path, help="a new (or empty) folder")

    isolation = commands.add_parser("isolation", help="say which isolation grading gets here (exit 2: none possible)")
    isolation.add_argument("--sandbox", choices=SANDBOX_CHOICES, default="isolated", help=SANDBOX_HELP)

    bundle = commands.add_parser("gradescope-bundle", help="write a Gradescope autograder zip")
    bundle.add_argument("out", type=Path, metavar="OUT.zip")
    bundle.add_argument("--visibility", choices=VISIBILITIES, default="full", help=VISIBILITY_HELP)

    progress.add_arguments(commands.add_parser("check", help=progress.HELP))
    attention_view.add_arguments(commands.add_parser("view", help=attention_view.HELP))
    dev_check.add_arguments(commands.add_parser("dev", help=dev_check.HELP))  # maintainers: docs/maintainers.md

    nbgrader = commands.add_parser("nbgrader", help=NBGRADER_HELP)  # Jupyter classes: docs/nbgrader.md
    nbgrader.add_argument("course", type=Path, metavar="COURSE_DIR",
                          help="an nbgrader course folder (gradebook.db, submitted/<student>/<assignment>/)")
    nbgrader.add_argument("--assignment", metavar="NAME", choices=GROUPS,
                          help="grade this assignment only (default: every assignment with submissions)")
    add_grading_options(nbgrader, for_class=True)
    nbgrader.add_argument("--visibility", choices=VISIBILITIES, default="full", help=VISIBILITY_HELP)
    return parser


VISIBILITY_HELP = ("what students see of the hidden tests in feedback and Gradescope results: full messages, messages "
                   "without the tests' inputs and values, or scores only (default: full; docs/instructor-reports.md)")


def add_grading_options(parser: argparse.ArgumentParser, *, for_class: bool) -> None:
    """The flags of :class:`grader.grading.options.GradeOptions`, for every command that grades; read them back
    with :func:`grade_options`. ``for_class``: other people's work (score-all, nbgrader) runs in
    parallel jobs and is never run without isolation unless ``--sandbox none`` says so."""
    defaults = GradeOptions()
    parser.add_argument("--timeout", type=_positive_float, default=defaults.call_timeout, metavar="SECONDS",
                        help=f"time limit for each call into the student's code (default: {defaults.call_timeout:g})")
    parser.add_argument("--sandbox", choices=SANDBOX_CHOICES, default="isolated" if for_class else defaults.sandbox,
                        help=SANDBOX_HELP + (" (default: isolated)" if for_class else f" (default: {defaults.sandbox})"))
    parser.add_argument("--gpu", choices=GPU_CHOICES, default=defaults.gpu,
                        help="the GPU-run check: on CUDA when available, else on a simulated GPU (auto); "
                             "require CUDA (or exit 2); simulate even with CUDA; skip it")
    if for_class:
        parser.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                            help="parallel jobs (default: the number of cores)")


def grade_options(args: argparse.Namespace) -> GradeOptions:
    return GradeOptions(call_timeout=args.timeout, sandbox=args.sandbox, gpu=args.gpu)


def add_feedback_options(parser: argparse.ArgumentParser, where: str, required: bool = False) -> None:
    parser.add_argument("--feedback-dir", type=Path, metavar="DIR", required=required, help=where)
    parser.add_argument("--visibility", choices=VISIBILITIES, default="full", help=VISIBILITY_HELP)


def add_gradebook_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--gradebook", type=Path, metavar="DB", help=what)
    parser.add_argument("--assignment", metavar="NAME", help="the nbgrader assignment name (with --gradebook)")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return int(text)


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
    _check_writable(args.json, "--json")
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


def cmd_score_all(args: argparse.Namespace) -> int:
    if not args.submissions.is_dir():
        raise UsageError(f"{args.submissions}: not a directory")
    _check_writable(args.csv, "--csv")
    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
    except ValueError as err:
        raise UsageError(str(err)) from None
    _check_gradebook(args)
    check_class_isolation(args.sandbox, args.submissions)  # refuse before grading anyone
    _make_dir(args.json_dir, "--json-dir")
    _make_dir(args.feedback_dir, "--feedback-dir")
    options = BatchOptions(jobs=args.jobs, grading=grade_options(args), force=args.force, json_dir=args.json_dir,
                           only=frozenset(args.only) if args.only else None, shard=shard,
                           feedback_dir=args.feedback_dir, visibility=args.visibility,
                           gradebook=args.gradebook, assignment=args.assignment)
    signal.signal(signal.SIGTERM, _raise_interrupt)  # a batch system's stop (Slurm, CI) ends the run as Ctrl-C does
    try:  # both refuse before anyone is graded
        summary = score_all(args.submissions, args.csv, options,
                            progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    except (BatchError, GradebookError) as err:
        raise UsageError(str(err)) from None
    _say_warnings_and_outputs(summary.warnings, summary.outputs)
    print(f"graded {len(summary.graded)}, errors {len(summary.errors)}, already in {args.csv}: {len(summary.skipped)}",
          file=sys.stderr)
    return 0


def check_class_isolation(sandbox: str, folder: Path) -> None:
    """Refuse (UsageError) to grade a class in ``folder`` without the isolation ``sandbox`` asks for,
    or under uid isolation when other users can read the folder."""
    try:
        isolation = choose_isolation(sandbox, for_class=True)
    except SandboxUnavailable as err:
        raise UsageError(str(err)) from None
    if isolation.mode.shares_the_machine and folder.resolve().stat().st_mode & 0o005:
        # Without a mount namespace, every student's code could read the others' submissions.
        raise UsageError(f"{folder}: readable by other users, so by the students' code under uid "
                         f"isolation; run chmod o-rwx {folder} first")


def _check_gradebook(args: argparse.Namespace) -> None:
    if (args.gradebook is None) != (args.assignment is None):
        raise UsageError("--gradebook and --assignment go together")
    if args.gradebook is not None:
        _check_writable(args.gradebook, "--gradebook")


def _say_warnings_and_outputs(warnings: Sequence[str], outputs: Sequence[Path]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path in outputs:
        print(f"summary: {path}", file=sys.stderr)


def _raise_interrupt(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


def _make_dir(path: Path | None, flag: str) -> None:
    if path is None:
        return
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)  # outputs readable by this user alone
    except OSError as err:
        raise UsageError(f"{flag} {path}: {err.strerror or err}") from None


def cmd_merge(args: argparse.Namespace) -> int:
    _check_writable(args.out, "merge")
    if (args.json_dir is None) != (args.from_json_dirs is None):
        raise UsageError("--json-dir and --from-json-dirs go together")
    _check_gradebook(args)
    _make_dir(args.json_dir, "--json-dir")
    try:
        result = merge(args.out, args.shards, json_dir=args.json_dir, from_json_dirs=args.from_json_dirs or [],
                       gradebook=args.gradebook, assignment=args.assignment)
    except (MergeError, GradebookError) as err:
        raise UsageError(str(err)) from None
    _say_warnings_and_outputs(result.warnings, result.outputs)
    print(f"merged {result.rows} rows from {len(args.shards)} shards into {args.out}", file=sys.stderr)
    return 0


def cmd_feedback(args: argparse.Namespace) -> int:
    """The feedback files again from the JSON reports (grader/reports/feedback_from_json.py): a report that
    gives none is a warning, the others are written; nothing written at all is one line and exit 2."""
    try:
        files = report_files(args.json_dir)  # refuse before creating anything
    except FeedbackInputError as err:
        raise UsageError(str(err)) from None
    _make_dir(args.feedback_dir, "--feedback-dir")
    with private_files():  # other people's feedback: readable by this user alone, as score-all's
        done = rewrite_feedback(files, args.feedback_dir, args.visibility)
    if not done.written:
        why = done.problems[0] if len(files) == 1 else f"none of {len(files)} JSON files gave one ({done.problems[0]}; …)"
        raise UsageError(f"no feedback file written to {args.feedback_dir}: {why}")
    _say_warnings_and_outputs(done.problems, [])
    failed = len(done.problems)
    print(f"feedback ({args.visibility}): {len(done.written)} files written to {args.feedback_dir}"
          + (f"; {failed} JSON file{'s' if failed > 1 else ''} gave none (above)" if failed else ""), file=sys.stderr)
    return 0


def cmd_isolation(args: argparse.Namespace) -> int:
    try:
        isolation = choose_isolation(args.sandbox, for_class=True, protect=False)  # a question: nothing changes
    except SandboxUnavailable as err:
        raise UsageError(str(err)) from None
    print(isolation.mode.name)
    for warning in isolation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    if not args.out.resolve().parent.is_dir():
        raise UsageError(f"release {args.out}: directory {args.out.parent} does not exist")
    try:
        build_release(args.out)
    except ReleaseError as err:
        raise UsageError(str(err)) from None
    print(f"student release: {args.out / 'student'}; nbgrader course: {args.out / 'nbgrader'}", file=sys.stderr)
    return 0


def cmd_gradescope_bundle(args: argparse.Namespace) -> int:
    if args.out.suffix != ".zip":
        raise UsageError(f"{args.out}: the bundle must be a .zip file")
    _check_writable(args.out, "gradescope-bundle")
    build_bundle(args.out, visibility=args.visibility)
    print(f"Gradescope autograder: {args.out}", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    modules = progress.load_modules([(ex.group, ex.module) for ex in load_rubric().exercises.values()])
    try:
        return progress.run_command(args, modules)
    except progress.ProgressError as err:
        raise UsageError(str(err)) from None


def cmd_view(args: argparse.Namespace) -> int:
    try:
        return attention_view.run_command(args, reference=SOLUTIONS_DIR)
    except attention_view.ViewError as err:
        raise UsageError(str(err)) from None


def cmd_nbgrader(args: argparse.Namespace) -> int:
    """Stage, grade, record and write the feedback of an nbgrader course (grader/classroom/nbgrader_course.py)."""
    try:
        course = find_course(args.course, args.assignment)
        # Refuse before anything is written, and before the gradebook is read (nbgrader takes 2 s to
        # import). Under uid isolation (no mount namespace) a student's code could otherwise read the
        # course: the other students' notebooks, and the solutions in source/.
        check_class_isolation(args.sandbox, course.root)
        check_gradebook(course)
        prepare_work_dir(course)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        summary = grade_course(course, BatchOptions(jobs=args.jobs, grading=grade_options(args)), args.visibility,
                               progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    except CourseError as err:
        raise UsageError(str(err)) from None
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for assignment in course.assignments:
        results = [r for r in summary.results if r.assignment == assignment]
        errors = [r for r in results if r.report is None]
        graded = [r for r in results if r.report is not None and r.this_run]
        print(f"{assignment}: graded {len(graded)}, errors {len(errors)}, "
              f"unchanged since an earlier run: {len(results) - len(graded) - len(errors)}", file=sys.stderr)
        for result in errors:
            print(f"  {result.student}: {unescaped(result.row['message'])}", file=sys.stderr)
    print(f"grades in {course.gradebook} (nbgrader export), feedback in {course.root / 'feedback'} "
          "(nbgrader release_feedback)", file=sys.stderr)
    return 0


COMMANDS = {"score": cmd_score, "score-all": cmd_score_all, "merge": cmd_merge, "feedback": cmd_feedback,
            "release": cmd_release, "gradescope-bundle": cmd_gradescope_bundle, "isolation": cmd_isolation,
            "check": cmd_check, "view": cmd_view, "nbgrader": cmd_nbgrader, "dev": dev_check.run}


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
