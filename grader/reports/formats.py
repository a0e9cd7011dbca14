"""The formats ``score --format`` prints, by name: one table, the command line's choices.

Every format renders the JSON report (grader/reports/json_report.py) with a function
``render(report, visibility, colour) -> str`` (the text written to stdout): ``visibility`` is what
students may see (grader/visibility.py), ``colour`` whether stdout is a terminal that wants
colours. A new format is a module with such a function and one line here.
"""

from __future__ import annotations

from typing import Any, Callable

from grader.reports import gradescope, json_report, text

Renderer = Callable[[dict[str, Any], str, bool], str]

FORMATS: dict[str, Renderer] = {
    "text": text.render,
    "json": json_report.render,
    "gradescope": gradescope.render,
}


def render(name: str, report: dict[str, Any], visibility: str, colour: bool = False) -> str:
    """The JSON report ``report`` in the format ``name`` (a key of :data:`FORMATS`)."""
    return FORMATS[name](report, visibility, colour)
