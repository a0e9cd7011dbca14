"""``python -m grader feedback JSON_DIR --feedback-dir DIR``: the students' feedback files again, from the
JSON reports score-all wrote, at any visibility, without grading anyone.

Why: a feedback file renders the student's JSON report and nothing else (grader/reports/feedback.py), and
score-all writes it only for the students it grades in that run. A resume keeps everyone already graded,
so a new ``--feedback-dir``, or another ``--visibility`` (the scores now, the messages after the deadline),
would otherwise cost a whole regrade. Each ``JSON_DIR/<student>.json`` (score-all's or merge's
``--json-dir``) gives ``DIR/<student>.md``, as score-all writes it.

A file that gives no feedback (unreadable, not JSON, not a report's shape) costs its student only: one
line says why, and the others are written. Error rows have no JSON report (score-all removes it), so
their feedback is score-all's alone. Reports are read without following a link (grader.files.read_regular)
and the feedback is written as score-all writes it (grader.files.write_atomically).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any, Callable

from grader.files import UnreadableFile, read_regular
from grader.reports.feedback import write_feedback
from grader.visibility import check_visibility
from grader.safe_text import printable

REPORT_LIMIT = 64 * 2**20  # bytes of one report file read (a real one is a few hundred KB at most)


class FeedbackInputError(Exception):
    """JSON_DIR is no folder of reports (missing, not a folder, no ``.json`` in it): one line, nothing written."""


@dataclass
class Rewritten:
    written: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per report file that gave no feedback


def report_files(json_dir: Path) -> list[Path]:
    """The ``<student>.json`` files of ``json_dir``, sorted; FeedbackInputError when there are none to read."""
    if not json_dir.exists():
        raise FeedbackInputError(f"{json_dir}: no such directory")
    if not json_dir.is_dir():
        raise FeedbackInputError(f"{json_dir}: not a directory (expected score-all's --json-dir)")
    try:
        files = sorted(p for p in json_dir.iterdir() if p.name.endswith(".json") and not p.name.startswith("."))
    except OSError as err:
        raise FeedbackInputError(f"{json_dir}: {err.strerror or err}") from None
    if not files:
        raise FeedbackInputError(f"{json_dir}: holds no JSON reports (<student>.json, as score-all --json-dir writes)")
    return files


def read_report(path: Path) -> dict[str, Any]:
    """The JSON report in ``path``; ValueError saying in one line why it is none."""
    try:
        data = json.loads(read_regular(path, REPORT_LIMIT).decode("utf-8"))
    except UnreadableFile as err:
        raise ValueError(f"unreadable ({err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"not JSON ({err})") from None
    problem = shape_problem(data)
    if problem is not None:
        raise ValueError(f"not a JSON report ({problem})")
    return data


def shape_problem(data: Any) -> str | None:
    """What keeps ``data`` from being a JSON report the feedback can render (the fields it reads of
    grader.reports.json_report.to_json's shape), or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    parts = {"the report": data, "gpu_check": data.get("gpu_check")}
    exercises = data.get("exercises")
    if not isinstance(exercises, dict):
        return "no 'exercises' object"
    parts.update((f"exercise {ex_id!r}", ex) for ex_id, ex in exercises.items())
    for what, part in parts.items():
        if not isinstance(part, dict):
            return f"{what} is not an object"
        for key in ("score", "max_score"):
            if not isinstance(part.get(key), Real) or isinstance(part.get(key), bool):
                return f"{what} has no number {key!r}"
        if what != "the report" and not isinstance(part.get("status"), str):
            return f"{what} has no 'status'"
    tests = data.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tests):
        return "'tests' is not a list of named tests"
    return None


def rewrite_feedback(files: list[Path], out_dir: Path, visibility: str,
                     shown: Callable[[str], str] = str) -> Rewritten:
    """``out_dir/<student>.md`` at ``visibility`` for each report file of ``files`` (:func:`report_files`),
    the student named ``shown(student)`` (blind grading: their opaque id, grader/blind_ids.py); a file
    that gives none is a line of ``problems``, and the next is written all the same."""
    check_visibility(visibility)
    done = Rewritten()
    for path in files:
        student = path.name.removesuffix(".json")
        try:
            report = read_report(path)
            done.written.append(write_feedback(shown(student), report, out_dir, visibility))
        except (ValueError, OSError) as err:
            done.problems.append(f"{printable(path.name)}: {printable(str(err))}: no feedback for {printable(student)}")
        except (TypeError, KeyError) as err:  # a field of a shape no grader writes (a hand edit, another tool)
            done.problems.append(f"{printable(path.name)}: not a JSON report the feedback can render "
                                 f"({type(err).__name__}: {printable(str(err))}): no feedback for {printable(student)}")
    return done
