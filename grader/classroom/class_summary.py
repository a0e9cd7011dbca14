"""The class summary an instructor reads after ``score-all``, to tell what to teach next: beside
``grades.csv``, ``grades-summary.md`` and ``grades-summary.html``.

    write_summary(read_class(Path("grades.csv"), reports, json_dir))   # reports: {student: JSON report} of this run

One of the class-level outputs (grader/classroom/class_outputs.py): score-all and merge write it at the end.

The numbers (grader/classroom/class_numbers.py) cover the whole CSV, earlier runs of a resumed batch
included, with the students' JSON reports from ``reports`` and ``json_dir``: per exercise (and the
GPU-run check) how many students got full, partial, wrong (attempted, nothing earned) and not started;
the totals and their histogram; the hidden tests failed most among the students who attempted them;
the students whose grading failed; and a note where some graded student had no report to read.

The HTML page embeds its plots as PNG data URIs (no file beside it to lose). matplotlib is an
optional extra (``pip install -e ".[summary]"``); without it both files are written all the same,
the page without plots and with a line saying how to get them.

Student names and the CSV's messages are untrusted: their control characters, terminal escapes and
bidi overrides are shown escaped (grader.safe_text) in both files. No absolute path is shown: the CSV
is named by its name, and the messages' paths are made relative (class_numbers.without_absolute_paths).
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any, Sequence

from grader.files import write_atomically
from grader.classroom.class_numbers import ClassSummary, summarize_class
from grader.classroom.grades_sheet import ClassSheet
from grader.classroom.similarity_report import class_pairs, summary_section
from grader.safe_text import escape_controls

NO_MATPLOTLIB = ('matplotlib is not installed, so this summary has no plots: '
                 'pip install -e ".[summary]" (or pip install matplotlib) adds them')
# The exercise table's columns and the plot's bars: (heading, ExerciseCounts field, colour).
COLUMNS = (("full", "full", "#59a14f"), ("partial", "partial", "#edc948"), ("wrong", "wrong", "#e15759"),
           ("not started", "not_started", "#9c9c9c"), ("no points, no report", "unreported", "#d7c9b8"),
           ("skipped", "skipped", "#e6e6e6"))
OPTIONAL_COLUMNS = ("unreported", "skipped")  # shown only where some student is in them
REVIEW_SAYS = ("code that could hide operations from the trace of the from-scratch rule (docs/grading.md, \"Library "
               "shortcuts\"): the grades stand as graded; a person decides")
OVERRIDES_SAY = ("changed by the instructor's overrides (--overrides): the totals above hold them; each says what it "
                 "changed (old -> new), by how much, who decided and why")
LATE_SAY = ("late by the late policy (--late-policy): the totals above hold the penalty (hours from the student's "
            "own due date, extensions included); an override applies after it")
LOOK_SAYS = ("who needs a person to look, and why (the CSV's flags column; similarity from the report below): a flag "
             "changes no grade")
FAILED_MOST_SAYS = ("each test counted among the students who attempted its exercise (those who did not start "
                    "it are left out), and only where failing it cost points")


def _decided(summary: ClassSummary) -> list[tuple[str, str, str, dict[str, str]]]:
    """The sections of what the instructor decided, where some student has it: (title, what it says, the
    heading of its second column, student -> line)."""
    sections = [("Late submissions", LATE_SAY, "how late, the penalty", summary.late),
                ("Overrides", OVERRIDES_SAY, "what was applied", summary.overrides)]
    return [section for section in sections if section[3]]


def _columns(summary: ClassSummary) -> list[tuple[str, str, str]]:
    return [column for column in COLUMNS if column[1] not in OPTIONAL_COLUMNS
            or any(getattr(counts, column[1]) for counts in summary.exercises.values())]


def _stats(summary: ClassSummary) -> str:
    values = sorted(summary.totals.values())
    if not values:
        return "no student graded"
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return (f"{n} graded, not graded: {len(summary.errors)}; mean {sum(values) / n:.1f}, median {median:g}, "
            f"min {values[0]:g}, max {values[-1]:g} (out of {summary.max_score:g})")


def _failed_most_from(summary: ClassSummary) -> str:
    return f"From the graded students' JSON reports ({summary.reports_read} read): {FAILED_MOST_SAYS}."


def _md_cell(text: str) -> str:
    return " ".join(escape_controls(str(text)).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def to_markdown(summary: ClassSummary, plots_note: str = "", similar: Sequence[str] = ()) -> str:
    lines = [f"# Class summary: {_md_cell(summary.csv_name)}", "", _stats(summary), ""]
    lines += [line for note in [plots_note, *summary.notes] if note for line in (f"_{_md_cell(note)}_", "")]
    if summary.look:
        lines += ["## Needs a look", "", LOOK_SAYS, "", "| student | why |", "| --- | --- |"]
        lines += [f"| {_md_cell(s)} | {_md_cell(why)} |" for s, why in sorted(summary.look.items())] + [""]
    columns = _columns(summary)
    lines += ["## Exercises", "", "| exercise | " + " | ".join(c[0] for c in columns) + " |",
              "| --- |" + " ---: |" * len(columns)]
    for ex_id, counts in summary.exercises.items():
        lines.append(f"| `{ex_id}` | " + " | ".join(str(getattr(counts, c[1])) for c in columns) + " |")
    lines += ["", "## Totals", "", "```"]
    top = max((count for _, _, count in summary.bins), default=0)
    for low, high, count in summary.bins:
        bar = "#" * (round(40 * count / top) if top else 0)
        lines.append(f"{low:>3g}-{high:<3g} {count:>4} {bar}")
    lines += ["```", "", "## Hidden tests failed most", "", _failed_most_from(summary), ""]
    if summary.failed_tests:
        lines += ["| test | students failing | of those who attempted it |", "| --- | ---: | ---: |"]
        lines += [f"| `{_md_cell(name)}` | {count} | {attempted} |" for name, count, attempted in summary.failed_tests]
    else:
        lines.append("none")
    if summary.review:
        lines += ["", "## For review", "", REVIEW_SAYS, "", "| student | what was found |", "| --- | --- |"]
        lines += [f"| {_md_cell(s)} | {_md_cell(what)} |" for s, what in sorted(summary.review.items())]
    for title, says, heading, items in _decided(summary):
        lines += ["", f"## {title}", "", says, "", f"| student | {heading} |", "| --- | --- |"]
        lines += [f"| {_md_cell(s)} | {_md_cell(what)} |" for s, what in sorted(items.items())]
    if summary.errors:
        lines += ["", "## Not graded", "", "| student | why |", "| --- | --- |"]
        lines += [f"| {_md_cell(s)} | {_md_cell(why)} |" for s, why in sorted(summary.errors.items())]
    lines += ["", *similar] if similar else []  # similarity_report.summary_section: escaped there
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
    for label, attribute, colour in _columns(summary):
        values = [getattr(summary.exercises[i], attribute) for i in ids]
        bx.barh(ids, values, left=left, color=colour, label=label)
        left = [a + b for a, b in zip(left, values)]
    bx.invert_yaxis()
    bx.set_xlabel("students")
    bx.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    bx.set_title("Points per exercise")
    return [("Totals", png(hist)), ("Per exercise", png(bars))]


def _html(text: object, quote: bool = True) -> str:
    return html.escape(escape_controls(str(text)), quote)


def _html_tables(summary: ClassSummary) -> list[str]:
    """The page's tables: exercises, totals, hidden tests failed most, for review, overrides, not graded."""
    e, columns = _html, _columns(summary)
    parts = ["<h2>Exercises</h2>", "<table><tr><th>exercise</th>" + "".join(f"<th>{e(c[0])}</th>" for c in columns)
             + "</tr>"]
    parts += [f"<tr><td><code>{e(ex_id)}</code></td>" + "".join(
        f'<td class="n">{getattr(counts, c[1])}</td>' for c in columns) + "</tr>"
        for ex_id, counts in summary.exercises.items()]
    parts.append("</table>")
    parts += ["<h2>Totals</h2>", "<table><tr><th>points</th><th>students</th></tr>"]
    parts += [f'<tr><td>{low:g}&ndash;{high:g}</td><td class="n">{count}</td></tr>' for low, high, count in summary.bins]
    parts.append("</table>")
    parts.append(f"<h2>Hidden tests failed most</h2><p>{e(_failed_most_from(summary))}</p>")
    if summary.failed_tests:
        parts.append("<table><tr><th>test</th><th>students failing</th><th>of those who attempted it</th></tr>")
        parts += [f'<tr><td><code>{e(name)}</code></td><td class="n">{count}</td><td class="n">{attempted}</td></tr>'
                  for name, count, attempted in summary.failed_tests]
        parts.append("</table>")
    else:
        parts.append("<p>none</p>")
    if summary.review:
        parts.append(f"<h2>For review</h2><p>{e(REVIEW_SAYS)}</p><table><tr><th>student</th><th>what was found</th></tr>")
        parts += [f"<tr><td>{e(s)}</td><td>{e(what)}</td></tr>" for s, what in sorted(summary.review.items())]
        parts.append("</table>")
    for title, says, heading, items in _decided(summary):
        parts.append(f"<h2>{e(title)}</h2><p>{e(says)}</p><table><tr><th>student</th><th>{e(heading)}</th></tr>")
        parts += [f"<tr><td>{e(s)}</td><td>{e(what)}</td></tr>" for s, what in sorted(items.items())]
        parts.append("</table>")
    if summary.errors:
        parts.append("<h2>Not graded</h2><table><tr><th>student</th><th>why</th></tr>")
        parts += [f"<tr><td>{e(s)}</td><td>{e(why)}</td></tr>" for s, why in sorted(summary.errors.items())]
        parts.append("</table>")
    return parts


def to_html(summary: ClassSummary, plots: list[tuple[str, str]] | None, similar: Sequence[str] = ()) -> str:
    e = _html
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Class summary: {e(summary.csv_name)}</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em}"
             "td.n{text-align:right}code{font-size:90%}.note{color:#a33}img{max-width:100%}</style>",
             "</head><body>", f"<h1>Class summary: {e(summary.csv_name)}</h1>", f"<p>{e(_stats(summary))}</p>"]
    parts += [f'<p class="note">{e(note, quote=False)}</p>' for note in summary.notes]
    if summary.look:
        parts.append(f"<h2>Needs a look</h2><p>{e(LOOK_SAYS)}</p><table><tr><th>student</th><th>why</th></tr>")
        parts += [f"<tr><td>{e(s)}</td><td>{e(why)}</td></tr>" for s, why in sorted(summary.look.items())]
        parts.append("</table>")
    if plots is None:
        parts.append(f'<p class="note">{e(NO_MATPLOTLIB, quote=False)}</p>')
    else:
        parts += [f'<figure><img alt="{e(title)}" src="{uri}"></figure>' for title, uri in plots]
    parts += [*_html_tables(summary), *similar, "</body></html>"]
    return "\n".join(parts) + "\n"


def summary_paths(csv_path: Path) -> tuple[Path, Path]:
    """``<csv stem>-summary.html`` and ``.md`` beside the CSV."""
    csv_path = Path(csv_path)
    return (csv_path.with_name(f"{csv_path.stem}-summary.html"), csv_path.with_name(f"{csv_path.stem}-summary.md"))


def write_summary(sheet: ClassSheet) -> list[Path]:
    """Write the summary beside the sheet's CSV; returns [the HTML page, the Markdown file]. The sheet's
    ``json_dir`` (score-all's --json-dir), where every graded student's report lies, lets a resumed run's
    summary cover the students of earlier runs too."""
    summary = summarize_class(sheet)
    for pair in class_pairs(sheet):  # similar to another submission: a reason to look too
        for me, other in (pair.students, pair.students[::-1]):
            said = f"similar to {other} in {pair.module} ({pair.similarity:.0%})"
            summary.look[me] = f"{summary.look[me]}; {said}" if summary.look.get(me) else said
    plots = _plots(summary)
    html_path, md_path = summary_paths(sheet.csv_path)
    similar_md, similar_html = summary_section(sheet)  # the similarity report's pairs (none without a folder)
    write_atomically(html_path, to_html(summary, plots, similar_html))
    write_atomically(md_path, to_markdown(summary, "" if plots is not None else NO_MATPLOTLIB, similar_md))
    return [html_path, md_path]
