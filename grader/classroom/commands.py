"""The classroom wing's commands: ``score-all`` (a class into the grades CSV), ``merge`` (the CSVs of
``score-all --shard`` runs), ``rescore`` (the CSV again from the JSON reports, under the rubric now),
``nbgrader`` (an nbgrader course's notebooks), ``similarity`` (a class's near-copies), ``export`` (the CSV
as an LMS's import file), ``gradescope-bundle`` and ``gradescope-results`` (the Gradescope autograder, with
the instructor's overrides: grader/classroom/gradescope_overrides.py); and the refusal every class grading shares
(:func:`check_class_isolation`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from grader.blind_ids import add_blind_option, blind_ids
from grader.classroom import gradescope_overrides as gradescope
from grader.classroom.gradebook import GradebookError
from grader.classroom.late_policy import LatePolicy, LatePolicyError, read_late_policy
from grader.classroom.merge import MergeError, merge
from grader.classroom.nbgrader_course import CourseError, check_gradebook, find_course, grade_course, prepare_work_dir
from grader.classroom.overrides import OverrideError, Overrides, read_overrides
from grader.classroom.rescore import RescoreError, rescore_class
from grader.classroom.lms_export import DEFAULT_ASSIGNMENT, FORMATS, ExportError, ExportOptions, export
from grader.classroom.roster import list_students, parse_shard
from grader.classroom.score_all import BatchError, BatchOptions, score_all
from grader.classroom.similarity import THRESHOLD
from grader.classroom.similarity_report import compare_class, write_report
from grader.commands import (Command, UsageError, check_writable, make_dir, points, say_warnings_and_outputs, share,
                             stop_on_sigterm)
from grader.grading.commands import add_grading_options, grade_options
from grader.reports.commands import add_feedback_options
from grader.files import private_files
from grader.rubric import GROUPS
from grader.safe_text import escape_line, printable
from grader.sandbox.modes import SandboxUnavailable, choose_isolation
from grader.visibility import add_visibility_option


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


def add_gradebook_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--gradebook", type=Path, metavar="DB", help=what)
    parser.add_argument("--assignment", metavar="NAME", help="the nbgrader assignment name (with --gradebook)")


def _check_gradebook(args: argparse.Namespace) -> None:
    if (args.gradebook is None) != (args.assignment is None):
        raise UsageError("--gradebook and --assignment go together")
    check_writable(args.gradebook, "--gradebook")


# --- overrides (grader/classroom/overrides.py): score-all, merge and rescore take them ---------------------


def add_overrides_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--overrides", type=Path, metavar="FILE",
                        help="apply the instructor's overrides of FILE (student, exercise or total, points or +/-change, "
                             "reason, who) to the grades, at the end of the run; give it to every run")


def add_late_policy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--late-policy", type=Path, metavar="FILE",
                        help="apply the late policy of FILE (JSON: due date, extensions, penalty rule, grace, cutoff; "
                             "docs/class-grading.md, Late submissions) at the end of the run, before the overrides")


def _read_given(path: Path | None, read: Callable[[Path], Any], error: type[Exception]) -> Any:
    """``read(path)`` of a file option (None: not given); its ``error`` becomes the command's one-line refusal."""
    try:
        return None if path is None else read(path)
    except error as err:
        raise UsageError(str(err)) from None


def _overrides(args: argparse.Namespace) -> Overrides | None:
    return _read_given(args.overrides, read_overrides, OverrideError)


def _late_policy(args: argparse.Namespace) -> LatePolicy | None:
    return _read_given(args.late_policy, read_late_policy, LatePolicyError)


def add_score_all_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", type=Path, help="a folder holding one subfolder or .zip per student")
    parser.add_argument("--csv", type=Path, required=True, metavar="GRADES.csv",
                        help="the CSV to write, sorted by student; an existing one is resumed: its rows stay unless the "
                             "student's submission changed, the row is an error, or --only names them; rows graded under "
                             "another rubric, hidden tests, grader, torch or grading options are refused (exit 2), "
                             "see --regrade-stale; one run at a time (a lock beside the CSV)")
    parser.add_argument("--json-dir", type=Path, metavar="DIR",
                        help="also write each student's JSON report to DIR/<student>.json (DIR is created)")
    parser.add_argument("--force", action="store_true", help="grade everyone again and write the CSV anew")
    parser.add_argument("--regrade-stale", action="store_true",
                        help="grade again the rows graded under another rubric, hidden tests, grader, torch or grading "
                             "options (instead of refusing them), so that the CSV holds one grading")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="grade (again) these students only; the other rows stay")
    parser.add_argument("--shard", metavar="K/N", help="grade the K-th of N disjoint slices of the class (by a hash of "
                                                       "the student's name); python -m grader merge joins the shards")
    add_grading_options(parser, for_class=True)
    add_feedback_options(parser, "also write each graded student's feedback (Markdown) to DIR (created)")
    add_gradebook_options(parser, "record the scores in this nbgrader gradebook (sqlite file)")
    add_blind_option(parser, "the feedback and the summary name")
    add_overrides_option(parser)
    add_late_policy_option(parser)


def run_score_all(args: argparse.Namespace) -> int:
    if not args.submissions.is_dir():
        raise UsageError(f"{args.submissions}: not a directory")
    check_writable(args.csv, "--csv")
    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
    except ValueError as err:
        raise UsageError(str(err)) from None
    _check_gradebook(args)
    late_policy = _late_policy(args)
    check_class_isolation(args.sandbox, args.submissions)  # refuse before grading anyone
    make_dir(args.json_dir, "--json-dir")
    make_dir(args.feedback_dir, "--feedback-dir")
    options = BatchOptions(jobs=args.jobs, grading=grade_options(args), force=args.force, json_dir=args.json_dir,
                           only=frozenset(args.only) if args.only else None, shard=shard,
                           feedback_dir=args.feedback_dir, visibility=args.visibility,
                           gradebook=args.gradebook, assignment=args.assignment, regrade_stale=args.regrade_stale,
                           blind=blind_ids(args),
                           overrides=_overrides(args), late_policy=late_policy)
    stop_on_sigterm()
    try:  # both refuse before anyone is graded
        summary = score_all(args.submissions, args.csv, options,
                            progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    except (BatchError, GradebookError) as err:
        raise UsageError(str(err)) from None
    say_warnings_and_outputs(summary.warnings, summary.outputs)
    print(f"graded {len(summary.graded)}, errors {len(summary.errors)}, already in {args.csv}: {len(summary.skipped)}",
          file=sys.stderr)
    return 0


def add_merge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, metavar="OUT.csv", help="the CSV to write: what one run would have written")
    parser.add_argument("shards", type=Path, nargs="+", metavar="SHARD.csv", help="the shards' CSVs")
    parser.add_argument("--json-dir", type=Path, metavar="DIR", help="write each graded student's JSON report to DIR (created)")
    parser.add_argument("--from-json-dirs", type=Path, nargs="+", metavar="D",
                        help="the shards' --json-dir folders (with --json-dir), searched for each student's report")
    add_gradebook_options(parser, "record every row in this nbgrader gradebook")
    add_blind_option(parser, "the summary names")
    add_overrides_option(parser)
    add_late_policy_option(parser)


def run_merge(args: argparse.Namespace) -> int:
    check_writable(args.out, "merge")
    if (args.json_dir is None) != (args.from_json_dirs is None):
        raise UsageError("--json-dir and --from-json-dirs go together")
    _check_gradebook(args)
    make_dir(args.json_dir, "--json-dir")
    try:
        result = merge(args.out, args.shards, json_dir=args.json_dir, from_json_dirs=args.from_json_dirs or [],
                       gradebook=args.gradebook, assignment=args.assignment, blind=blind_ids(args),
                       overrides=_overrides(args), late_policy=_late_policy(args))
    except (MergeError, GradebookError) as err:
        raise UsageError(str(err)) from None
    say_warnings_and_outputs(result.warnings, result.outputs)
    print(f"merged {result.rows} rows from {len(args.shards)} shards into {args.out}", file=sys.stderr)
    return 0


def add_rescore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("json_dir", type=Path, metavar="JSON_DIR", help="score-all's (or merge's) --json-dir")
    parser.add_argument("--csv", type=Path, required=True, metavar="GRADES.csv",
                        help="the CSV to write (by default the one whose rows are rescored)")
    parser.add_argument("--from", dest="source", type=Path, metavar="OLD.csv",
                        help="rescore the rows of this CSV instead (the one the reports were graded into)")
    add_overrides_option(parser)
    add_late_policy_option(parser)
    add_feedback_options(parser, "also write each graded student's feedback, rescored, to DIR (created)")
    add_blind_option(parser, "the feedback and the summary name")


def run_rescore(args: argparse.Namespace) -> int:
    """Every grade again from the stored JSON reports under tests/rubric.json now (grader/classroom/rescore.py)."""
    check_writable(args.csv, "--csv")
    if not args.json_dir.is_dir():
        raise UsageError(f"{args.json_dir}: not a directory (expected score-all's --json-dir)")
    make_dir(args.feedback_dir, "--feedback-dir")
    try:
        result = rescore_class(args.json_dir, args.csv, source=args.source, overrides=_overrides(args),
                               feedback_dir=args.feedback_dir, visibility=args.visibility,
                               late_policy=_late_policy(args), blind=blind_ids(args))
    except RescoreError as err:
        raise UsageError(str(err)) from None
    say_warnings_and_outputs(result.warnings, result.outputs)
    print(f"rescored {len(result.rows)} rows into {args.csv}", file=sys.stderr)
    return 0


def add_nbgrader_arguments(parser: argparse.ArgumentParser) -> None:  # Jupyter classes: docs/nbgrader.md
    parser.add_argument("course", type=Path, metavar="COURSE_DIR",
                        help="an nbgrader course folder (gradebook.db, submitted/<student>/<assignment>/)")
    parser.add_argument("--assignment", metavar="NAME", choices=GROUPS,
                        help="grade this assignment only (default: every assignment with submissions)")
    add_grading_options(parser, for_class=True)
    add_visibility_option(parser)
    add_late_policy_option(parser)


def run_nbgrader(args: argparse.Namespace) -> int:
    """Stage, grade, record and write the feedback of an nbgrader course (grader/classroom/nbgrader_course.py)."""
    try:
        course = find_course(args.course, args.assignment)
        policy = _late_policy(args)
        if policy is not None and len(course.assignments) > 1:
            raise UsageError(f"--late-policy holds one due date: give --assignment too ({', '.join(course.assignments)} "
                             "have submissions)")
        # Refuse before anything is written, and before the gradebook is read (nbgrader takes 2 s to
        # import). Under uid isolation (no mount namespace) a student's code could otherwise read the
        # course: the other students' notebooks, and the solutions in source/.
        check_class_isolation(args.sandbox, course.root)
        check_gradebook(course)
        prepare_work_dir(course)
        stop_on_sigterm()
        # The course's own grading folder: a row graded under another rubric or grader is graded again
        # (a warning says so), never kept beside the others; the gradebook is the course's record.
        summary = grade_course(course, BatchOptions(jobs=args.jobs, grading=grade_options(args), regrade_stale=True,
                                                    late_policy=policy),
                               args.visibility, progress=lambda p: print(p.line(), file=sys.stderr, flush=True))
    except (CourseError, BatchError) as err:
        raise UsageError(str(err)) from None
    say_warnings_and_outputs(summary.warnings, summary.outputs)
    for assignment in course.assignments:
        results = [r for r in summary.results if r.assignment == assignment]
        errors = [r for r in results if r.report is None]
        graded = [r for r in results if r.report is not None and r.this_run]
        print(f"{assignment}: graded {len(graded)}, errors {len(errors)}, "
              f"unchanged since an earlier run: {len(results) - len(graded) - len(errors)}", file=sys.stderr)
        for result in errors:
            print(f"  {result.student}: {result.row['message']}", file=sys.stderr)
    print(f"grades in {course.gradebook} (nbgrader export), feedback in {course.root / 'feedback'} "
          "(nbgrader release_feedback)", file=sys.stderr)
    return 0


def add_similarity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("submissions", type=Path, help="a folder holding one subfolder or .zip per student (as score-all)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="write similarity.md (each pair's matching lines) and similarity.csv to DIR (created)")
    parser.add_argument("--threshold", type=share, default=THRESHOLD, metavar="SHARE",
                        help=f"report a pair from this share of the smaller submission's fingerprints on "
                             f"(default {THRESHOLD})")


def run_similarity(args: argparse.Namespace) -> int:
    """``python -m grader similarity SUBS --out DIR``: nothing of the students' is imported or run."""
    if not args.submissions.is_dir():
        raise UsageError(f"{escape_line(str(args.submissions))}: not a directory")
    make_dir(args.out, "--out")
    students, warnings = list_students(args.submissions)
    with private_files():
        result = compare_class(students, args.threshold)
        written = write_report(result, args.out / "similarity.md", args.submissions.name)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(f"similar pairs: {result.count} ({result.students} submissions compared): {written[0]} ({written[1].name})",
          file=sys.stderr)
    return 0


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
    parser.add_argument("--points", type=points, metavar="P",
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


NBGRADER_HELP = "grade an nbgrader course's submitted notebooks with the isolated grader (instead of nbgrader autograde)"
COMMANDS = [
    Command("score-all", "grade every subfolder or .zip of SUBMISSIONS into a CSV", add_score_all_arguments, run_score_all),
    Command("merge", "join the CSVs (and JSON reports) of score-all --shard runs into one", add_merge_arguments, run_merge),
    Command("rescore", "recompute every grade of a score-all CSV from its JSON reports under the rubric now, running "
                       "no code", add_rescore_arguments, run_rescore),
    Command("nbgrader", NBGRADER_HELP, add_nbgrader_arguments, run_nbgrader),
    Command("similarity", "report the pairs of submissions whose code for a module is alike beyond the book and "
                          "the stub", add_similarity_arguments, run_similarity),
    Command("export", "write a grades CSV as Canvas's or Moodle's grade import file, or nbgrader's student list",
            add_export_arguments, run_export),
    # Gradescope (grader/classroom/gradescope_overrides.py): here, not in grader/authoring/, for the overrides
    Command("gradescope-bundle", "write a Gradescope autograder zip", gradescope.add_bundle_arguments,
            gradescope.run_bundle),
    Command("gradescope-results", "render a JSON report as Gradescope's results.json with the instructor's overrides "
                                  "of its submitters applied (run_autograder runs it)", gradescope.add_results_arguments,
            gradescope.run_results),
]
