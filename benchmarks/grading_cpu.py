#!/usr/bin/env python
"""Benchmark: the CPU one grading costs, at two commits, interleaved.

    python benchmarks/grading_cpu.py BASELINE [CANDIDATE] [--rounds 3] [--repeat 10] [--sandbox auto]

CANDIDATE defaults to HEAD. Each commit is checked out in a git worktree of its own (a temporary
folder, removed at the end). Each round runs, for BASELINE then CANDIDATE, one process that imports
that commit's grader, starts one template (``--sandbox``: the best isolation here by default), grades
the stubs once untimed, then its ``exercises/`` (the stubs: every test fails) and its ``solutions/``
``--repeat`` times each. Printed per grading: the grader's own CPU milliseconds (user + system of
this process: pytest, the hidden tests, the client), the workers' (user + system of each domain's
processes, read from /proc just before the grader ends it: where the student's code and the trace of
the operations it runs are) and the machine's (all cores, from /proc/stat: the template too, and
whatever else runs; run it on a quiet machine), then the medians over the rounds. The
GPU-run check is skipped: it grades the same modules again (benchmarks/gpu_check_standin.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KINDS = ("exercises", "solutions")


def measure(tree: Path, repeat: int, sandbox: str) -> dict[str, list[float]]:
    """In this process, with ``tree``'s grader: {kind: [own CPU ms, machine CPU ms]} per grading."""
    from timing import machine_busy  # sys.path[0] is this script's folder (the checkout it was run from)

    sys.path.insert(0, str(tree))  # before the editable install's finder: the grader of ``tree``
    import grader
    from grader.grading.grade import grade
    from grader.grading.options import GradeOptions
    from grader.sandbox.domains import Domains
    from grader.sandbox.modes import choose_isolation
    from grader.sandbox.process import RunningDomain

    assert Path(grader.__file__).resolve().is_relative_to(tree.resolve()), grader.__file__
    workers = [0.0]  # CPU seconds of the domains ended so far
    end = RunningDomain.kill

    def kill(domain: RunningDomain) -> None:
        used = domain.usage(rescan=True)  # (CPU seconds, seconds waited for a CPU), or None
        workers[0] += used[0] if used else 0.0
        end(domain)

    RunningDomain.kill = kill
    options = GradeOptions(sandbox=sandbox, gpu="skip")
    with Domains(choose_isolation(sandbox)) as domains:
        grade(tree / "exercises", options, domains)  # untimed: pytest's start and the collection
        result = {}
        for kind in KINDS:
            own, worker, machine = time.process_time(), workers[0], machine_busy()
            for _ in range(repeat):
                grade(tree / kind, options, domains)
            result[kind] = [(time.process_time() - own) * 1000 / repeat, (machine_busy() - machine) * 1000 / repeat,
                            (workers[0] - worker) * 1000 / repeat]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline")
    parser.add_argument("candidate", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # a round's process
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.repeat, args.sandbox)))
        return 0
    revs = []
    for rev in (args.baseline, args.candidate):
        found = subprocess.run(["git", "rev-parse", "--verify", "--short", f"{rev}^{{commit}}"], cwd=REPO,
                               capture_output=True, text=True)
        if found.returncode != 0:
            parser.error(f"{rev}: not a commit of this repository")  # one line, exit 2
        revs.append(found.stdout.strip())
    with tempfile.TemporaryDirectory(prefix="grading-cpu-") as tmp:
        trees = [Path(tmp) / f"{side}-{rev}" for side, rev in zip(("baseline", "candidate"), revs)]
        try:
            for rev, tree in zip(revs, trees):
                subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), rev], cwd=REPO, check=True)
            runs: dict[Path, list[dict]] = {tree: [] for tree in trees}
            for round_ in range(1, args.rounds + 1):
                for tree in trees:
                    out = subprocess.run([sys.executable, __file__, "-", "--measure", str(tree), "--repeat",
                                          str(args.repeat), "--sandbox", args.sandbox], cwd=tree, check=True,
                                         capture_output=True, text=True).stdout
                    runs[tree].append(json.loads(out.splitlines()[-1]))
                    cells = "  ".join(f"{k}: own {v[0]:.0f} ms, worker {v[2]:.0f} ms, machine {v[1]:.0f} ms"
                                      for k, v in runs[tree][-1].items())
                    print(f"round {round_} {tree.name}  {cells}", flush=True)
        finally:
            for tree in trees:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False,
                               capture_output=True)
    for tree in trees:
        cells = "  ".join(f"{k}: own {statistics.median(r[k][0] for r in runs[tree]):.0f} ms, worker "
                          f"{statistics.median(r[k][2] for r in runs[tree]):.0f} ms, machine "
                          f"{statistics.median(r[k][1] for r in runs[tree]):.0f} ms" for k in KINDS)
        print(f"median  {tree.name}  {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
