"""Benchmark: the CPU the project's suite takes on a fresh clone, the budget issue 40 sets (at most 400
CPU-seconds, children included; under 5 minutes of wall-clock time on this 2-core machine).

    python benchmarks/suite_cpu.py BASELINE [CANDIDATE] [--rounds N] [--pytest-args "-m 'not slow'"]

CANDIDATE defaults to HEAD, rounds to 1. Each round makes a fresh clone of each commit (the shared folder
beside it, as CI has it), installs it as the README says (a venv of its own, ``.ci/run``'s install lines),
then runs the README's test command there, interleaving the two commits so that both see the same
machine. It prints, per run: the wall-clock seconds, the CPU seconds of pytest and every descendant it
waited for (``getrusage(RUSAGE_CHILDREN)``: the workers, the graders, the sandboxes' templates), and the CPU
seconds the whole machine was busy meanwhile (``/proc/stat``: the upper bound, orphans and other load
included), with pytest's closing line. Run it with nothing else running.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import ENV, REPO, BenchError, log, machine_line, run_timed

BUDGET_CPU = 400.0  # issue 40: CPU-seconds of `python -m pytest` on a fresh clone, children included
BUDGET_WALL = 300.0  # and under 5 minutes on 2 busy cores


def ci_install_lines() -> list[str]:
    """``.ci/run``'s lines up to (not including) the README's test command: the venv and the install."""
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    return lines[: max(i for i, line in enumerate(lines) if line.strip() == "python -m pytest")]


def fresh_clone(commit: str, into: Path) -> Path:
    """A clone of ``commit`` in ``into/main`` with the shared folder beside it, installed as CI installs it."""
    subprocess.run(["git", "clone", "-q", str(REPO), str(into / "main")], check=True)
    subprocess.run(["git", "-C", str(into / "main"), "checkout", "-q", commit], check=True)
    (into / "shared").symlink_to(REPO.parent / "shared")
    script = "\n".join([*ci_install_lines(), ""])
    # $0 is .ci/run's own path, which its first lines cd from
    subprocess.run(["bash", "-c", script, str(into / "main" / ".ci" / "run")], cwd=into / "main", check=True, env={"PATH": "/usr/bin:/bin:/usr/local/bin",
                   "HOME": str(Path.home()), "CI": "true"}, stdout=subprocess.DEVNULL)
    return into / "main"


def measure(commit: str, pytest_args: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="kata-suite-cpu-") as tmp:
        clone = fresh_clone(commit, Path(tmp))
        log(f"{commit}: installed, running the suite")
        # As .ci/run runs it: the clone's venv activated (first on PATH), CI=true.
        env = {**ENV, "PATH": f"{clone / '.venv' / 'bin'}:{ENV.get('PATH', '')}", "VIRTUAL_ENV": str(clone / ".venv"),
               "CI": "true"}
        timing, proc = run_timed([str(clone / ".venv" / "bin" / "python"), "-m", "pytest", *pytest_args], cwd=clone,
                                 ok=(0, 1), timeout=3600, env=env)
    lines = proc.stdout.splitlines()
    closing = next((line for line in reversed(lines) if " passed" in line or " failed" in line),
                   "(no closing line from pytest)")
    closing += "".join(f"\n  {line}" for line in lines if line.startswith(("FAILED ", "ERROR ")))
    verdict = "within" if timing.cpu <= BUDGET_CPU and timing.wall <= BUDGET_WALL else "OVER"
    return (f"{commit}: wall {timing.wall:.1f} s, CPU {timing.cpu:.1f} s (children waited for), machine busy "
            f"{timing.busy:.1f} s; {verdict} the budget ({BUDGET_CPU:.0f} CPU-s, {BUDGET_WALL:.0f} s); {closing.strip(' =')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline")
    parser.add_argument("candidate", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pytest-args", default="", help="extra arguments to pytest, as one shell-quoted string")
    args = parser.parse_args(argv)
    commits = []
    for rev in (args.baseline, args.candidate):
        found = subprocess.run(["git", "rev-parse", "--short", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=REPO,
                               capture_output=True, text=True)
        if found.returncode != 0:
            parser.error(f"not a commit here: {rev}")
        commits.append(found.stdout.strip())
    print(machine_line())
    for _ in range(args.rounds):
        for commit in commits:
            try:
                print(measure(commit, shlex.split(args.pytest_args)), flush=True)
            except (BenchError, subprocess.CalledProcessError) as err:
                print(f"{commit}: could not be measured: {err}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
