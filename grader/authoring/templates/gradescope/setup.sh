#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (Ubuntu with Python 3);
# the zip's content is in /autograder/source. Written by grader.authoring.gradescope_bundle.build_bundle.
set -euo pipefail

apt-get update -qq
# python3-pip for the installs below; bubblewrap for the grader's sandbox (where the container allows
# namespaces; Gradescope's usually does not, and the grader then isolates each student by a uid of
# its own, as root without user namespaces, and says so in its report: grader/sandbox/modes.py).
apt-get install -y -qq python3 python3-pip bubblewrap >/dev/null

# Newer Ubuntu images mark the system Python as externally managed; this image is ours alone.
export PIP_BREAK_SYSTEM_PACKAGES=1
# Gradescope has no GPU: the CPU build installs in seconds (the default wheel pulls gigabytes of CUDA).
pip3 install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
# The project alone (torch, pytest, pytest-timeout): grading needs nothing else. nbgrader, Jupyter
# and matplotlib are extras (instructor, view, summary, dev) that the image never installs.
pip3 install /autograder/source
# Fail the image build here, not every student's run later.
python3 -c "import torch, grader.cli"
