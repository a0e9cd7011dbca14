"""What a student names, prints, raises or sends, against intake, the reports and the codec.

- a ``.py`` of a group folder whose name is not a module name (``x copy.py``, a zip member with a
  newline) is left out with a note, and costs nothing (it made every domain refuse the bundle);
- terminal escapes and bidi overrides in messages, output and names reach no report raw;
- an answer too large to decode cheaply fails that one call, whether the worker's encoder refuses it
  or a hostile worker writes the frame itself;
- a submission folder holding ``submission.zip`` (Gradescope's, when a student uploads the zip the
  README tells them to make) is graded from the zip; an unreadable zip is a one-line error;
- a CSV cell a student names cannot be a spreadsheet formula.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

import grader.sandbox.bundle as bundle
from grader.classroom.grades_sheet import csv_cell, csv_row, read_class, spreadsheet_text, write_grades
from grader.grading.grade import grade
from grader.grading.options import GradeOptions
from grader.grading.intake import SubmissionError, locate_submission
from grader.grading.remote_impl import RemoteImpl
from grader.grading.results import ExerciseResult, GpuCheckResult, GradeReport, TestOutcome
from grader.classroom.class_summary import summarize_class, to_html, to_markdown
from grader.reports.feedback import feedback_text
from grader.reports.gradescope import to_gradescope
from grader.reports.json_report import to_json
from grader.reports.text import to_text
from grader.visibility import VISIBILITIES
from grader.rubric import GROUPS, REPO_ROOT, SOLUTIONS_DIR, load_rubric
from grader.safe_text import escape_controls, escape_line
from grader.sandbox.bundle import MODULE_FILE, bundle_fd, read_module_files
from grader.sandbox.client import StudentError, WorkerClient, WorkerFailure
from grader.sandbox.kata_worker import codec
from grader.sandbox.modes import WORKER_LIB
from support import WHERE, cpu_points, toy

if str(WORKER_LIB) not in sys.path:
    sys.path.append(str(WORKER_LIB))  # the worker package imports itself as ``kata_worker``
from kata_worker import domain  # noqa: E402

# What must never reach a report raw: C0 but newline and tab, DEL, C1, bidi overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
FAKE_TOTAL = "\x1b[2J\x1b[H Total: 100 / 100 \u202e"
STRAYS = {"02_trainable_weights/self_attention-old.py": "raise SystemExit('an old copy')\n",
          "01_simple_attention/x copy.py": "x = 1\n",
          "03_causal/._causal_mask.py": "\x00\x05 macOS resource fork\n"}
NEWLINE_MEMBER = "04_multihead/bad\nname\u202e.py"


def solutions_copy(dest: Path) -> Path:
    for group in GROUPS:
        shutil.copytree(SOLUTIONS_DIR / group, dest / group, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def full_marks(report: GradeReport) -> bool:
    return all(r.score == r.max_score for r in report.exercises.values())


# ---- the escaping function -----------------------------------------------------------------------

def test_escaping_shows_controls_and_bidi_overrides_and_keeps_the_rest():
    text = "a\x1b[2Jb\tc\nd\re\x7f\x85\x9b\u202a\u202e\u2066\u2069\udcff é 中 ✓ \u200b"
    shown = escape_controls(text)
    assert shown == "a\\x1b[2Jb\tc\nd\\re\\x7f\\x85\\x9b\\u202a\\u202e\\u2066\\u2069\\udcff é 中 ✓ \u200b"
    assert escape_controls(shown) == shown  # twice changes nothing
    assert escape_line("a\nb\tc\x1b") == "a\\nb\\tc\\x1b"
    assert not RAW.search(shown) and shown.encode("utf-8")  # no lone surrogate left: writable as UTF-8


# ---- names ---------------------------------------------------------------------------------------

def test_the_domain_accepts_the_bundle_the_grader_makes_and_nothing_else():
    """A domain checks each entry of its bundle against the groups and the module-name rule its spawn
    spec carries (grader/sandbox/domains.py sends the rubric's groups and bundle.MODULE_FILE); it keeps
    no copy of its own, and refuses the whole bundle for one entry outside them."""
    files, _ = read_module_files(SOLUTIONS_DIR)
    assert domain.read_bundle(bundle_fd(files), list(GROUPS), MODULE_FILE) == files
    for rel in ("01_simple_attention/x copy.py", "05_extra/x.py", "03_causal/../x.py", "03_causal/sub/x.py", "x.py"):
        with pytest.raises(domain.DomainError, match="malformed bundle entry"):
            domain.read_bundle(bundle_fd({**files, rel: b""}), list(GROUPS), MODULE_FILE)


def test_private_copy_skips_symlinks_big_files_and_folders(tmp_path):
    sub = toy(tmp_path / "sub", "X = 1\n")
    (sub / "03_causal" / "big.py").write_bytes(b"#" * (2**20 + 1))
    (sub / "03_causal" / "link.py").symlink_to(SOLUTIONS_DIR / "03_causal" / "causal_mask.py")
    (sub / "03_causal" / "dir.py").mkdir()
    (sub / "03_causal" / "notes.txt").write_text("x")
    files, notes = read_module_files(sub)
    assert sorted(files) == ["01_simple_attention/attention_scores.py"]
    assert len(notes) == 3


def test_files_that_are_not_module_names_are_left_out_with_an_escaped_note(tmp_path: Path):
    sub = solutions_copy(tmp_path / "sub")
    for rel, text in {**STRAYS, NEWLINE_MEMBER: "x = 1\n", "03_causal/" + "a" * 101 + ".py": ""}.items():
        (sub / rel).write_text(text)
    files, notes = read_module_files(sub)
    assert sorted(files) == sorted(f"{ex.id}.py" for ex in load_rubric().exercises.values())
    found = []
    assert locate_submission(sub, tmp_path / "scratch", found) == sub
    assert found == notes and len(notes) == 5
    for rel in [*STRAYS, "04_multihead/bad\\nname\\u202e.py", "03_causal/" + "a" * 101 + ".py"]:
        assert any(note.startswith(f"{rel}: left out (not a module name") for note in notes), (rel, notes)
    assert not any(RAW.search(note) or "\n" in note for note in notes)


def test_many_stray_files_leave_the_modules_in_and_few_notes(tmp_path: Path, monkeypatch):
    modules = {f"{ex.id}.py" for ex in load_rubric().exercises.values()}
    monkeypatch.setattr(bundle, "MAX_BUNDLE_FILES", len(modules) + 2)  # room for two stray files
    sub = solutions_copy(tmp_path / "sub")
    for i in range(30):
        (sub / "01_simple_attention" / f"aaa_{i:02d}.py").write_text("x = 1\n")  # sorted before the modules
        (sub / "01_simple_attention" / f"aaa {i:02d}.py").write_text("x = 1\n")
    files, notes = read_module_files(sub)
    assert modules <= set(files) and len(files) == len(modules) + 2
    left_out = 60 - 2 - bundle.MAX_NOTES  # the strays neither taken nor noted one by one
    assert len(notes) == bundle.MAX_NOTES + 1 and notes[-1] == f"... and {left_out} more files left out"


# ---- a zip in the submission folder ----------------------------------------------------------------

def make_upload(folder: Path, exercises: Path, extra: dict[str, str] | None = None) -> Path:
    """``folder/submission.zip`` as ``python -m zipfile -c submission.zip exercises`` makes it, plus
    ``extra`` members, with macOS's junk beside it."""
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "submission.zip", "w") as zf:
        for path in sorted(exercises.rglob("*.py")):
            zf.write(path, "exercises/" + path.relative_to(exercises).as_posix())
        for name, text in (extra or {}).items():
            zf.writestr("exercises/" + name, text)
    (folder / "__MACOSX").mkdir()
    (folder / "__MACOSX" / "._submission.zip").write_bytes(b"\x00\x05\x16\x07")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    return folder


def test_a_folder_holding_one_zip_is_graded_from_the_zip(tmp_path: Path):
    upload = make_upload(tmp_path / "submission", solutions_copy(tmp_path / "exercises"))
    root = locate_submission(upload, tmp_path / "scratch")
    assert root.is_relative_to(tmp_path / "scratch") and root.name == "exercises"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == \
        sorted(f"{ex.id}.py" for ex in load_rubric().exercises.values())

    (upload / "old.zip").write_bytes((upload / "submission.zip").read_bytes())
    with pytest.raises(SubmissionError, match="2 zip files"):
        locate_submission(upload, tmp_path / "scratch2")


def test_a_zip_in_the_folder_keeps_the_zip_limits(tmp_path: Path):
    evil = tmp_path / "evil"
    evil.mkdir()
    with zipfile.ZipFile(evil / "submission.zip", "w") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    with pytest.raises(SubmissionError, match="unsafe path"):
        locate_submission(evil, tmp_path / "scratch")
    assert not (tmp_path / "escaped.py").exists()

    linked = tmp_path / "linked"  # a link to a zip elsewhere is not followed
    linked.mkdir()
    make_upload(tmp_path / "elsewhere", solutions_copy(tmp_path / "exercises"))
    os.symlink(tmp_path / "elsewhere" / "submission.zip", linked / "submission.zip")
    with pytest.raises(SubmissionError, match="nothing that looks like a submission"):
        locate_submission(linked, tmp_path / "scratch2")


def test_unreadable_zips_are_one_line_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("03_causal/causal_mask.py", "x = 1\n" * 1000)
    data = bytearray(good.read_bytes())
    encrypted, corrupt = tmp_path / "encrypted.zip", tmp_path / "corrupt.zip"
    flagged = bytearray(data)
    flagged[6] |= 1  # the local header's "encrypted" flag
    central = flagged.find(b"PK\x01\x02")
    flagged[central + 8] |= 1  # and the central directory's
    encrypted.write_bytes(bytes(flagged))
    body = data.find(b"causal_mask.py") + len("causal_mask.py")
    data[body + 5: body + 40] = b"\xff" * 35
    corrupt.write_bytes(bytes(data))
    for archive in (encrypted, corrupt):
        with pytest.raises(SubmissionError, match="unreadable zip"):
            locate_submission(archive, tmp_path / f"x-{archive.stem}")
        proc = subprocess.run([sys.executable, "-m", "grader", "score", str(archive)], capture_output=True, text=True,
                              cwd=REPO_ROOT)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


# ---- gradings -----------------------------------------------------------------------------------

@pytest.mark.timeout(300)
def test_stray_files_cost_nothing_in_a_folder_and_in_a_zipped_upload(tmp_path: Path, shared_domains):
    sub = solutions_copy(tmp_path / "sub")
    for rel, text in STRAYS.items():
        (sub / rel).write_text(text)
    report = grade(sub, GradeOptions(gpu="skip"), shared_domains)
    assert full_marks(report), {k: r.message for k, r in report.exercises.items() if r.score < r.max_score}

    upload = make_upload(tmp_path / "submission", solutions_copy(tmp_path / "exercises"), {NEWLINE_MEMBER: "x = 1\n"})
    report = grade(upload, GradeOptions(gpu="skip"), shared_domains)
    assert full_marks(report), {k: r.message for k, r in report.exercises.items() if r.score < r.max_score}


@pytest.mark.timeout(300)
def test_the_report_warns_of_each_file_left_out(tmp_path: Path, shared_domains):
    upload = make_upload(tmp_path / "submission", solutions_copy(tmp_path / "exercises"),
                         {**STRAYS, NEWLINE_MEMBER: "x = 1\n"})
    report = grade(upload, GradeOptions(gpu="skip"), shared_domains)
    assert full_marks(report)
    text = to_text(to_json(report), colour=False)
    for rel in [*STRAYS, "04_multihead/bad\\nname\\u202e.py"]:
        assert f"warning: {rel}: left out" in text, text
    assert not RAW.search(text)


TOY = '''
import os, sys

def attention_scores(inputs, query):
    print("\\x1b[2J\\x1b[H\\u202e printed by the student", flush=True)
    raise ValueError("\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e")

def attention_score_matrix(inputs):
    return "\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e"
'''
TOY_DIES = '''
import os, sys
sys.stderr.write("\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e\\n")
sys.stderr.flush()
os._exit(1)
'''


def assert_safe(text: str, where: str) -> None:
    assert not RAW.search(text), (where, RAW.search(text), text[:3000])


@pytest.mark.timeout(300)
def test_escape_sequences_reach_no_report_raw(tmp_path: Path, shared_domains):
    sub = toy(tmp_path / "sub", TOY)
    (sub / "01_simple_attention" / "normalization.py").write_text(TOY_DIES)
    report = grade(sub, GradeOptions(gpu="skip"), shared_domains)
    assert report.score == 0

    text = to_text(to_json(report), colour=False)
    assert_safe(text, "text report")
    assert_safe(re.sub(r"\033\[(?:0|1|3[123])m", "", to_text(to_json(report), colour=True)), "coloured text report")
    assert "\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e" in text and f"Total: 0 / {cpu_points():g}" in text
    data = json.loads(json.dumps(to_json(report)))
    messages = [t["output"] for t in data["tests"]] + [e["message"] for e in data["exercises"].values()]
    assert any("ValueError: \\x1b[2J" in m or "\\x1b[2J\\x1b[H Total" in m for m in messages)
    assert any("\\x1b[2J" in m.partition("last output:")[2] for m in messages), messages  # the output tail
    for message in messages:
        assert_safe(message, "JSON report")
    for visibility in VISIBILITIES:
        assert_safe(json.dumps(to_gradescope(to_json(report), visibility), ensure_ascii=False), f"gradescope {visibility}")
        assert_safe(feedback_text("alice", data, visibility), f"feedback {visibility}")


def test_every_renderer_escapes_what_it_is_given(tmp_path: Path):
    """The last line of defence: a report built here, its student text never through the worker client."""
    rubric = load_rubric()
    results = {ex_id: ExerciseResult(ex_id, ex.points, ex.points, "passed", "all 1 tests passed")
               for ex_id, ex in rubric.exercises.items()}
    mask = rubric.exercises["03_causal/causal_mask"].points
    outcome = TestOutcome("03_causal/test_causal_mask.py::test_x", "03_causal/causal_mask", mask, False, FAKE_TOTAL, 0.1)
    results["03_causal/causal_mask"] = ExerciseResult("03_causal/causal_mask", 0.0, mask, "failed",
                                                      f"1 of 1 tests failed; first: {FAKE_TOTAL}", [outcome])
    report = GradeReport(f"sub{FAKE_TOTAL}", results, GpuCheckResult(0.0, rubric.gpu_points, "failed", "meta", FAKE_TOTAL),
                         "bwrap", 1.0, [f"warning {FAKE_TOTAL}"])
    assert_safe(to_text(to_json(report), colour=False), "text")
    data = to_json(report)
    assert_safe(json.dumps(data, ensure_ascii=False), "json")
    for visibility in VISIBILITIES:
        assert_safe(json.dumps(to_gradescope(to_json(report), visibility), ensure_ascii=False), "gradescope")
        assert_safe(feedback_text(f"eve{FAKE_TOTAL}", data, visibility), "feedback")
        # a JSON report from elsewhere (an older grader, a hand edit): the feedback escapes it again
        raw = json.loads(json.dumps(data))
        raw["exercises"]["03_causal/causal_mask"]["message"] = FAKE_TOTAL
        raw["tests"][0]["output"] = FAKE_TOTAL
        raw["gpu_check"]["message"] = FAKE_TOTAL
        assert_safe(feedback_text("eve", raw, visibility), "feedback of a raw report")

    path = tmp_path / "grades.csv"
    write_grades(path, [csv_row(f"eve{FAKE_TOTAL}", {"error": f"unreadable zip {FAKE_TOTAL}"}, "0" * 64),
                        csv_row("bob", {"report": data}, "0" * 64)])
    summary = summarize_class(read_class(path, {"bob": {**data, "tests": [{**data["tests"][0], "name": f"t {FAKE_TOTAL}"}]}}))
    assert_safe(to_markdown(summary), "summary markdown")
    assert_safe(to_html(summary, None), "summary html")
    assert "\\x1b[2J" in to_markdown(summary)


# ---- answers too large to decode -------------------------------------------------------------------

BIG = '''
import gc, os, struct, sys

class Shady(Exception):
    pass

Shady.__qualname__ = "Shady\\x1b[2J\\u202e"

def attention_scores(kind):
    if kind == "raise":
        raise Shady("\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e")
    if kind == "die":
        sys.stdout.write("\\x1b[2J\\x1b[H Total: 100 / 100 \\u202e\\n")
        sys.stdout.flush()
        os._exit(3)
    if kind == "ints":
        return list(range(100_000))
    if kind == "nested":
        return [[i] for i in range(20_000)]
    if kind == "frame":  # a hostile worker writes the frame itself, past the encoder's check
        channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
        n = 999_000
        payload = (b"d" + struct.pack("<I", 1) + b"s" + struct.pack("<I", 2) + b"ok"
                   + b"l" + struct.pack("<I", n) + (b"i" + struct.pack("<q", 7)) * n)
        channel.sock.sendall(struct.pack(">Q", len(payload)) + payload)
    return kind
'''


@pytest.mark.timeout(120)
def test_student_text_is_escaped_as_it_enters_the_grader(tmp_path: Path, shared_domains):
    with WorkerClient(toy(tmp_path / "sub", BIG), domains=shared_domains) as client:
        impl = RemoteImpl(client, WHERE)
        with pytest.raises(StudentError) as raised:
            impl.attention_scores("raise")
        assert "Shady\\x1b[2J\\u202e" in str(raised.value) and "\\x1b[H Total" in str(raised.value)
        assert_safe(str(raised.value), "a student's exception")
        with pytest.raises(WorkerFailure) as died:
            impl.attention_scores("die")
        assert "last output: \\x1b[2J" in str(died.value)
        assert_safe(str(died.value), "the worker's output tail")


@pytest.mark.timeout(120)
def test_an_answer_too_large_to_decode_fails_that_call(tmp_path: Path, shared_domains):
    limit = f"more than {codec.MAX_VALUES} values in one message"
    with WorkerClient(toy(tmp_path / "sub", BIG), domains=shared_domains) as client:
        impl = RemoteImpl(client, WHERE)
        for kind in ("ints", "nested"):  # the worker's encoder refuses it: the call raises, the worker lives on
            with pytest.raises(ValueError, match=re.escape(limit)):
                impl.attention_scores(kind)
            assert impl.attention_scores("small") == "small"
        started = client.generation
        cpu = time.process_time()
        with pytest.raises(WorkerFailure, match=re.escape(limit)):
            impl.attention_scores("frame")
        assert time.process_time() - cpu < 1.0  # the old decoder spent about 1.5 s on this frame alone
        assert impl.attention_scores("small") == "small" and client.generation == started + 1


def test_csv_cells_cannot_be_formulas(tmp_path: Path) -> None:
    """Every cell is escaped once, as the file is written, and read back as it was: a reader keys and
    reads the same plain text, and whatever it writes again (a resume, a merge, a class-level output's
    spreadsheet) is escaped again, once."""
    assert csv_cell("=2+5") == "'=2+5" and csv_cell("@SUM(A1)") == "'@SUM(A1)" and csv_cell("alice") == "alice"
    name, quoted = "=HYPERLINK(\"http://x\")", "'=not a formula"
    rows = [csv_row(name, {"error": "-1+2"}, "0" * 64), csv_row(quoted, {"error": "+3"}, "0" * 64)]
    path = tmp_path / "grades.csv"
    write_grades(path, rows)
    with open(path, newline="") as f:
        on_disk = {row["student"]: row for row in csv.DictReader(f)}
    assert on_disk["'" + name]["message"] == "'-1+2" and on_disk["'" + quoted]["message"] == "'+3"
    sheet = read_class(path)
    assert sheet.rows[name] == rows[0] and sheet.rows[quoted] == rows[1]  # plain text, cells and keys alike
    write_grades(path, sheet.rows.values())  # written again: escaped once, not twice
    assert read_class(path).rows == sheet.rows
    assert spreadsheet_text(["student"], [{"student": name}]).splitlines()[1] == '"\'=HYPERLINK(""http://x"")"'
