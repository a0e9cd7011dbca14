"""How a failed public test is reported: short, in the students' own terms, each failure said once.

``pytest exercises/03_causal`` shows for every failing test (``conftest.py`` calls these):

* a check that failed: where in the test, then its message (what was called, what was expected, what
  came back, a likely cause when one is shown);
* an error your code raised: the call (or the test's line), the error's type and text, and the line of
  your code that raised it, then a likely cause when a known mistake raises the same (``kata_known.py``);
  no frames of torch, pytest or pluggy;
* a function not written yet: one line.

At most ``MAX_LINES`` lines a test. The same failure in several tests of one file (the same error from
the same line of your code, a file that does not import) is said once, in the first of them, with
"and in N more tests"; each of the others says where it was said. A module whose import never ends (a loop or
a wait at its top level) is stopped once, by the time limit, and is then refused at once wherever it is
imported (:func:`import_did_not_finish`): each of its tests fails with the same line instead of waiting again.
"""

from __future__ import annotations

import importlib.abc
import sys
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAX_LINES = 20


def _yours(filename: str) -> bool:
    """A file of the student's code: a module of a group folder here, no test, no check, no conftest."""
    path = Path(filename).resolve()
    return (path.parent.parent == HERE and path.suffix == ".py"
            and not path.name.startswith(("test_", "kata_", "conftest")))


def your_line(error: BaseException) -> str:
    """``module.py:66 (forward): <the line>`` where ``error`` left the student's code last; "" if never."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _yours(f.filename)]
    if not frames:
        return ""
    f = frames[-1]
    return f"{Path(f.filename).name}:{f.lineno} ({f.name}): {(f.line or '').strip()}"


def _test_line(item: Any, error: BaseException) -> tuple[str, str]:
    """``(test_x.py:NN, the statement)``: the test's last line that the error passed through."""
    test_file = Path(str(item.path)).resolve()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).resolve() == test_file]
    if not frames:
        return Path(str(item.path)).name, ""
    return f"{Path(str(item.path)).name}:{frames[-1].lineno}", (frames[-1].line or "").strip()


def capped(text: str) -> str:
    """``text`` cut to MAX_LINES - 1 lines (one is kept for "and in N more tests"), saying how many were left out."""
    lines, keep = text.splitlines(), MAX_LINES - 1
    if len(lines) <= keep:
        return text
    return "\n".join([*lines[:keep - 1], f"  ... ({len(lines) - keep + 1} more lines)"])


def raised(item: Any, error: BaseException, causes: list[str]) -> tuple[str, str]:
    """The report of an error the student's code raised (``error``: its own, even where a known mistake's
    cause replaced it) and its signature: its type and the line of the student's code."""
    where, statement = _test_line(item, error)
    call = getattr(error, "kata_call", None)
    text = f"{type(error).__name__}: {error}".strip()
    first = text.splitlines()[0][:400] if text else type(error).__name__
    mine = your_line(error)
    lines = [f"{where}: called {call}:" if call else f"{where}: {statement}" if statement else f"{where}:",
             f"  raised {first}", *([f"  at {mine}"] if mine else []), *(f"  likely cause: {c}" for c in causes)]
    return capped("\n".join(lines)), _signature(error, mine, causes) if mine else text


def _signature(error: BaseException, mine: str, causes: list[str]) -> str:
    """One error from one line of the student's code, with the same causes: the same failure in every test."""
    return f"{type(error).__name__} at {mine}; {sorted(causes)}"


def _check_failed(item: Any, error: BaseException, check_failed: type) -> tuple[str, str]:
    """A check's message, where in the test; when the check reports an error the student's code raised
    (``raised ...``, the error being the check's context), the student's line that raised it too."""
    where, _ = _test_line(item, error)
    lines = f"{where}: {error}".splitlines()
    raised_by = error.__context__
    mine = your_line(raised_by) if isinstance(raised_by, Exception) and not isinstance(raised_by, check_failed) else ""
    if not (mine and len(lines) > 1 and lines[1].startswith("  raised ")):
        return capped("\n".join(lines)), str(error)
    causes = [line.strip()[len("likely cause: "):] for line in lines if line.strip().startswith("likely cause: ")]
    return capped("\n".join([*lines[:2], f"  at {mine}", *lines[2:]])), _signature(raised_by, mine, causes)


def short_report(item: Any, excinfo: Any, check_failed: type) -> tuple[str, str] | None:
    """``(report, signature)`` for a failed test, or None to leave pytest's own (an error of pytest's: a
    fixture not found, a timeout, which shows where the code hung)."""
    error = excinfo.value
    if type(error).__module__.split(".")[0] in ("_pytest", "pytest", "pluggy", "pytest_timeout"):
        return None
    if isinstance(error, NotImplementedError):
        entry = excinfo.traceback[-1]
        line = f"NotImplementedError: {error} ({Path(str(entry.path)).name}:{entry.lineno + 1})"
        return line, line
    if isinstance(error, check_failed):
        return _check_failed(item, error, check_failed)
    original = getattr(error, "kata_error", error)  # an error a known mistake's cause replaced (kata_known.py)
    if isinstance(original, AssertionError) and original is error:  # the test's own assert
        where, statement = _test_line(item, error)
        return capped(f"{where}: {statement}\n  {str(error).strip() or 'AssertionError'}"), f"{where} {error}"
    causes = [line.strip()[len("likely cause: "):] for line in str(error).splitlines()
              if line.strip().startswith("likely cause: ")] if original is not error else []
    return raised(item, original, causes)


def say_repeats_once(reports: list[Any]) -> None:
    """Of the failed reports of one session, each failure that several tests of one file share is said in
    full by the first of them ("and in N more tests: ..."); the others say where (their ``kata_signature``)."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for report in reports:
        signature = getattr(report, "kata_signature", None)
        if signature is not None and isinstance(report.longrepr, str):
            groups.setdefault((report.nodeid.split("::")[0], signature), []).append(report)
    for same in groups.values():
        if len(same) < 2:
            continue
        first, names = same[0], [r.nodeid.split("::")[-1] for r in same]
        more = ", ".join(names[1:4]) + (", ..." if len(names) > 4 else "")
        first.longrepr = f"{first.longrepr}\n  (and in {len(same) - 1} more tests: {more})"
        for report in same[1:]:
            report.longrepr = f"the same failure as {names[0]} (said there)"


class _Unfinished(importlib.abc.MetaPathFinder):
    """Refuses, at once, the import of a module whose import did not finish before (``{module: why}``)."""

    def __init__(self) -> None:
        self.why: dict[str, str] = {}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in self.why:
            raise ImportError(self.why[name], name=name)


_UNFINISHED = _Unfinished()


def import_did_not_finish(module: str, error: BaseException) -> None:
    """``module``'s import was stopped by the time limit (``error``): from now on importing it raises ImportError
    saying where it stopped, so that its tests, and those of modules that import it, fail at once."""
    mine = your_line(error)
    _UNFINISHED.why[module] = (f"{module} did not finish importing within the time limit"
                               + (f" (stopped at {mine})" if mine else "")
                               + ": code at the top of a module runs when it is imported, and a loop or a wait there never ends")
    if _UNFINISHED not in sys.meta_path:
        sys.meta_path.insert(0, _UNFINISHED)
