# Setup (read-only): run this cell first. It imports torch, defines the documents' input and lets the
# test cells below run the kata's public tests (kata_checks.py, beside this notebook) on this notebook's code.
import math

import torch
import torch.nn as nn

import kata_checks

inputs = kata_checks.journey_inputs()  # "Your journey starts with one step": shape (6, 3)
batch = torch.stack((inputs, inputs), dim=0)  # (2, 6, 3)
_NOTEBOOK = globals()


class _ThisNotebook:
    """What the public tests' ``load("<module>")`` gives here: the names this notebook defines."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        if name in _NOTEBOOK:
            return _NOTEBOOK[name]
        raise kata_checks.KataCheckFailed(f"{name} is not defined: run the cell of {self.module} above first")


kata_checks.load = _ThisNotebook


def run_public_tests(module, tests):
    """Run each test (with its pytest.mark.parametrize cases); print one line per test; fail if any failed."""
    failed = 0
    for test in tests:
        cases = [{}]
        for mark in getattr(test, "pytestmark", []):
            if mark.name == "parametrize":
                names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
                cases = [dict(case, **dict(zip(names, v if len(names) > 1 else (v,)))) for case in cases for v in mark.args[1]]
        for case in cases:
            label = test.__name__ + (f"[{', '.join(map(repr, case.values()))}]" if case else "")
            try:
                test(**case)
            except Exception as err:  # noqa: BLE001 - every failure is shown, the next test still runs
                failed += 1
                print(f"FAILED {label}: {type(err).__name__}: {err}\n")
            else:
                print(f"passed {label}")
    if failed:
        raise AssertionError(f"{failed} public test(s) of {module} failed (see above)")
    print(f"{module}: every public test passed")
