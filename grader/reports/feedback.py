"""One readable Markdown file per student: the scores, the failing hidden tests, the GPU-run check.

    write_feedback("alice", report, Path("feedback"), "messages")   # -> feedback/alice.md

``report`` is the JSON report (grader.reports.json_report.to_json). The file holds nothing the report does
not already hold, and at ``visibility``:

- ``full``: every failing test with its whole message (wrapped at 100 columns), in at most 20 lines, the
  same failure in several tests of an exercise said once (grader/reports/repeats.py);
- ``messages``: every failing test with its message redacted by grader.visibility.redact (no inputs
  of the hidden tests, no tensor values, no decimal numbers but the largest difference and tolerance);
- ``scores``: the scores and statuses of the exercises and of the failing tests, no message.

At every visibility:

- the documents are named as students know them (``[001 In[818]]`` -> ``[notebook_causal_self_attention.txt,
  In [818]]``, grader.reports.sources), in test names and messages alike;
- an exercise whose every test raised a stub's ``NotImplementedError`` (or ``ModuleNotFoundError`` for a
  module not handed in) is one line under "Not started" (``causal_attention: not started (...)``), not a
  failing test per line: a student who handed in the stubs reads one line per module, not a hundred
  copies of "not written yet";
- a submission that could not be graded at all (score-all's error row) gets a file that says why
  (:func:`write_error_feedback`), not silence.

Student names are untrusted: the file name is the name itself only when it is plain
(``[A-Za-z0-9][A-Za-z0-9._-]*``, at most 100 characters), else a cleaned name plus a hash of the real
one; it is written directly in ``out_dir`` (grader.files.write_atomically: a symlink planted there is
replaced, never written through).

Control characters, terminal escapes and bidi overrides of messages and names are shown escaped
(grader.safe_text), in the sections and again in the whole Markdown text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from grader.files import write_atomically
from grader.reports.json_report import says_only_passed, stopped_at
from grader.reports.repeats import SAME, said_once
from grader.reports.sources import readable_sources
from grader.visibility import check_visibility, gpu_line, redact, status_words, wrap
from grader.safe_text import escape_controls

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
def feedback_filename(student: str) -> str:
    """The file name of ``student``'s feedback: ``<student>.md`` when the name is plain, else
    ``<cleaned>-<8 hex of sha256>.md`` (no separators, no leading dot, never ``..``)."""
    if _PLAIN_NAME.fullmatch(student) and ".." not in student:
        return f"{student}.md"
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", student).strip("._-")[:60] or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned.replace('..', '_')}-{digest}.md"


@dataclass(frozen=True)
class FailingTest:
    name: str  # the test's own name, without its exercise
    score: float
    max_score: float
    message: str  # at the visibility asked for ("" under scores)


@dataclass(frozen=True)
class Section:
    """One exercise that has something to say: what students see of it at a visibility."""

    exercise: str
    score: float
    max_score: float
    status: str
    summary: str  # the exercise's message without its first failure, redacted ("" under scores)
    failing: list[FailingTest]
    not_started: bool = False  # every test stopped at a stub or a missing module: ``summary`` says so in one line


def sections(report: dict[str, Any], visibility: str) -> list[Section]:
    """The exercises of ``report`` with something to say (a failing test, or a message that is not
    "all ... passed": a re-graded exercise keeps its section, its message says why), as students may
    see them at ``visibility``. The Markdown here and the nbgrader course's HTML
    (grader/reports/nbgrader_feedback.py) both render these."""
    check_visibility(visibility)
    tests = report.get("tests", [])
    modules = {ex_id.rsplit("/", 1)[-1] for ex_id in report["exercises"]}
    found = []
    for ex_id, ex in report["exercises"].items():
        own = [t for t in tests if t["name"] == ex_id or t["name"].startswith(ex_id + ": ")]
        failing = [t for t in own if t.get("status") == "failed"]
        if not failing and says_only_passed(ex):
            continue
        unstarted = not_started_line(ex_id, own, modules)
        if unstarted is not None:
            found.append(Section(ex_id, ex["score"], ex["max_score"], ex["status"], unstarted, [], True))
            continue
        summary = _shown(str(ex.get("message", ""))).split("; first:", 1)[0]
        names = [_shown(t["name"].split(": ", 1)[-1]) for t in failing]
        messages = said_once([(name, wrap(redact(_shown(str(t.get("output", ""))), visibility)))
                              for name, t in zip(names, failing)])
        found.append(Section(ex_id, ex["score"], ex["max_score"], ex["status"],
                             redact(summary, visibility) if visibility != "scores" and summary else "",
                             [FailingTest(name, t.get("score", 0), t.get("max_score", 0), message)
                              for name, t, message in zip(names, failing, messages)]))
    return found


def not_started_line(ex_id: str, tests: list[dict[str, Any]], modules: set[str]) -> str | None:
    """One line for an exercise that was not started (json_report.stopped_at: its tests stopped at a stub, or
    at a module not handed in, ``modules`` being the kata's), else None; when that module is another one the
    exercise builds on, the line says which."""
    module = ex_id.rsplit("/", 1)[-1]
    found = stopped_at(ex_id, tests, modules)
    if found is None:
        return None
    stubs, missing = found
    if module in stubs:
        return f"{module}: not started (every test raised NotImplementedError from the stub)"
    if module in missing:
        return f"{module}: not handed in (every test raised ModuleNotFoundError: No module named '{module}')"
    cause = ("NotImplementedError from its stub" if not missing else "ModuleNotFoundError for its file" if not stubs
             else "NotImplementedError or ModuleNotFoundError")
    return f"{module}: waits for {', '.join(sorted(stubs | missing))} (every test raised {cause})"


def feedback_text(student: str, report: dict[str, Any], visibility: str, notes: Sequence[str] = ()) -> str:
    """The Markdown feedback for one student (see the module docstring). ``notes``: lines shown under the
    total (the instructor's overrides: grader/classroom/overrides.py)."""
    found = sections(report, visibility)
    lines = [*_title(student), f"**Total: {report['score']:g} / {report['max_score']:g}**", "",
             *(line for note in notes for line in (_inline(note), "")),
             "| exercise | score | status |", "| --- | ---: | --- |"]
    for ex_id, ex in report["exercises"].items():
        lines.append(f"| `{ex_id}` | {ex['score']:g} / {ex['max_score']:g} | {status_words(ex['status'])} |")
    gpu = report["gpu_check"]
    lines.append(f"| GPU-run check | {gpu['score']:g} / {gpu['max_score']:g} | {_inline(status_words(gpu['status']))} |")
    lines += ["", "## GPU-run check", "", *_block(wrap(gpu_line(gpu, visibility))), ""]
    for section in (s for s in found if not s.not_started):
        lines += [f"## {section.exercise}: {section.score:g} / {section.max_score:g} "
                  f"({status_words(section.status)})", ""]
        if section.summary:
            lines += [_inline(section.summary), ""]
        if section.failing:
            lines += [f"Failing tests ({len(section.failing)}):", ""]
        for test in section.failing:
            if test.message.startswith(SAME):  # said in full by an earlier test: one line
                lines.append(f"- `{test.name}`: {test.score:g} / {test.max_score:g}: {_inline(test.message)}")
                continue
            lines.append(f"- `{test.name}`: {test.score:g} / {test.max_score:g}")
            if test.message:
                lines += ["", *("  " + line if line else "" for line in _block(wrap(test.message))), ""]
        lines.append("")
    unstarted = [f"- {_inline(s.summary)}" for s in found if s.not_started]
    if unstarted:
        lines += ["## Not started", "", *unstarted, ""]
    if visibility == "messages":
        lines.append("_The hidden tests' inputs and values are not shown here; the public tests "
                     "(`pytest exercises`) show the values of theirs._")
    return _markdown(lines)


def error_feedback_text(student: str, reason: str) -> str:
    """The Markdown feedback for a student whose submission could not be graded at all (score-all's
    error row): why, at every visibility (it is about their files or the grading, not a hidden test)."""
    return _markdown([*_title(student), "**Your submission could not be graded**, so it has no score yet:", "",
                      *_block(wrap(escape_controls(reason))), "",
                      "Fix what this says and hand it in again, or ask your instructor."])


def write_feedback(student: str, report: dict[str, Any], out_dir: Path, visibility: str,
                   notes: Sequence[str] = ()) -> Path:
    """Write ``student``'s feedback into ``out_dir`` (an existing folder); returns the file."""
    return _write(student, feedback_text(student, report, visibility, notes), out_dir)


def write_error_feedback(student: str, reason: str, out_dir: Path) -> Path:
    """Write the feedback of ``student``, whose submission could not be graded for ``reason``; returns the file."""
    return _write(student, error_feedback_text(student, reason), out_dir)


def _write(student: str, text: str, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise NotADirectoryError(f"{out_dir}: not a directory")
    target = out_dir / feedback_filename(student)
    write_atomically(target, text)
    return target


def _title(student: str) -> list[str]:
    return [f"# Attention kata: feedback for {_inline(student)}", ""]


def _markdown(lines: list[str]) -> str:
    """The file's text: at most one blank line in a row, control characters escaped again (the last line of defence)."""
    return escape_controls(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip()) + "\n"


def _shown(text: str) -> str:
    """A report's text as students may read it: controls escaped, the documents by their names."""
    return readable_sources(escape_controls(text))


def _inline(text: str) -> str:
    """Text on one Markdown line: no newlines, no table-breaking pipes, no raw HTML."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _block(text: str) -> list[str]:
    """A fenced code block holding ``text`` whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *text.splitlines(), fence]
