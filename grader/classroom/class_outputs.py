"""The class-level outputs: the files written from a whole class's grades, beside the grades CSV, at the
end of every ``score-all`` and ``merge`` (today the class summary and the similarity report, which needs
the sheet's submissions folder; an LMS's grade-import file is written on demand instead, by
``python -m grader export``: grader/classroom/lms_export.py).

The one extension point for them. Each output is a function ``write(sheet) -> [paths written]``
that gets a :class:`grader.classroom.grades_sheet.ClassSheet`: the CSV's rows as plain text (the grades
sheet takes the CSV's escaping off as it reads them), this run's JSON reports and the ``--json-dir``
holding the earlier ones. An output that writes a spreadsheet writes it with
:func:`grader.classroom.grades_sheet.spreadsheet_text`, which escapes every cell once: no output
escapes, or forgets to escape, a student's name itself. Adding one (docs/maintainers.md, "Add a
class-level output"): its module in this folder, and one line in :data:`CLASS_OUTPUTS`.

Under blind grading (``--blind KEY_FILE``) the outputs of :data:`SEEN_BY_TAS` get the sheet with every
student by their opaque id (grader/classroom/blind_grading.py); the others, the instructor's, the real one.

The grades are written before the outputs run: an output that fails is a warning naming it, never an
error that would hide the grades, and the others are written all the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from grader.blind_ids import BlindIds
from grader.classroom import class_summary, similarity_report
from grader.classroom.blind_grading import blind_sheet, write_blind_ids
from grader.classroom.grades_sheet import ClassSheet, read_class

# name (as the warnings say it) -> write(sheet) -> the files written
CLASS_OUTPUTS: dict[str, Callable[[ClassSheet], list[Path]]] = {
    "the class summary": class_summary.write_summary,
    "the similarity report": similarity_report.write_similarity,
}
# The outputs that name students by their opaque ids under blind grading; the similarity report, the
# instructor's (an integrity case needs the folders), keeps the folder names.
SEEN_BY_TAS = frozenset({"the class summary"})


def write_class_outputs(csv_path: Path, reports: dict[str, dict[str, Any]], warnings: list[str],
                        json_dir: Path | None = None, submissions: Path | None = None,
                        blind: BlindIds | None = None) -> list[Path]:
    """Hand the grades CSV at ``csv_path`` (with this run's ``reports``, ``json_dir``'s and the
    ``submissions`` folder) to every output of :data:`CLASS_OUTPUTS`; the files they wrote. What fails is
    appended to ``warnings``. Under blind grading (``blind``), the outputs of :data:`SEEN_BY_TAS` get the
    students by their opaque ids (grader/classroom/blind_grading.py), and the instructor a list of whose
    id is whose."""
    try:
        sheet = read_class(csv_path, reports, json_dir, submissions)
        written: list[Path] = []
        shown = sheet
        if blind is not None:
            written += write_blind_ids(blind, sheet)
            shown = blind_sheet(blind, sheet)
    except Exception as err:  # the grades are written: say why nothing more is
        warnings.append(f"no class-level output: {type(err).__name__}: {err}")
        return []
    for name, write in CLASS_OUTPUTS.items():
        try:
            written += write(shown if name in SEEN_BY_TAS else sheet)
        except Exception as err:
            warnings.append(f"{name} failed: {type(err).__name__}: {err}")
    return written
