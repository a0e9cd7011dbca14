"""The students' public tests, run where the student's code runs: for one flag, never for points.

The grader (grader/grading/public_tests.py) sends the text of one module's public test file
(``exercises/<group>/test_<module>.py``) per request and, with the first, the check modules those tests
import (``kata_mistakes``, ``kata_known``, ``kata_checks``) and the shortcuts table ``kata_trace`` reads
beside its own file (``exercises/shortcuts.json``; bubblewrap shows the domain that file alone). Every one
of them is in the students' own repository: no reference code comes here. ``known_results.json`` does not
(it only names a failed check's likely cause: a verdict is the same without it).

Each ``test_*`` function of the file runs as the students' pytest runs it (exercises/conftest.py): the
modules already imported (the domain's preload did it), ``torch.manual_seed(0)`` before each test, one
``pytest.mark.parametrize`` expanded. A test that asks for a fixture or carries another mark is reported
failed: it did not run as pytest runs it. The answer is plain values, ``{test id: passed}``; the grader
decides what they mean. The student's code can forge them (it runs in this process): they set or clear one
flag of that student's, and decide no points.
"""

import json
import sys
import types

# The __file__ the check modules are given: no file of theirs exists there (kata_known finds no known
# results, kata_checks names no file), and the worker's scan of the student's modules (tracing.py) skips them.
TOOLS_FOLDER = "/kata-public-tests"


def run(req, torch) -> dict:
    """The request ``{"name", "text"}`` of one public test file, with ``"tools"`` and ``"table"`` the first time."""
    if "tools" in req:
        load_tools(req["tools"], req["table"])
    return run_file(req["name"], req["text"], torch)


def load_tools(sources, table_text) -> None:
    """``sources``: ``[[name, text], ...]`` in import order, each executed as the module ``name``; the shortcuts
    table (JSON text) is what ``kata_trace.table()`` returns from now on in this domain."""
    import kata_trace  # the worker's own, loaded from the students' file (tools.py)

    for name, text in sources:
        sys.modules[name] = _module(str(name), str(text))
    kata_trace.table = lambda: json.loads(table_text)


def run_file(name, text, torch) -> dict:
    """``{test id: passed}`` for every test of the public test file ``text`` (its module name: ``name``)."""
    module = _module(str(name), str(text))
    results = {}
    for attr, func in list(vars(module).items()):
        if attr.startswith("test_") and callable(func):
            for test_id, kwargs in _cases(attr, func):
                results[test_id] = kwargs is not None and _passes(func, kwargs, torch)
    return results


def _module(name, text):
    module = types.ModuleType(name)
    module.__file__ = f"{TOOLS_FOLDER}/{name}.py"
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


def _cases(name, func):
    """``[(test id, keyword arguments)]`` as pytest would call ``func``; arguments None: not run here."""
    marks = list(getattr(func, "pytestmark", None) or ())
    code = getattr(func, "__code__", None)
    wanted = list(code.co_varnames[:code.co_argcount]) if code is not None else None
    if wanted is None or len(marks) > 1 or any(getattr(m, "name", None) != "parametrize" for m in marks):
        return [(name, None)]
    if not marks:
        return [(name, None if wanted else {})]
    names, values = marks[0].args[0], marks[0].args[1]
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    if sorted(names) != sorted(wanted):
        return [(name, None)]
    cases = []
    for i, value in enumerate(values):
        value = tuple(value.values) if type(value).__name__ == "ParameterSet" else (  # pytest.param(...)
            (value,) if len(names) == 1 else tuple(value))
        cases.append((f"{name}[{i}]", dict(zip(names, value)) if len(value) == len(names) else None))
    return cases


def _passes(func, kwargs, torch) -> bool:
    try:
        torch.manual_seed(0)
        func(**kwargs)
    except BaseException:  # noqa: BLE001 - whatever the student's code raises fails the test, SystemExit too
        return False
    return True
