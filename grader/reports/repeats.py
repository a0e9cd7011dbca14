"""Each failure of a hidden test said once, in at most MAX_LINES lines, wherever students read them
(the feedback files and the nbgrader pages through grader/reports/feedback.py, Gradescope's results).

Several tests of one exercise often fail the same way: an error raised at the same line of the student's
code (``RuntimeError: shape '[2, 6, 2, 2]' is invalid ...`` then ``(raised at 04_multihead/x.py:66 in
forward)``, whatever the sizes of each test), a file that does not import, the same message. The first
such test shows it, with "and in N more tests: ..."; each of the others says "the same failure as
<the first>". The public tests say theirs the same way (exercises/kata_report.py).
"""

from __future__ import annotations

import re
from typing import Sequence

from grader.visibility import wrap

MAX_LINES = 20
SAME = "the same failure as "  # how a test whose failure an earlier one said begins
_RAISED_AT = re.compile(r"^\s*\(raised at (\S+)")


def signature(message: str) -> str:
    """What makes two messages the same failure: an error's type and the student's line it was raised at,
    else the whole message."""
    for line in message.splitlines():
        found = _RAISED_AT.match(line)
        if found:
            return f"{message.split(':', 1)[0]} at {found.group(1)}"
    return message


def capped(text: str, limit: int = MAX_LINES) -> str:
    """``text`` in at most ``limit`` lines, the last saying how many were left out."""
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    return "\n".join([*lines[:limit - 1], f"... ({len(lines) - limit + 1} more lines)"])


def said_once(tests: Sequence[tuple[str, str]]) -> list[str]:
    """The messages of one exercise's failing tests (``(name, message)`` in order, as shown: redacted and
    wrapped), each failure said in full by its first test only and every message in MAX_LINES lines."""
    groups: dict[str, list[int]] = {}
    for i, (_, message) in enumerate(tests):
        if message:
            groups.setdefault(signature(message), []).append(i)
    shown = [capped(message) for _, message in tests]
    for members in groups.values():
        if len(members) < 2:
            continue
        first, others = tests[members[0]][0], [tests[i][0] for i in members[1:]]
        more = wrap(f"(and in {len(others)} more tests: {', '.join(others[:3])}{', ...' if len(others) > 3 else ''})")
        shown[members[0]] = capped(tests[members[0]][1], MAX_LINES - len(more.splitlines())) + "\n" + more
        for i in members[1:]:
            shown[i] = f"{SAME}{first} (said there)"
    return shown
