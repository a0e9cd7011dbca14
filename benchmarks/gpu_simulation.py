#!/usr/bin/env python
"""Benchmark (issue 27): the first device run of a fresh process, the simulated GPU against the meta device.

    python benchmarks/gpu_simulation.py [--repeat 5] [--baseline DIR]

Three commands, each in a fresh process, interleaved ``--repeat`` times so that the machine's load
affects all of them alike: ``import torch`` (the baseline), then ``import torch``, build the solutions'
CausalAttention and run it once on the simulated GPU (``exercises/kata_gpu.py``, what a public test's
``..._runs_on_any_device`` does after its CPU run), and the same on PyTorch's ``meta`` device (what the
GPU-run check simulated on before; its first use imports torch._dynamo). Prints the median wall-clock
seconds of each and its ratio to ``import torch``. ``--baseline DIR``: also the simulated GPU of
``DIR/kata_gpu.py`` (another version of the file, e.g. ``git show main:exercises/kata_gpu.py``), side by side.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = ("import sys, torch; sys.path[:0] = ['exercises', 'solutions/03_causal']; "
         "from causal_attention import CausalAttention; m = CausalAttention(3, 4, 8, 0.0); x = torch.rand(2, 5, 3); "
         "m(x); ")
SIMULATED = ("import kata_gpu\nwith torch.no_grad(), kata_gpu.simulated_gpu():\n"
             "    m.to(kata_gpu.DEVICE)(x.to(kata_gpu.DEVICE)).sum().item()")
COMMANDS = {
    "import torch": "import torch",
    "simulated GPU": BUILD + SIMULATED,
    "meta device": BUILD + "m.to('meta')(x.to('meta'))",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a folder holding another kata_gpu.py to time beside this one")
    options = parser.parse_args()
    repeat, commands = options.repeat, dict(COMMANDS)
    if options.baseline is not None:
        if not (options.baseline / "kata_gpu.py").is_file():
            parser.error(f"--baseline: no kata_gpu.py in {options.baseline}")
        commands["baseline GPU"] = BUILD + f"sys.path.insert(0, {str(options.baseline.resolve())!r})\n" + SIMULATED
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, code in commands.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times["import torch"])
    print(f"{'command':<16} {'median s':>9} {'x import torch':>15}   (median of {repeat}, interleaved)")
    for name, seen in times.items():
        print(f"{name:<16} {statistics.median(seen):9.2f} {statistics.median(seen) / base:15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
