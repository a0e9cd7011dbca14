"""Blind grading (``score-all --blind KEY_FILE``, ``merge --blind KEY_FILE``): students appear by an
opaque id in what students and TAs see, the feedback (its file name and its text) and the class summary.

A student's opaque id is ``student-`` and the first 12 hex digits of HMAC-SHA256(key, submission
folder name): the same folder gets the same id in every run, resume and shard that uses the same key
file, and no one without the key can tell whose folder an id is, not even by hashing the names of a
roster. The key file is created on first use (random, readable by this user alone); keep it with the
grades. Beside the grades CSV, ``<csv stem>-blind-ids.csv`` lists (``student``, ``blind_id``) for
the instructor, who alone sees the CSV: it keeps the folder names, which resume, ``merge`` and
``export`` need.

Left as it is: the grades CSV, the JSON reports (``--json-dir``), the progress lines and the
nbgrader gradebook (the instructor's), ``python -m grader feedback`` (the reports wing, below this one),
and any text of the student's own that names them (a file name in a warning).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from grader.classroom.class_numbers import read_report
from grader.classroom.grades_sheet import REVIEW_COLUMN, ClassSheet, spreadsheet_text
from grader.files import write_atomically

MIN_KEY_CHARACTERS = 32
PREFIX = "student-"
TEXT_COLUMNS = ("message", REVIEW_COLUMN)  # the cells of a row that may name the student's folder


class BlindKeyError(Exception):
    """A key file that cannot be used (one line for the instructor)."""


@dataclass(frozen=True)
class BlindIds:
    key: bytes

    @classmethod
    def from_key_file(cls, path: Path) -> BlindIds:
        """The ids of the key in ``path``, created (random, mode 0600) when there is no such file."""
        path = Path(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        except OSError as err:
            raise BlindKeyError(f"--blind {path}: {err.strerror or err}") from None
        else:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(secrets.token_hex(32) + "\n")
        try:
            key = path.read_bytes().strip()
        except OSError as err:
            raise BlindKeyError(f"--blind {path}: {err.strerror or err}") from None
        if len(key) < MIN_KEY_CHARACTERS:
            raise BlindKeyError(f"--blind {path}: a key of at least {MIN_KEY_CHARACTERS} characters is needed "
                                "(remove the file to have one made)")
        return cls(key)

    def __call__(self, student: str) -> str:
        digest = hmac.new(self.key, student.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
        return PREFIX + digest[:12]

    def text(self, text: str, student: str) -> str:
        """``text`` with the student's folder name replaced by their id."""
        return text.replace(student, self(student)) if student else text

    def sheet(self, sheet: ClassSheet) -> ClassSheet:
        """The class as the summary shows it under blind grading: every student by their id (each one's JSON
        report read here, this run's or ``json_dir``'s, since the files keep the folder names)."""
        rows, reports = {}, {}
        for student, row in sheet.rows.items():
            shown = self(student)
            rows[shown] = {**row, "student": shown, **{column: self.text(row.get(column, ""), student)
                                                       for column in TEXT_COLUMNS}}
            report = sheet.reports.get(student)
            if report is None and sheet.json_dir is not None:
                report = read_report(Path(sheet.json_dir), student)
            if report is not None:
                reports[shown] = report
        return ClassSheet(sheet.csv_path, rows, reports, None)

    def write_ids(self, sheet: ClassSheet) -> list[Path]:
        """``<csv stem>-blind-ids.csv`` beside the CSV: each student's folder name and id, for the instructor."""
        path = Path(sheet.csv_path).with_name(f"{Path(sheet.csv_path).stem}-blind-ids.csv")
        rows = [{"student": student, "blind_id": self(student)} for student in sorted(sheet.rows)]
        write_atomically(path, spreadsheet_text(["student", "blind_id"], rows), new_mode=0o600)
        return [path]
