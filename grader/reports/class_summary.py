"""The class summary an instructor reads after ``score-all``: beside ``grades.csv``,
``grades-summary.md`` and ``grades-summary.html``.

    write_summary(Path("grades.csv"), reports)   # reports: {student: JSON report} of this run

From the CSV (every row, earlier runs and error rows included): per exercise (and the GPU-run
check) how many students got full, partial and no points; the totals and their histogram; the
students whose grading failed. From the JSON reports of this run: the hidden tests failed most.

The HTML page embeds its plots as PNG data URIs (no file beside it to lose). matplotlib is an
optional extra (``pip install -e ".[summary]"``); without it both files are written all the same,
the page without plots and with a line saying how to get them.

Student names and the CSV's messages are untrusted: their control characters, terminal escapes and
bidi overrides are shown escaped (grader.safe_text) in both files.
"""

from __future__ import annotations

import base64
import csv
import html
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.classroom.grades_sheet import unescaped
from grader.files import write_atomically
from grader.rubric import load_rubric
from grader.safe_text import escape_controls

TOP_FAILED = 15
BIN_WIDTH = 10
NO_MATPLOTLIB = ('matplotlib is not installed, so this summary has no plots: '
                 'pip install -e ".[summary]" (or pip install matplotlib) adds them')


@dataclass
class ExerciseCounts:
    full: int = 0
    partial: int = 0
    none: int = 0
    skipped: int = 0  # the GPU-run check when the run skipped it (its max_score was 0)


@dataclass
class ClassSummary:
    csv_name: str
    max_score: float
    totals: dict[str, float]  # graded students only
    errors: dict[str, str]  # student -> why the grading failed
    exercises: dict[str, ExerciseCounts]  # exercise id (and "gpu_check") -> counts over graded students
    failed_tests: list[tuple[str, int]]  # (test name, students failing it) from this run's reports
    reports_in_run: int
    bins: list[tuple[float, float, int]] = field(default_factory=list)  # (from, to, students)


def _number(cell: str) -> float | None:
    try:
        return float(unescaped(cell))
    except (TypeError, ValueError):
        return None


def summarize_class(csv_path: Path, reports: dict[str, dict[str, Any]]) -> ClassSummary:
    """The numbers of the summary (see the module docstring)."""
    rubric = load_rubric()
    rows: dict[str, dict[str, str]] = {}
    with open(csv_path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            student = unescaped(row.get("student") or "")
            if student:
                rows[student] = row  # a student graded again (--force) counts once: the last row
    totals: dict[str, float] = {}
    errors: dict[str, str] = {}
    exercises = {ex_id: ExerciseCounts() for ex_id in [*rubric.exercises, "gpu_check"]}
    max_score = rubric.max_score
    for student, row in rows.items():
        if unescaped(row.get("status") or "") != "graded":
            errors[student] = unescaped(row.get("message") or "") or "not graded"
            continue
        totals[student] = _number(row.get("score", "")) or 0.0
        row_max = _number(row.get("max_score", ""))
        # a row graded on some exercises only (grader nbgrader: one assignment's) leaves the others empty
        graded_on = [ex_id for ex_id in rubric.exercises if row.get(ex_id, "") != ""]
        exercise_points = sum(rubric.exercises[ex_id].points for ex_id in graded_on)
        for ex_id in [*graded_on, "gpu_check"]:
            counts = exercises[ex_id]
            points = (rubric.exercises[ex_id].points if ex_id in rubric.exercises
                      else (row_max if row_max is not None else max_score) - exercise_points)
            score = _number(row.get(ex_id, "")) or 0.0
            if points <= 0:
                counts.skipped += 1
            elif score >= points - 1e-6:
                counts.full += 1
            elif score > 0:
                counts.partial += 1
            else:
                counts.none += 1
    failures: Counter[str] = Counter()
    for report in reports.values():
        for test in report.get("tests", []):
            if test.get("status") == "failed" and test.get("max_score", 0):
                failures[test["name"]] += 1
    failed = sorted(failures.items(), key=lambda item: (-item[1], item[0]))[:TOP_FAILED]
    row_maxima = [m for student, row in rows.items() if student in totals
                  for m in [_number(row.get("max_score", ""))] if m is not None and m > 0]
    if row_maxima:  # a run with --gpu skip is out of 90, not 100
        max_score = max(row_maxima)
    summary = ClassSummary(Path(csv_path).name, max_score, totals, errors, exercises, failed, len(reports))
    summary.bins = _bins(list(totals.values()), max_score)
    return summary


def _bins(values: list[float], max_score: float) -> list[tuple[float, float, int]]:
    edges = list(range(0, int(max_score) + 1, BIN_WIDTH))
    if edges[-1] < max_score:
        edges.append(int(max_score))
    bins = []
    for i, low in enumerate(edges[:-1]):
        high = edges[i + 1]
        last = i == len(edges) - 2
        bins.append((low, high, sum(1 for v in values if low <= v < high or (last and v >= high))))
    return bins


def _stats(summary: ClassSummary) -> str:
    values = sorted(summary.totals.values())
    if not values:
        return "no student graded"
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return (f"{n} graded, not graded: {len(summary.errors)}; mean {sum(values) / n:.1f}, median {median:g}, "
            f"min {values[0]:g}, max {values[-1]:g} (out of {summary.max_score:g})")


def _md_cell(text: str) -> str:
    return " ".join(escape_controls(str(text)).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def to_markdown(summary: ClassSummary, plots_note: str = "") -> str:
    lines = [f"# Class summary: {_md_cell(summary.csv_name)}", "", _stats(summary), ""]
    if plots_note:
        lines += [f"_{plots_note}_", ""]
    lines += ["## Exercises", "", "| exercise | full | partial | none | skipped |", "| --- | ---: | ---: | ---: | ---: |"]
    for ex_id, c in summary.exercises.items():
        lines.append(f"| `{ex_id}` | {c.full} | {c.partial} | {c.none} | {c.skipped} |")
    lines += ["", "## Totals", "", "```"]
    top = max((count for _, _, count in summary.bins), default=0)
    for low, high, count in summary.bins:
        bar = "#" * (round(40 * count / top) if top else 0)
        lines.append(f"{low:>3g}-{high:<3g} {count:>4} {bar}")
    lines += ["```", "", f"## Hidden tests failed most (from the {summary.reports_in_run} reports of this run)", ""]
    if summary.failed_tests:
        lines += ["| test | students failing |", "| --- | ---: |"]
        lines += [f"| `{_md_cell(name)}` | {count} |" for name, count in summary.failed_tests]
    else:
        lines.append("none")
    if summary.errors:
        lines += ["", "## Not graded", "", "| student | why |", "| --- | --- |"]
        lines += [f"| {_md_cell(s)} | {_md_cell(why)} |" for s, why in sorted(summary.errors.items())]
    return escape_controls("\n".join(lines)) + "\n"


def _plots(summary: ClassSummary) -> list[tuple[str, str]] | None:
    """[(title, PNG data URI)], or None without matplotlib. No pyplot: no global backend state."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None

    def png(fig: Any) -> str:
        FigureCanvasAgg(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

    hist = Figure(figsize=(7, 3.2))
    ax = hist.add_subplot()
    lows = [low for low, _, _ in summary.bins]
    ax.bar(lows, [count for _, _, count in summary.bins], width=[high - low for low, high, _ in summary.bins],
           align="edge", color="#4878a8", edgecolor="white")
    ax.set_xlim(0, summary.max_score)
    ax.set_xlabel("total score")
    ax.set_ylabel("students")
    ax.set_title(f"Totals of {len(summary.totals)} graded students")
    ax.yaxis.get_major_locator().set_params(integer=True)

    ids = list(summary.exercises)
    bars = Figure(figsize=(7, 0.35 * len(ids) + 1.2))
    bx = bars.add_subplot()
    left = [0] * len(ids)
    for label, colour in (("full", "#59a14f"), ("partial", "#edc948"), ("none", "#e15759"), ("skipped", "#bab0ac")):
        values = [getattr(summary.exercises[i], label) for i in ids]
        bx.barh(ids, values, left=left, color=colour, label=label)
        left = [a + b for a, b in zip(left, values)]
    bx.invert_yaxis()
    bx.set_xlabel("students")
    bx.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    bx.set_title("Points per exercise")
    return [("Totals", png(hist)), ("Per exercise", png(bars))]


def _html(text: object, quote: bool = True) -> str:
    return html.escape(escape_controls(str(text)), quote)


def to_html(summary: ClassSummary, plots: list[tuple[str, str]] | None) -> str:
    e = _html
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Class summary: {e(summary.csv_name)}</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em}"
             "td.n{text-align:right}code{font-size:90%}.note{color:#a33}img{max-width:100%}</style>",
             "</head><body>", f"<h1>Class summary: {e(summary.csv_name)}</h1>", f"<p>{e(_stats(summary))}</p>"]
    if plots is None:
        parts.append(f'<p class="note">{e(NO_MATPLOTLIB, quote=False)}</p>')
    else:
        parts += [f'<figure><img alt="{e(title)}" src="{uri}"></figure>' for title, uri in plots]
    parts += ["<h2>Exercises</h2>", "<table><tr><th>exercise</th><th>full</th><th>partial</th><th>none</th>"
              "<th>skipped</th></tr>"]
    for ex_id, c in summary.exercises.items():
        parts.append(f'<tr><td><code>{e(ex_id)}</code></td><td class="n">{c.full}</td><td class="n">{c.partial}</td>'
                     f'<td class="n">{c.none}</td><td class="n">{c.skipped}</td></tr>')
    parts.append("</table>")
    parts += ["<h2>Totals</h2>", "<table><tr><th>points</th><th>students</th></tr>"]
    parts += [f'<tr><td>{low:g}&ndash;{high:g}</td><td class="n">{count}</td></tr>' for low, high, count in summary.bins]
    parts.append("</table>")
    parts.append(f"<h2>Hidden tests failed most</h2><p>from the {summary.reports_in_run} reports of this run</p>")
    if summary.failed_tests:
        parts.append("<table><tr><th>test</th><th>students failing</th></tr>")
        parts += [f'<tr><td><code>{e(name)}</code></td><td class="n">{count}</td></tr>'
                  for name, count in summary.failed_tests]
        parts.append("</table>")
    else:
        parts.append("<p>none</p>")
    if summary.errors:
        parts.append("<h2>Not graded</h2><table><tr><th>student</th><th>why</th></tr>")
        parts += [f"<tr><td>{e(s)}</td><td>{e(why)}</td></tr>" for s, why in sorted(summary.errors.items())]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def summary_paths(csv_path: Path) -> tuple[Path, Path]:
    """``<csv stem>-summary.html`` and ``.md`` beside the CSV."""
    csv_path = Path(csv_path)
    return (csv_path.with_name(f"{csv_path.stem}-summary.html"), csv_path.with_name(f"{csv_path.stem}-summary.md"))


def write_summary(csv_path: Path, reports: dict[str, dict[str, Any]]) -> list[Path]:
    """Write the summary beside ``csv_path``; returns [the HTML page, the Markdown file]."""
    summary = summarize_class(csv_path, reports)
    plots = _plots(summary)
    html_path, md_path = summary_paths(csv_path)
    write_atomically(html_path, to_html(summary, plots))
    write_atomically(md_path, to_markdown(summary, "" if plots is not None else NO_MATPLOTLIB))
    return [html_path, md_path]
