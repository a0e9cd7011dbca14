"""Blind grading in the class-level outputs (``score-all --blind KEY_FILE``, ``merge --blind KEY_FILE``):
the class summary gets every student by their opaque id (grader/blind_ids.py), and the instructor, beside
the grades CSV, ``<csv stem>-blind-ids.csv``: (``student``, ``blind_id``) for each folder. The instructor
alone sees the CSV: it keeps the folder names, which resume, ``merge`` and ``export`` need.

Left as it is: the grades CSV, the JSON reports (``--json-dir``), the similarity report, the progress
lines and the nbgrader gradebook (the instructor's), and any text of the student's own that names them
(a file name in a warning).
"""

from __future__ import annotations

from pathlib import Path

from grader.blind_ids import BlindIds
from grader.classroom.class_numbers import read_report
from grader.classroom.flags import row_flags
from grader.classroom.grades_sheet import FLAGS_COLUMN, OVERRIDES_COLUMN, REVIEW_COLUMN, ClassSheet, spreadsheet_text
from grader.files import write_atomically

TEXT_COLUMNS = ("message", REVIEW_COLUMN, OVERRIDES_COLUMN)  # the cells of a row that may name the student's folder


def blind_sheet(ids: BlindIds, sheet: ClassSheet) -> ClassSheet:
    """The class as the summary shows it under blind grading: every student by their id (each one's JSON
    report read here, this run's or ``json_dir``'s, since the files keep the folder names), and no
    submissions folder (its folders are named after the students: the summary's similarity section,
    which would name them, is left out; the similarity report, the instructor's, gets the real sheet)."""
    rows, reports = {}, {}
    for student, row in sheet.rows.items():
        shown = ids(student)
        rows[shown] = {**row, "student": shown, **{column: ids.text(row.get(column, ""), student)
                                                   for column in TEXT_COLUMNS}}
        report = sheet.reports.get(student)
        if report is None and sheet.json_dir is not None:
            report = read_report(Path(sheet.json_dir), student)
        if report is not None:
            reports[shown] = report
        if row.get(FLAGS_COLUMN):  # again from the blinded cells: "not graded: <message>" names the folder
            rows[shown][FLAGS_COLUMN] = "; ".join(row_flags(rows[shown], report))
    return ClassSheet(sheet.csv_path, rows, reports, None)


def write_blind_ids(ids: BlindIds, sheet: ClassSheet) -> list[Path]:
    """``<csv stem>-blind-ids.csv`` beside the CSV: each student's folder name and id, for the instructor."""
    path = Path(sheet.csv_path).with_name(f"{Path(sheet.csv_path).stem}-blind-ids.csv")
    rows = [{"student": student, "blind_id": ids(student)} for student in sorted(sheet.rows)]
    write_atomically(path, spreadsheet_text(["student", "blind_id"], rows), new_mode=0o600)
    return [path]
