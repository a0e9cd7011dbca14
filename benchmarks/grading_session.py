#!/usr/bin/env python
"""Benchmark: gradings in one process, in the process's one collected pytest session against a session each.

    python benchmarks/grading_session.py [--repeat 8] [--sandbox auto]

One template (``--sandbox``: the best isolation here by default), the solutions and the stubs graded in
turn, ``--repeat`` times each after a warm-up, interleaved: through ``run_hidden_tests`` (the engine's one
pytest session for the process: configured and collected once) and the baseline, the same grading in a
pytest session started, collected and ended for it alone (what every grading paid before, when each ran
``pytest.main``). Prints the median wall-clock milliseconds of each, with the grader's own CPU
milliseconds (this process) and the machine's (all cores, from /proc/stat: run it on a quiet machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.timing import machine_busy  # noqa: E402
from grader.grading import engine  # noqa: E402
from grader.rubric import TESTS_DIR, load_rubric  # noqa: E402
from grader.sandbox.domains import Domains  # noqa: E402
from grader.sandbox.modes import choose_isolation  # noqa: E402



def timed(run) -> tuple[float, float, float]:
    wall, own, machine = time.perf_counter(), time.process_time(), machine_busy()
    run()
    return ((time.perf_counter() - wall) * 1000, (time.process_time() - own) * 1000,
            (machine_busy() - machine) * 1000)


def shared_session(submission: Path, domains: Domains) -> None:
    engine.run_hidden_tests(submission, domains=domains)


def session_of_its_own(submission: Path, domains: Domains) -> None:
    client = engine.start_worker(submission, domains=domains, start=False)
    session = engine._Session(TESTS_DIR).start()
    try:
        session.run(engine._Run(client, load_rubric(), None, ()))
    finally:
        session.close()
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float, float]]] = {"one session per process (the engine)": [],
                                                          "baseline: a session per grading": []}
    with Domains(choose_isolation(args.sandbox)) as domains:
        for submission in (REPO / "solutions", REPO / "exercises"):  # warm-up: the template, torch, the session
            shared_session(submission, domains)
            session_of_its_own(submission, domains)
        for i in range(args.repeat):
            for submission in (REPO / "solutions", REPO / "exercises"):
                rows["one session per process (the engine)"].append(timed(lambda: shared_session(submission, domains)))
                rows["baseline: a session per grading"].append(timed(lambda: session_of_its_own(submission, domains)))
        mode = domains.isolation.mode.name
    print(f"{len(next(iter(rows.values())))} gradings each (solutions and stubs in turn), isolation {mode}:")
    for name, values in rows.items():
        wall, own, machine = (statistics.median(v[i] for v in values) for i in range(3))
        print(f"{name}: {wall:.0f} ms, grader CPU {own:.0f} ms, machine CPU {machine:.0f} ms (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
