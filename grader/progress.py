"""Where am I in the kata? Run the public tests of every module once and show, in the order of the
chapter, which modules are done, failing or not started, and what to do next.

    python -m grader check [--watch]          (also: attention-kata check) in the full repository
    python check_progress.py [--watch]        in the students' repository (the release)

One source: the student release ships this very file as ``check_progress.py``, and beside it
``progress_pytest.py``, the one pytest run whose outcomes this module judges (grader/progress_pytest.py:
what the run costs, and why). grader/authoring/release.py copies both and writes ``kata_modules.json``
beside them from the rubric; so both use the standard library only. The modules, in chapter order: the
rubric's, passed in by the command line, else ``kata_modules.json``'s.

Each test is given to a module: by its file's name, ``test_<module>.py``; else by the module its name
starts with (``test_causal_mask_...``), checked against the exercise modules its body uses (the file's
``from <module> import`` lines), which also decide alone when the name says nothing.

A module is *not started* while its tests fail only with its own ``NotImplementedError: ... not
written yet``, *done* when they all pass, *failing* otherwise. Exit status: 0 when the tests ran
(whatever they say), 1 when pytest could not run any (its output is shown), 2 for unusable input.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

if __package__:  # grader.progress, in the full repository
    from grader.progress_pytest import Run, TestResult, run_tests
else:  # check_progress.py, in the students' repository: progress_pytest.py is beside it
    from progress_pytest import Run, TestResult, run_tests

MODULES_FILE = "kata_modules.json"
NOT_WRITTEN = "not written yet"
_IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".hypothesis"}


class ProgressError(Exception):
    """Unusable input (no exercises folder, no module list): one line, exit code 2."""


@dataclass(frozen=True)
class Module:
    group: str  # "03_causal"
    name: str  # "causal_mask"


# --- which module a test belongs to -------------------------------------------------------------------
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _TestFile:
    """A public test file, parsed once: its imports of exercise modules and what each function uses."""

    def __init__(self, path: Path, modules: set[str]):
        try:
            tree = ast.parse(_read(path))
        except (SyntaxError, ValueError):  # ValueError: a null byte, before Python 3.12
            tree = ast.Module(body=[], type_ignores=[])
        self.imported: dict[str, str] = {}  # local name -> exercise module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in modules and node.level == 0:
                self.imported.update({alias.asname or alias.name: node.module for alias in node.names})
            elif isinstance(node, ast.Import):
                self.imported.update({alias.asname or alias.name: alias.name for alias in node.names if alias.name in modules})
        # the module's functions, and its classes' methods (the first of a name) where no function has that name
        functions = [node for node in tree.body if isinstance(node, _FUNCTIONS)]
        methods = [item for node in tree.body if isinstance(node, ast.ClassDef) for item in node.body if isinstance(item, _FUNCTIONS)]
        self.functions: dict[str, ast.AST] = {**{m.name: m for m in reversed(methods)}, **{f.name: f for f in functions}}

    def modules_used(self, function: str) -> set[str]:
        """Exercise modules that ``function`` uses, directly or through helpers/fixtures of this file."""
        used, seen, todo = set(), set(), [function]
        while todo:
            name = todo.pop()
            if name in seen or name not in self.functions:
                continue
            seen.add(name)
            node = self.functions[name]
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {a.arg for a in node.args.args}  # fixtures by parameter name
            for ref in names:
                if ref in self.imported:
                    used.add(self.imported[ref])
                elif ref in self.functions:
                    todo.append(ref)
        return used


def assign_tests(tests: Sequence[TestResult], modules: Sequence[Module]) -> tuple[dict[str, list[TestResult]], list[TestResult]]:
    """({module: its tests}, tests that belong to no module)."""
    order = {m.name: i for i, m in enumerate(modules)}
    by_module: dict[str, list[TestResult]] = {m.name: [] for m in modules}
    unassigned: list[TestResult] = []
    files: dict[Path, _TestFile] = {}
    for test in tests:
        module = _module_of(test, order, files)
        (by_module[module] if module else unassigned).append(test)
    return by_module, unassigned


def _module_of(test: TestResult, order: dict[str, int], files: dict[Path, _TestFile]) -> str | None:
    stem = test.path.stem
    if stem.startswith("test_") and stem[5:] in order:
        return stem[5:]
    name = test.function.removeprefix("test_")
    prefixes = [m for m in order if name == m or name.startswith(m + "_")]
    prefix = max(prefixes, key=len) if prefixes else None
    if test.path not in files:
        files[test.path] = _TestFile(test.path, set(order))
    used = files[test.path].modules_used(test.function)
    if prefix and (prefix in used or not used):
        return prefix
    if used:  # a test that uses several modules checks the one that builds on the others: the latest
        return max(used, key=order.__getitem__)
    return prefix


def _modules_of_file(path: Path, modules: Sequence[Module]) -> list[str]:
    """The modules a test file that failed to collect would have tested."""
    names = [m.name for m in modules]
    if path.stem.startswith("test_") and path.stem[5:] in names:
        return [path.stem[5:]]
    found = set(_TestFile(path, set(names)).imported.values())
    return [m.name for m in modules if m.name in found or (not found and m.group == path.parent.name)]


# --- the verdict per module ---------------------------------------------------------------------------
@dataclass
class Status:
    module: Module
    state: str  # "done" | "failing" | "not started" | "no tests"
    passed: int = 0
    total: int = 0
    detail: str = ""
    failures: list[TestResult] = field(default_factory=list)


_SECTION = re.compile(r"section '(\w+)'")


def _not_written_by(message: str) -> str | None:
    """The module whose stub raised this NotImplementedError ('' if it does not say), None if it is no such error."""
    if not message.startswith("NotImplementedError") or NOT_WRITTEN not in message:
        return None
    found = _SECTION.search(message)
    return found.group(1) if found else ""


def _still_a_stub(exercises: Path | None, module: Module) -> bool:
    """Does the module's file still raise its own 'not written yet' somewhere?"""
    text = _read(exercises / module.group / f"{module.name}.py") if exercises is not None else ""
    return NOT_WRITTEN in text and f"section '{module.name}'" in text


def judge(modules: Sequence[Module], run: Run, exercises: Path | None = None) -> tuple[list[Status], list[TestResult]]:
    """The state of every module; ``exercises`` lets a module whose file is still a stub count as not started
    even when its tests first trip over another module's stub."""
    by_module, unassigned = assign_tests(run.tests, modules)
    broken: dict[str, str] = {}
    for path, message in run.collect_errors.items():
        for name in _modules_of_file(path, modules):
            broken.setdefault(name, f"{path.name} could not be loaded: {message}")
    statuses = []
    for module in modules:
        tests = by_module[module.name]
        failed = [t for t in tests if t.outcome == "failed"]
        passed = sum(t.outcome == "passed" for t in tests)
        status = Status(module, "failing", passed, len(tests), failures=failed)
        if module.name in broken:
            status.detail = broken[module.name]
        elif not tests:
            status.state, status.detail = "no tests", "no public test of this module was found"
        elif not failed:
            status.state = "done"
        else:
            own = [t for t in failed if _not_written_by(t.message) in (module.name, "")]
            others = sorted({m for t in failed if (m := _not_written_by(t.message)) not in (None, "", module.name)})
            only_stubs = len(own) + sum(_not_written_by(t.message) in others for t in failed) == len(failed)
            if len(own) == len(failed) and passed == 0:
                status.state = "not started"
            elif only_stubs and passed == 0 and _still_a_stub(exercises, module):
                status.state, status.detail = "not started", f"its tests also need {', '.join(others)}"
            elif others and only_stubs:
                status.detail = f"needs {', '.join(others)} (not written yet)"
            else:
                wrong = [t for t in failed if t not in own]
                status.detail = f"{wrong[0].function}: {reason(wrong[0].message)}" if wrong else f"{len(own)} test(s): not written yet"
        statuses.append(status)
    return statuses, unassigned


# --- showing it ----------------------------------------------------------------------------------------
def readme_section(exercises: Path, module: Module) -> str:
    """The text of ``## <module>`` in the group's README (empty if there is none)."""
    text = _read(exercises / module.group / "README.md")
    found = re.search(rf"^## {re.escape(module.name)}[ \t]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return found.group(1).strip() if found else ""


_LOOKS = {"done": ("32", "✔"), "failing": ("31", "✘"), "not started": ("2", "·"), "no tests": ("33", "?")}  # colour, mark


def render(statuses: list[Status], unassigned: list[TestResult], exercises: Path, run: Run, colour: bool = False) -> str:
    def paint(text: str, state: str) -> str:
        return f"\033[{_LOOKS[state][0]}m{text}\033[0m" if colour else text

    shown = _display_path(exercises)
    if not run.tests and not run.collect_errors:  # pytest itself could not run (not installed, bad config)
        return "\n".join([f"attention kata: pytest ran no test (exit status {run.exitstatus}); its output ends with:",
                          *run.output.strip().splitlines()[-15:], ""])
    lines = [f"attention kata: {sum(s.state == 'done' for s in statuses)}/{len(statuses)} modules done", ""]
    width = max(len(f"{s.module.group}/{s.module.name}") for s in statuses)
    for number, s in enumerate(statuses, start=1):
        name = f"{s.module.group}/{s.module.name}".ljust(width)
        tests = f"{s.passed}/{s.total} tests pass" if s.total else ""
        lines.append(f"{number:>3}  {name}  {paint(f'{_LOOKS[s.state][1]} {s.state:<11}', s.state)}  {tests}")
        if s.detail:
            lines.append(f"     {' ' * width}    {_shorten(s.detail, 200)}")
    if unassigned:
        lines += ["", f"{len(unassigned)} test(s) belong to no module: " + ", ".join(t.function for t in unassigned[:5])]
    lines.append("")
    todo = next((s for s in statuses if s.state != "done"), None)
    if todo is None:
        lines.append(f"All {len(statuses)} modules pass their public tests. The grader also runs hidden tests "
                     "(other inputs, shapes and edge cases) and a GPU-run check.")
    else:
        m = todo.module
        lines.append(f"Next: {m.name} ({todo.state}) -- {shown}/{m.group}/README.md, section '## {m.name}':")
        section = readme_section(exercises, m)
        if section:
            lines += ["", *("    " + line if line else "" for line in section.splitlines()), ""]
        own_file = exercises / m.group / f"test_{m.name}.py"
        target = f"{shown}/{m.group}/{own_file.name}" if own_file.is_file() else f"{shown}/{m.group}"
        lines += [f"  {paint('FAILED', 'failing')} {failure.function}: {_shorten(reason(failure.message), 200)}"
                  for failure in todo.failures[:3] if todo.state == "failing"]
        lines.append(f"Run its tests: pytest {target}    Hints: {shown}/{m.group}/hints.md, section '## {m.name}'")
    lines.append(f"(checked {time.strftime('%H:%M:%S')}, {run.seconds:.1f} s)")
    return "\n".join(lines) + "\n"


def _read(path: Path) -> str:
    """A file of the exercises folder as text; empty when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(path)


def reason(message: str) -> str:
    """What a failure's one line says: the check's ``likely cause:`` line when it names one (a cause is named
    only when reproduced: kata_known.py), else the message itself."""
    lines = [line.strip() for line in message.splitlines()]
    return next((line for line in lines if line.startswith("likely cause:")), " ".join(message.split()))


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the command ---------------------------------------------------------------------------------------
def load_modules(modules: Sequence[tuple[str, str]] | None = None) -> list[Module]:
    """The modules in chapter order: the given (group, module) pairs, else ``kata_modules.json`` beside this file."""
    if modules is None:
        path = Path(__file__).resolve().parent / MODULES_FILE
        try:
            modules = [(m["group"], m["module"]) for m in json.loads(path.read_text())["modules"]]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ProgressError(f"cannot read the list of modules from {path}: {err}") from None
    return [Module(group, name) for group, name in modules]


HELP = ("your progress: run the public tests of every module once and show which are done, "
        "failing or not started, and what to do next")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the command, shared by the grader's ``check`` (full repository) and the stand-alone script."""
    parser.description = (HELP[0].upper() + HELP[1:] + ". Not started: the tests fail only with the module's own "
                          "NotImplementedError (not written yet). Cost: about one `pytest exercises`.")
    parser.add_argument("--watch", action="store_true",
                        help="check again whenever a file under the exercises folder changes (Ctrl-C stops)")
    parser.add_argument("--exercises", type=Path, default=Path("exercises"), metavar="DIR",
                        help="the exercises folder (default: ./exercises)")
    parser.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)  # seconds between polls


def check_once(exercises: Path, modules: list[Module], colour: bool) -> tuple[str, bool]:
    """(the report, whether pytest ran any test at all)."""
    run = run_tests(exercises)
    return render(*judge(modules, run, exercises), exercises, run, colour), bool(run.tests or run.collect_errors)


def snapshot(exercises: Path) -> dict[str, float]:
    """mtime (and size) of every file under ``exercises``: a change in it means 'check again'."""
    found = {}
    for folder, dirs, files in os.walk(exercises):
        dirs[:] = [d for d in dirs if d not in _IGNORED_DIRS]
        for name in files:
            try:
                stat = os.stat(path := os.path.join(folder, name))
            except OSError:
                continue
            found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def run_command(args: argparse.Namespace, modules: list[Module], out=None) -> int:
    out = out or sys.stdout
    exercises: Path = args.exercises
    if not exercises.is_dir():
        raise ProgressError(f"{exercises}: no such folder (run this from the folder that holds exercises/, or pass --exercises DIR)")
    if missing := [f"{m.group}/" for m in modules if not (exercises / m.group).is_dir()]:
        raise ProgressError(f"{exercises} is not the exercises folder: it has no {', '.join(sorted(set(missing)))}")
    if not 0.05 <= args.interval <= 60:
        raise ProgressError(f"--interval must be between 0.05 and 60 seconds, got {args.interval}")
    colour = out.isatty() and "NO_COLOR" not in os.environ
    if not args.watch:
        text, ran = check_once(exercises, modules, colour)
        out.write(text)
        return 0 if ran else 1
    try:
        while True:
            before = snapshot(exercises)
            text, _ = check_once(exercises, modules, colour)
            if out.isatty():
                out.write("\033[2J\033[H")
            out.write(text + "Watching for changes under " + _display_path(exercises) + "/ (Ctrl-C stops)\n")
            out.flush()
            while snapshot(exercises) == before:
                time.sleep(args.interval)
            time.sleep(min(args.interval, 0.2))  # let an editor finish writing
    except KeyboardInterrupt:
        out.write("\n")
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The stand-alone script of the student release: ``python check_progress.py [--watch]``."""
    parser = _OneLineParser(prog=Path(sys.argv[0]).name)
    add_arguments(parser)
    try:
        return run_command(parser.parse_args(argv), load_modules())
    except ProgressError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 2, not argparse's usage block
        raise ProgressError(message)


if __name__ == "__main__":
    sys.exit(main())
