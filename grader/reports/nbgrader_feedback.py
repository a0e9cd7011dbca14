"""The feedback page of one student's notebook in an nbgrader course, as ``nbgrader release_feedback`` hands it out.

    feedback_html("03_causal", "alice", part, "messages")   # part: the assignment's share of alice's JSON report

``python -m grader nbgrader`` (grader/classroom/nbgrader_course.py) writes one page per student and
assignment, ``feedback/<student>/<assignment>/<assignment>.html``. It holds what the Markdown feedback
(grader/reports/feedback.py) holds, rendered from the same JSON report (grader.reports.json_report.to_json)
with the same sections at the same visibility: the scores of the assignment's exercises, the GPU-run
check where the assignment holds its cell, and the student's own failing tests. Never a test's source.
Every text of the report is HTML-escaped; the page has no script.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from grader.reports.feedback import sections
from grader.visibility import gpu_line, status_words, wrap

STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}pre{background:#f4f4f4;padding:.5em;"
         "white-space:pre-wrap}td,th{padding:.2em .8em;text-align:left}")


def feedback_html(assignment: str, student: str, report: dict[str, Any] | None, visibility: str,
                  error: str = "", notes: Sequence[str] = ()) -> str:
    """The page of ``student``'s notebook of ``assignment``: ``report`` is the assignment's share of the
    student's JSON report (its exercises and tests, totals over them, ``gpu_check`` None where the
    assignment has no cell for it); None when the notebook could not be graded, ``error`` saying why.
    ``notes``: lines shown under the title (a late penalty: the total shown holds it)."""
    e = html.escape
    title = f"{assignment}: feedback for {student}"
    body = [f"<h1>{e(title)}</h1>", *(f"<p>{e(note)}</p>" for note in notes)]
    if report is None:
        body.append(f"<p>This notebook could not be graded: {e(error)}</p>")
    else:
        body += _scores(report, visibility)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + e(title) + "</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _scores(report: dict[str, Any], visibility: str) -> list[str]:
    e = html.escape
    body = [f"<p><strong>Total: {report['score']:g} / {report['max_score']:g}</strong></p>",
            "<table><tr><th>exercise</th><th>score</th><th>status</th></tr>"]
    for ex_id, ex in report["exercises"].items():
        body.append(f"<tr><td><code>{e(ex_id)}</code></td><td>{ex['score']:g} / {ex['max_score']:g}</td>"
                    f"<td>{e(status_words(ex['status']))}</td></tr>")
    body.append("</table>")
    if report["gpu_check"] is not None:
        body += ["<h2>The GPU-run check</h2>", f"<pre>{e(wrap(gpu_line(report['gpu_check'], visibility)))}</pre>"]
    for section in sections(report, visibility):
        body.append(f"<h2><code>{e(section.exercise)}</code>: {section.score:g} / {section.max_score:g}</h2>")
        if section.summary:
            body.append(f"<p>{e(section.summary)}</p>")
        for test in section.failing:
            body.append(f"<h3><code>{e(test.name)}</code>: {test.score:g} / {test.max_score:g}</h3>")
            if test.message:
                body.append(f"<pre>{e(wrap(test.message))}</pre>")
    return body
