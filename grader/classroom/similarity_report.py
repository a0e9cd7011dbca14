"""The class's similarity report: every module of the rubric compared across a class's submissions
(grader/classroom/similarity.py says how), written as a Markdown file and a CSV, and as a section of the
class summary.

- ``python -m grader similarity SUBS --out DIR`` writes ``DIR/similarity.md`` and ``DIR/similarity.csv``
  (grader/classroom/commands.py declares it);
- after ``score-all``, one of the class-level outputs (grader/classroom/class_outputs.py) writes
  ``<csv stem>-similarity.md`` and ``.csv`` beside the grades CSV, over the students of the CSV, and the
  class summary lists the pairs (:func:`summary_section`). ``merge`` knows no submissions folder, so it
  writes none: the command does, on the whole class.

Submissions are found as score-all finds them (grader.classroom.roster.list_students, then
grader.grading.intake.locate_submission into a scratch folder of ours), and each module file is read as
the bundle reads one (grader.sandbox.bundle.read_module_file: a regular file, never through a link, at
most 1 MB), then compared on its first :data:`MAX_COMPARED_BYTES`. Nothing is imported or run. Student
names and their code are shown escaped (grader.safe_text); the CSV goes through
grader.classroom.grades_sheet.spreadsheet_text.
"""

from __future__ import annotations

import html
import re
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from grader.classroom.grades_sheet import HASH_COLUMN, ClassSheet, spreadsheet_text
from grader.classroom.roster import list_students
from grader.classroom.similarity import THRESHOLD, Fingerprints, Pair, every_kgram, fingerprints, similar_pairs
from grader.files import is_real_dir, write_atomically
from grader.grading.intake import SubmissionError, locate_submission
from grader.rubric import EXERCISES_DIR, load_rubric
from grader.safe_text import escape_controls, escape_line
from grader.sandbox.bundle import read_module_file

MAX_COMPARED_BYTES = 64 * 1024  # of one module file: a module is a few kB; padding costs no time
MAX_EXCERPT_LINES = 40  # of one side of a pair, in the Markdown file
SUMMARY_ROWS = 20  # pairs listed in the class summary; the file has them all
CSV_COLUMNS = ["module", "student_a", "student_b", "similarity", "shared_fingerprints", "lines_a", "lines_b"]
SAYS = ("Pairs of submissions whose code for a module is alike beyond what the stub and the documents give "
        "(identifiers and literals normalized, comments and docstrings left out, functions in any order; "
        "docs/class-grading.md, \"Similar submissions\"). A pair is a place to look, not a verdict.")


@dataclass
class ClassSimilarity:
    """A class compared: the pairs per exercise id (every module of the rubric), the texts compared of
    the students in a pair, and notes on what could not be read."""

    threshold: float
    students: int
    pairs: dict[str, list[Pair]] = field(default_factory=dict)
    texts: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, exercise id) -> text
    notes: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(pairs) for pairs in self.pairs.values())


@lru_cache(maxsize=1)
def discounted() -> frozenset[int]:
    """The k-grams of every stub and of the documents' text (exercises/documents/*.txt)."""
    texts = [ex.stub_file.read_text(encoding="utf-8") for ex in load_rubric().exercises.values()]
    texts += [doc.read_text(encoding="utf-8") for doc in sorted((EXERCISES_DIR / "documents").glob("*.txt"))]
    return frozenset(every_kgram(texts))


def read_modules(student: str, path: Path, notes: list[str]) -> dict[str, str]:
    """{exercise id: the text compared} of ``student``'s submission at ``path`` (a folder or a zip, in any
    layout score-all grades); what is left out goes into ``notes``, escaped."""
    shown = escape_line(student)
    texts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kata-similarity-") as scratch:
        try:
            root = locate_submission(path, Path(scratch))
        except SubmissionError as err:
            said = str(err).replace(escape_line(str(path)), "the submission")  # no absolute path in the report
            notes.append(f"{shown}: not compared: {escape_line(said)}")
            return texts
        for ex_id, ex in load_rubric().exercises.items():
            file = root / ex.group / f"{ex.module}.py"
            if not is_real_dir(root / ex.group) or not (file.exists() or file.is_symlink()):
                continue
            skipped: list[str] = []
            data = read_module_file(file, f"{ex.group}/{ex.module}.py", skipped)
            notes += [f"{shown}: {note}" for note in skipped]
            if data is not None:
                if len(data) > MAX_COMPARED_BYTES:
                    notes.append(f"{shown}: {ex.group}/{ex.module}.py: compared on its first {MAX_COMPARED_BYTES} bytes")
                texts[ex_id] = data[:MAX_COMPARED_BYTES].decode("utf-8", "replace")
    return texts


def compare_class(students: Mapping[str, Path], threshold: float = THRESHOLD) -> ClassSimilarity:
    """Compare every module of the rubric across ``students`` (name -> submission path)."""
    result = ClassSimilarity(threshold, len(students))
    prints: dict[str, dict[str, Fingerprints]] = {ex_id: {} for ex_id in load_rubric().exercises}
    for student, path in sorted(students.items()):
        for ex_id, text in read_modules(student, path, result.notes).items():
            prints[ex_id][student] = fingerprints(text)
            result.texts[student, ex_id] = text
    for ex_id, class_prints in prints.items():
        result.pairs[ex_id] = similar_pairs(ex_id, class_prints, discounted(), threshold)
    in_pairs = {(s, p.module) for pairs in result.pairs.values() for p in pairs for s in p.students}
    result.texts = {key: text for key, text in result.texts.items() if key in in_pairs}
    return result


# --- the files ------------------------------------------------------------------------------------------


def _ranges(ranges: tuple[tuple[int, int], ...]) -> str:
    return "; ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def _md(text: str) -> str:
    return " ".join(escape_line(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _excerpt(text: str, ranges: tuple[tuple[int, int], ...]) -> list[str]:
    """The lines of ``ranges`` in ``text``, numbered, in a fence no line of it can close."""
    lines = text.splitlines()
    shown = [f"{n:>4}  {escape_controls(lines[n - 1])}" if n else "   ..." for i, (a, b) in enumerate(ranges)
             for n in ([0] if i else []) + list(range(a, min(b, len(lines)) + 1))]
    if len(shown) > MAX_EXCERPT_LINES:
        shown = shown[:MAX_EXCERPT_LINES] + [f"      ... ({len(shown) - MAX_EXCERPT_LINES} more matching lines)"]
    ticks = max([3] + [len(run) + 1 for line in shown for run in _backtick_runs(line)])
    return ["`" * ticks, *shown, "`" * ticks]


def _backtick_runs(line: str) -> list[str]:
    return re.findall("`+", line)


def to_markdown(result: ClassSimilarity, title: str) -> str:
    lines = [f"# Similar submissions: {_md(title)}", "", SAYS, "",
             f"{result.students} submissions compared; threshold {result.threshold:.0%} of the smaller submission's "
             f"fingerprints; pairs at or above it: {result.count}.", ""]
    for ex_id, pairs in result.pairs.items():
        if not pairs:
            continue
        lines += [f"## `{ex_id}`", "", "| students | similarity | shared fingerprints | lines |",
                  "| --- | ---: | ---: | --- |"]
        lines += [f"| {_md(p.students[0])}, {_md(p.students[1])} | {p.similarity:.0%} | {p.shared} | "
                  f"{_ranges(p.lines[0])} / {_ranges(p.lines[1])} |" for p in pairs]
        for pair in pairs:
            lines += ["", f"### {_md(pair.students[0])} and {_md(pair.students[1])} ({pair.similarity:.0%})"]
            for student, ranges in zip(pair.students, pair.lines):
                lines += ["", f"{_md(student)}, `{ex_id}`, lines {_ranges(ranges)}:", "",
                          *_excerpt(result.texts.get((student, ex_id), ""), ranges)]
        lines.append("")
    if not result.count:
        lines += ["No pair at or above the threshold.", ""]
    if result.notes:
        lines += ["## Not compared", "", *[f"- {_md(note)}" for note in result.notes], ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_csv(result: ClassSimilarity) -> str:
    rows = [{"module": p.module, "student_a": p.students[0], "student_b": p.students[1],
             "similarity": f"{p.similarity:.3f}", "shared_fingerprints": p.shared,
             "lines_a": _ranges(p.lines[0]), "lines_b": _ranges(p.lines[1])}
            for pairs in result.pairs.values() for p in pairs]
    return spreadsheet_text(CSV_COLUMNS, rows)


def write_report(result: ClassSimilarity, md_path: Path, title: str) -> list[Path]:
    """Write ``md_path`` and the CSV beside it (same name, ``.csv``); the two paths."""
    csv_path = md_path.with_suffix(".csv")
    write_atomically(md_path, to_markdown(result, title))
    write_atomically(csv_path, to_csv(result))
    return [md_path, csv_path]


# --- the class-level output and the summary's section ------------------------------------------------


def report_path(csv_path: Path) -> Path:
    """``<csv stem>-similarity.md`` beside the grades CSV (its CSV: ``.csv``)."""
    return Path(csv_path).with_name(f"{Path(csv_path).stem}-similarity.md")


def sheet_similarity(sheet: ClassSheet) -> ClassSimilarity | None:
    """The similarity of the sheet's students in its submissions folder (None: the sheet has no folder,
    as after ``merge``). The last class is remembered, by its students' submission hashes: the summary
    and the report compare once."""
    if sheet.submissions is None or not sheet.submissions.is_dir():
        return None
    hashes = tuple(sorted((student, row.get(HASH_COLUMN, "")) for student, row in sheet.rows.items()))
    return _similarity_of(sheet.submissions, hashes)


@lru_cache(maxsize=1)
def _similarity_of(folder: Path, hashes: tuple[tuple[str, str], ...]) -> ClassSimilarity:
    students, _ = list_students(folder)
    names = {student for student, _ in hashes}
    return compare_class({name: path for name, path in students.items() if name in names})


def write_similarity(sheet: ClassSheet) -> list[Path]:
    """The class-level output: the report beside the sheet's CSV (nothing without a submissions folder)."""
    result = sheet_similarity(sheet)
    return [] if result is None else write_report(result, report_path(sheet.csv_path), sheet.csv_path.name)


def class_pairs(sheet: ClassSheet) -> list[Pair]:
    """The pairs of the sheet's class at or above the threshold (none without a folder, or when comparing
    fails: the report's own output says why)."""
    try:
        result = sheet_similarity(sheet)
    except Exception:
        return []
    return [] if result is None else [p for pairs in result.pairs.values() for p in pairs]


def summary_section(sheet: ClassSheet) -> tuple[list[str], list[str]]:
    """The class summary's "Similar submissions" section: (Markdown lines, HTML parts), escaped; both
    empty when the sheet has no submissions folder."""
    try:
        result = sheet_similarity(sheet)
    except Exception as err:  # the summary is written all the same; the report's own output warns why
        said = f"Not compared ({type(err).__name__}): see score-all's warnings."
        return ["## Similar submissions", "", said], [f"<h2>Similar submissions</h2><p>{_html(said)}</p>"]
    if result is None:
        return [], []
    pairs = sorted((p for ps in result.pairs.values() for p in ps), key=lambda p: (-p.similarity, p.module, p.students))
    name = report_path(sheet.csv_path).name
    said = (f"{SAYS} Threshold {result.threshold:.0%}; each pair's matching lines: {name} "
            f"(and its .csv).") if pairs else f"No pair at or above the threshold ({result.threshold:.0%})."
    more = f"... and {len(pairs) - SUMMARY_ROWS} more in {name}" if len(pairs) > SUMMARY_ROWS else ""
    rows = [(p.module, f"{p.students[0]}, {p.students[1]}", f"{p.similarity:.0%}") for p in pairs[:SUMMARY_ROWS]]
    md = ["## Similar submissions", "", said, ""]
    if rows:
        md += ["| module | students | similarity |", "| --- | --- | ---: |"]
        md += [f"| `{module}` | {_md(students)} | {share} |" for module, students, share in rows]
        md += [more] if more else []
    e = _html
    parts = [f"<h2>Similar submissions</h2><p>{e(said)}</p>"]
    if rows:
        parts.append("<table><tr><th>module</th><th>students</th><th>similarity</th></tr>")
        parts += [f'<tr><td><code>{e(m)}</code></td><td>{e(s)}</td><td class="n">{e(v)}</td></tr>' for m, s, v in rows]
        parts.append("</table>" + (f"<p>{e(more)}</p>" if more else ""))
    return md, parts


def _html(text: str) -> str:
    return html.escape(escape_line(text))


# --- the command -------------------------------------------------------------------------------------------
