"""Blind grading's opaque ids: a student shown as ``student-<12 hex digits>`` instead of their submission
folder's name, in what students and TAs see (``score-all``, ``merge`` and ``feedback`` take
``--blind KEY_FILE``; docs/class-grading.md, "Blind grading").

An id is HMAC-SHA256(key, folder name), cut to 12 hex digits: the same folder gets the same id in every
run, resume, shard and command that uses the same key file, and no one without the key can tell whose
folder an id is, not even by hashing the names of a roster. The key file is created on first use
(random, readable by this user alone). On the ground floor because the reports wing (``feedback``) and
the classroom wing (``score-all``, ``merge``: grader/classroom/blind_grading.py) both name students by it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from grader.commands import UsageError

MIN_KEY_CHARACTERS = 32
PREFIX = "student-"


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


def add_blind_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--blind KEY_FILE``, where ``what`` (``the feedback names``) says what it changes."""
    parser.add_argument("--blind", type=Path, metavar="KEY_FILE",
                        help=f"blind grading: {what} each student by an opaque id made with this key (created when "
                             "missing; keep it, and use the same one for every shard, the merge and feedback)")


def blind_ids(args: argparse.Namespace) -> BlindIds | None:
    """The ids of ``--blind`` (None: not asked for); UsageError for a key file that cannot be used."""
    try:
        return BlindIds.from_key_file(args.blind) if args.blind is not None else None
    except BlindKeyError as err:
        raise UsageError(str(err)) from None
