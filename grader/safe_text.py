"""Student-controlled text made safe to show: the one place that decides which characters are escaped.

A student's exception message, printed output, file name or returned string can hold terminal escape
sequences (``\\x1b[2J`` clears the instructor's screen, and text drawn after it can fake "Total: 100 /
100"), carriage returns that overwrite a line, or Unicode bidi overrides that show text in another
order than it reads. Every such character is shown escaped, as Python writes it (``\\x1b``, ``\\r``,
``\\u202e``): C0 controls but newline and tab, DEL, C1 controls, the bidi embeddings, overrides and
isolates (U+202A-U+202E, U+2066-U+2069) and lone surrogates (a file name that is not UTF-8; they
cannot be written to a UTF-8 terminal or file at all).

Applied where student text enters the grader (grader/sandbox/client.py: exception messages, the
worker's output tail, object labels) and again by every renderer (the text, JSON and Gradescope
reports, the feedback files, the class summary) as the last line of defence. Escaping twice changes
nothing: the escaped form holds only printable ASCII.
"""

from __future__ import annotations

import re

_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROLS = re.compile(f"[{_UNSAFE}]")
_CONTROLS_AND_BREAKS = re.compile(f"[{_UNSAFE}\n\t]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_controls(text: str) -> str:
    """``text`` with its control, bidi-override and surrogate characters escaped; newlines and tabs kept."""
    return _CONTROLS.sub(_escaped, text)


def escape_line(text: str) -> str:
    """``text`` as one line: the same as :func:`escape_controls`, newlines and tabs escaped as well."""
    return _CONTROLS_AND_BREAKS.sub(_escaped, text)


def printable(text: str) -> str:
    """A progress or warning line of score-all on the instructor's terminal: every character Python
    calls unprintable (controls, and also invisible ones such as zero-width spaces) shown escaped, so a
    student's folder name cannot hide itself or look like another's."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
