#!/usr/bin/env bash
# Benchmark: the README's commands (.ci/run: a fresh install, then `python -m pytest`) on fresh clones
# of two commits, interleaved, as CI runs them (issue 25: "a fresh clone's python -m pytest under 3 minutes").
#
#     bash benchmarks/suite_time.sh BASELINE [CANDIDATE [ROUNDS]]
#
# CANDIDATE defaults to HEAD, ROUNDS to 2. Each round clones this repository twice into a temporary
# folder, with the shared folder beside each clone as CI has it, checks out BASELINE in one and
# CANDIDATE in the other, and runs .ci/run in each, one after the other. It prints each run's commit and
# pytest's closing line (the suite's own seconds, without the install). Run it with nothing else running:
# this machine's speed moves from hour to hour, so only runs of one invocation compare.
set -euo pipefail
cd "$(dirname "$0")/.."
baseline=$(git rev-parse --short "${1:?usage: bash benchmarks/suite_time.sh BASELINE [CANDIDATE [ROUNDS]]}")
candidate=$(git rev-parse --short "${2:-HEAD}")
rounds=${3:-2}
shared=$(cd .. && pwd)/shared
for _ in $(seq "$rounds"); do
    for rev in "$baseline" "$candidate"; do
        tmp=$(mktemp -d)
        git clone -q . "$tmp/main"
        git -C "$tmp/main" checkout -q "$rev"
        ln -s "$shared" "$tmp/shared"
        line=$(cd "$tmp/main" && CI=true bash .ci/run 2>&1 | grep -E "[0-9]+ (passed|failed)" | tail -1 || true)
        echo "$rev ${line:-(no closing line from pytest)}"
        rm -rf "$tmp"
    done
done
