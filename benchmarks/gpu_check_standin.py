#!/usr/bin/env python
"""Benchmark (issue 27): what judging the wrapper over the stand-in adds to a grading.

    python benchmarks/gpu_check_standin.py [--repeat 5]

Two gradings in one process and one bubblewrap template (as score-all's jobs grade), interleaved
``--repeat`` times after a warm-up: the solutions (the baseline: CausalAttention passes the GPU-run
check, the wrapper runs with its own heads) and the solutions with CausalAttention's mask kept in a
plain attribute (it fails the check, so the wrapper is judged in a domain of its own over the stand-in).
Prints the median wall-clock seconds of each and the GPU-run check's score.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader.grading.grade import grade  # noqa: E402
from grader.grading.options import GradeOptions  # noqa: E402
from grader.sandbox.domains import Domains  # noqa: E402
from grader.sandbox.modes import choose_isolation  # noqa: E402

REGISTERED = 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'
PLAIN = "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory() as tmp, Domains(choose_isolation("bwrap")) as domains:
        plain = Path(tmp) / "plain"
        shutil.copytree(REPO / "solutions", plain, ignore=shutil.ignore_patterns("__pycache__", "conftest.py"))
        module = plain / "03_causal" / "causal_attention.py"
        module.write_text(module.read_text().replace(REGISTERED, PLAIN))
        subs = {"solutions": REPO / "solutions", "mask in a plain attribute": plain}
        grade(subs["solutions"], GradeOptions(), domains)  # warm-up: the template's torch import
        times: dict[str, list[float]] = {name: [] for name in subs}
        scores = {}
        for _ in range(repeat):
            for name, sub in subs.items():
                started = time.perf_counter()
                check = grade(sub, GradeOptions(), domains).gpu_check
                scores[name] = f"{check.score:g}/{check.max_score:g}"
                times[name].append(time.perf_counter() - started)
    base = statistics.median(times["solutions"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name}: {median:.2f} s ({median / base:.2f}x), GPU-run check {scores[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
