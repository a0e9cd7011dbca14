"""What students see of a hidden test's message: ``--visibility full | messages | scores``.

Gradescope's results.json (grader/reports/gradescope.py), the feedback files (grader/reports/feedback.py)
and the nbgrader feedback page show the JSON report's messages through :func:`redact` at the visibility
the instructor chose; the JSON report and the text table are the instructor's and hold everything.

On the ground floor because three wings share the choice: the reports render by it, the Gradescope
bundle (grader/authoring) sets its default, and the class commands (grader/classroom) pass it on.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import re
import textwrap
from typing import Any

from grader.rubric import TESTS_DIR
from grader.safe_text import escape_controls as _safe

VISIBILITIES = ("full", "messages", "scores")
_HELP = ("what students see of the hidden tests in feedback and Gradescope results: full messages, messages "
         "without the tests' inputs and values, or scores only (default: full; docs/instructor-reports.md)")
WRAP_WIDTH = 100

_CALL_LINE = re.compile(r"\bcalled ([A-Za-z_][\w.]*)(?:\(.*)?:\s*$")
_DECIMAL = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?(?![\w.])")
_VALUES_ONLY = re.compile(r"^[\d\s.,+\-eE\[\]]*$")
_KEPT_LINE = "largest absolute difference"


def add_visibility_option(parser: argparse.ArgumentParser, default: str = "full") -> None:
    """``--visibility``, for every command that shows students the hidden tests' messages."""
    parser.add_argument("--visibility", choices=VISIBILITIES, default=default,
                        help=_HELP.replace("(default: full;", f"(default: {default};"))


def check_visibility(visibility: str) -> None:
    """ValueError unless ``visibility`` is one of :data:`VISIBILITIES` (the command line's choices
    refuse others first; this guards the functions tools call)."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"unknown visibility {visibility!r} (expected one of {', '.join(VISIBILITIES)})")


def redact(text: str, visibility: str) -> str:
    """A hidden test's message as students may see it at ``visibility``.

    ``full``: unchanged. ``scores``: nothing (only scores and statuses are shown). ``messages``: the
    message without the hidden test's inputs and values:
      1. a ``called NAME(ARGS) [source]:`` line becomes ``called NAME(…):`` (which call, not its inputs);
      2. every bracketed list of numbers (a tensor's values, nested or cut with ``...``) becomes ``[…]``;
      3. every decimal number (``0.4921``, ``-1.5e-3``, ``inf`` is not one) becomes ``…``, except on the
         ``largest absolute difference ... (tolerance ...)`` line.
    Kept: shapes, dtypes, whole numbers (counts, sizes), subscripts (``keys.shape[-1]``), the kata's own
    ``likely cause:`` lines whole (the messages of tests/kata_mistakes.py), and the text of errors the
    student's own code raised.
    """
    check_visibility(visibility)
    if visibility == "full":
        return text
    if visibility == "scores":
        return ""
    return "\n".join(_redact_line(line) for line in text.splitlines())


def _redact_line(line: str) -> str:
    """One line at ``messages``: the kata's own ``likely cause:`` words whole, also each of several said together
    (``one of these, which give the same result here: A; or B``, kata_mistakes.together); the rest redacted."""
    cause, together = line.strip().removeprefix("likely cause: "), _project_causes().get("SAME_RESULT", "")
    if cause in _project_causes().values():  # the kata's own words, whole
        return line
    if line.strip().startswith("likely cause: ") and together and cause.startswith(together):
        head = line[: len(line) - len(cause)] + together
        return head + "; or ".join(_redact_line(part) for part in cause[len(together):].split("; or "))
    line = _CALL_LINE.sub(lambda m: f"called {m.group(1)}(…):", line)
    line = _redact_value_lists(line)
    return line if _KEPT_LINE in line else _DECIMAL.sub("…", line)


@functools.lru_cache(maxsize=1)
def _project_causes() -> dict[str, str]:
    """The kata's messages of known mistakes (tests/kata_mistakes.py: plain text, no torch): a ``likely
    cause:`` line that is one of them holds no input of a hidden test, and is shown whole. A line a
    student's error text makes to look like one is not among them, and is redacted as any other."""
    path = TESTS_DIR / "kata_mistakes.py"
    spec = importlib.util.spec_from_file_location("_kata_mistakes_words", path)
    if spec is None or spec.loader is None or not path.is_file():
        return {}
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {k: v for k, v in vars(module).items() if isinstance(v, str) and k.isupper() and " " in v}


def _redact_value_lists(line: str) -> str:
    """Every outermost ``[...]`` that holds only numbers (``inf``, ``nan``, ``...`` included) -> ``[…]``;
    a subscript (``keys.shape[-1]``, ``x[0]``: the bracket right after a name or a bracket) is no list."""
    out, i = [], 0
    while i < len(line):
        if line[i] != "[" or (i and (line[i - 1].isalnum() or line[i - 1] in "_)]")):
            out.append(line[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(line):
            depth += {"[": 1, "]": -1}.get(line[j], 0)
            if depth == 0:
                break
            j += 1
        inner = line[i + 1:j]
        numbers = re.sub(r"\b(?:inf|nan|-inf)\b|\.\.\.|…", "0", inner)
        if j < len(line) and inner.strip() and _VALUES_ONLY.match(numbers) and re.search(r"\d", numbers):
            out.append("[…]")
            i = j + 1
        else:
            out.append("[")
            i += 1
    return "".join(out)


def wrap(text: str, width: int = WRAP_WIDTH) -> str:
    """Long lines (a tensor's values) wrapped at spaces, continued with the line's indent + 4 spaces."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + "    ",
                                   break_long_words=True, break_on_hyphens=False, drop_whitespace=True)
                     if line.strip() else [line])
    return "\n".join(lines)


# A status in the words students read (the JSON report's ``status`` of an exercise or of the GPU-run check).
STATUS_WORDS = {"passed": "passed", "partial": "partly passed", "failed": "failed", "skipped": "skipped",
                "simulated_passed": "passed on a simulated GPU", "simulated_failed": "failed on a simulated GPU"}


def status_words(status: str) -> str:
    """``simulated_failed`` -> ``failed on a simulated GPU``; a status of no known kind, escaped as it is."""
    return STATUS_WORDS.get(status, _safe(str(status)))


def gpu_line(gpu: dict[str, Any], visibility: str) -> str:
    """The GPU-run check in one line, from the JSON report's ``gpu_check``, its status in words."""
    head = f"GPU-run check: {gpu['score']:g} / {gpu['max_score']:g} ({status_words(gpu['status'])}"
    if visibility == "scores":
        return head + ")"
    message = redact(_safe(str(gpu.get("message", ""))), visibility)
    return f"{head}, {_safe(str(gpu.get('device', 'unknown')))})" + (f": {message}" if message else "")
