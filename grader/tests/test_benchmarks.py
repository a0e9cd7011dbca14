"""benchmarks/run.py: a smoke run (``--quick --skip-nbgrader``) writes the table with every row and numeric ratios.

The figures themselves are not judged here (they depend on the machine and its load); only that every
command ran as it should and the table is complete.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXPECTED_ROWS = ["import-torch", "student-pass", "student-fail", "score-auto", "score-none", "pytest-impl",
                 "score-all", "in-process-floor", "pytest-impl-each"]

pytestmark = pytest.mark.slow  # python -m pytest -m 'not slow' leaves it out; CI runs it


def _table(text: str) -> dict[str, dict[str, str]]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == len(header), line
        rows[cells[0]] = dict(zip(header, cells))
    return rows


@pytest.mark.timeout(600)
def test_quick_benchmark_writes_the_table(tmp_path: Path):
    out = tmp_path / "results.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--skip-nbgrader", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=580,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = out.read_text()
    assert text == proc.stdout
    assert "- machine: " in text and "nproc " in text and "torch " in text
    assert "load average" in text and "at end" in text
    rows = _table(text)
    assert list(rows) == EXPECTED_ROWS
    for key, row in rows.items():
        for column in ("s / submission", "CPU s / submission", "machine CPU s / submission", "× import torch"):
            value = float(row[column])
            assert math.isfinite(value) and value > 0, (key, column, value)
        if key != "import-torch":
            assert math.isfinite(float(row["× baseline"])) and row["baseline"] in rows, (key, row)
    assert float(rows["import-torch"]["× import torch"]) == 1.0
    assert rows["score-all"]["per"] == rows["in-process-floor"]["per"] == rows["pytest-impl-each"]["per"] == "3"
    assert "PASS: score-all CSV has 3 rows" in text, text
    for target in ("grader score (sandbox auto", "grader score --sandbox none", "score-all throughput"):
        assert any(line.startswith(("- PASS: ", "- FAIL: ")) and target in line and line.endswith("x")
                   for line in text.splitlines()), target
    assert any(line.startswith("- info: the in-process floor's throughput") and line.endswith("x")
               for line in text.splitlines()), text
    assert "ERROR" not in text
