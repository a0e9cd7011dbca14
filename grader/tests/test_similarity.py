"""Similar submissions (grader/classroom/similarity.py, similarity_report.py): near-copies are reported,
honest work that follows the book is not, and a hostile submission costs nothing.

The class is built from real files: the reference (solutions/), a near-copy of it (variables renamed,
functions and methods reordered), an independent solution written here from the documents' own code
(adapted to the stub, as tests/mutants/book_variants.py's rule allows) and the stub alone. Everything runs
in this process: nothing here grades, so nothing imports torch.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import pytest

from grader import cli
from grader.classroom import class_summary, similarity_report
from grader.classroom.class_outputs import write_class_outputs
from grader.classroom.grades_sheet import csv_row, write_grades
from grader.classroom.roster import list_students, submission_hash
from grader.classroom.score_all import score_all
from grader.classroom.similarity import MAX_TOKENS, THRESHOLD, fingerprints, normalized_tokens
from grader.classroom.similarity_report import compare_class, report_path
from grader.rubric import REPO_ROOT, SOLUTIONS_DIR, load_rubric
from support import fake_class, fake_options, fake_report

MHA, CAUSAL = "04_multihead/multihead_attention", "03_causal/causal_attention"
RENAMES = {"keys": "k_mat", "queries": "q_mat", "values": "v_mat", "attn_scores": "scores", "attn_weights": "weights",
           "num_tokens": "n_tok", "context": "ctx", "b": "batch", "x": "inp", "d_out": "width", "num_heads": "heads"}
# Bodies written from the documents (chapter_notes_3.1-3.6.txt's CausalAttention; article_attention_mechanisms.txt's
# MultiHeadAttention), adapted to what the stubs ask (a ValueError, any leading batch dimensions).
BOOK_BODIES = {
    CAUSAL: ["""        super().__init__()
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias = qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal = 1))
""", """        num_tokens = x.shape[-2]
        if num_tokens > self.context_length:
            raise ValueError("too many tokens for this context length")
        keys = self.W_key(x)
        values = self.W_value(x)
        queries = self.W_query(x)

        attention_score = queries @ keys.transpose(-2, -1)
        attention_score = attention_score.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attention_weights = torch.softmax(attention_score / keys.shape[-1] ** 0.5, dim=-1)
        attention_weights = self.dropout(attention_weights)
        context_vector = attention_weights @ values
        return context_vector
"""],
    MHA: ["""        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads # Reduce the projection dim to match desired output dim
        self.context_length = context_length

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # Linear layer to combine head outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.triu(torch.ones(context_length, context_length),
                       diagonal=1)
        )
""", """        b, num_tokens, d_in = x.shape
        if num_tokens > self.context_length:
            raise ValueError("input longer than context_length")

        keys = self.W_key(x) # Shape: (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec
""", """    return MultiHeadAttention(d_in=768, d_out=768, context_length=1024, dropout=0.0, num_heads=12)
"""],
}


def reference(ex_id: str) -> str:
    return (SOLUTIONS_DIR / f"{ex_id}.py").read_text(encoding="utf-8")


def book_following(ex_id: str) -> str:
    """The stub (the reference's text around its bodies) with the bodies of BOOK_BODIES."""
    parts = re.split(r"( *### BEGIN SOLUTION\n)[\s\S]*?( *### END SOLUTION\n)", reference(ex_id))
    bodies = BOOK_BODIES[ex_id]
    assert len(parts) == 1 + 3 * len(bodies)
    return parts[0] + "".join(parts[1 + 3 * i] + body + parts[2 + 3 * i] + parts[3 + 3 * i] for i, body in enumerate(bodies))


def near_copy(text: str) -> str:
    """``text`` with its variables renamed, its top-level definitions in reverse order and its class's
    methods too."""
    for old, new in RENAMES.items():
        text = re.sub(rf"\b{old}\b", new, text)
    head, *defs = re.split(r"\n(?=(?:class|def) )", text)
    for i, block in enumerate(defs):
        top, *methods = re.split(r"\n(?=    def )", block)
        defs[i] = "\n".join([top, *reversed(methods)])
    return "\n".join([head, *reversed(defs)])


def put(root: Path, student: str, ex_id: str, text: str | bytes) -> Path:
    path = root / student / f"{ex_id}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.fixture(scope="module")
def honest_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ann: the reference; bob: a near-copy of ann; cy: the book, by another hand; dee: the stubs."""
    root = tmp_path_factory.mktemp("class")
    for ex_id in (MHA, CAUSAL):
        put(root, "ann", ex_id, reference(ex_id))
        put(root, "bob", ex_id, near_copy(reference(ex_id)))
        put(root, "cy", ex_id, book_following(ex_id))
        put(root, "dee", ex_id, load_rubric().exercises[ex_id].stub_file.read_text(encoding="utf-8"))
    return root


def students_of(root: Path) -> dict[str, Path]:
    return list_students(root)[0]


def test_the_near_copy_is_a_copy_renamed_and_reordered() -> None:
    """The test's near-copy is what the issue names: no line of the reference's code left as it was."""
    original, copy = reference(MHA), near_copy(reference(MHA))
    assert copy.index("def gpt2_attention") < copy.index("class MultiHeadAttention")
    assert copy.index("def forward") < copy.index("def __init__")
    changed = [line for line in original.splitlines() if "k_mat" in near_copy(line) or "n_tok" in near_copy(line)]
    assert changed and not any(line in copy.splitlines() for line in changed)
    assert set(fingerprints(copy)) == set(fingerprints(original)), "renaming and reordering change nothing"


def test_near_copies_are_reported_and_book_followers_and_stubs_are_not(honest_class: Path) -> None:
    result = compare_class(students_of(honest_class))
    assert [pair.students for pair in result.pairs[MHA]] == [("ann", "bob")]
    pair = result.pairs[MHA][0]
    assert pair.similarity >= THRESHOLD and pair.lines[0] and pair.lines[1]
    reported = {student for pairs in result.pairs.values() for p in pairs for student in p.students}
    assert "cy" not in reported and "dee" not in reported
    # the book's code is what cy shares with ann: without the discount, they would be a pair
    assert not result.pairs[CAUSAL] or all("cy" not in p.students for p in result.pairs[CAUSAL])
    everything = compare_class(students_of(honest_class), threshold=0.01)
    assert not [p for ps in everything.pairs.values() for p in ps if "dee" in p.students]


def test_the_discount_is_what_keeps_the_book_followers_apart(honest_class: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the stubs' and documents' k-grams discounted, the two honest solutions would be a pair: the
    test above could not pass by the threshold alone. A stub alone leaves no fingerprint at all."""
    for ex_id in (MHA, CAUSAL):
        stub = load_rubric().exercises[ex_id].stub_file.read_text(encoding="utf-8")
        assert fingerprints(stub) and not set(fingerprints(stub)) - similarity_report.discounted()
    monkeypatch.setattr(similarity_report, "discounted", frozenset)
    result = compare_class(students_of(honest_class))
    assert ("ann", "cy") in {p.students for p in result.pairs[CAUSAL]}


def hostile_class(root: Path, honest: Path) -> Path:
    for ex_id in (MHA, CAUSAL):
        put(root, "ann", ex_id, reference(ex_id))
    put(root, "bin", MHA, bytes(range(256)) * 400)
    put(root, "huge", MHA, b"x = 1\n" * (2**20 // 6 + 10))  # over the 1 MB a module file may be
    put(root, "padded", MHA, near_copy(reference(MHA)) + "x = (" * 20_000)  # cut at MAX_COMPARED_BYTES
    link = root / "linker" / MHA.split("/")[0]
    link.mkdir(parents=True)
    (link / "multihead_attention.py").symlink_to(root / "ann" / f"{MHA}.py")  # a copy, through a link
    put(root, "dirlink", CAUSAL, load_rubric().exercises[CAUSAL].stub_file.read_text(encoding="utf-8"))
    (root / "dirlink" / MHA.split("/")[0]).symlink_to(honest / "bob" / MHA.split("/")[0])  # a group, linked
    (root / "fifo" / "03_causal").mkdir(parents=True)
    os.mkfifo(root / "fifo" / f"{CAUSAL}.py")  # a read that never ends
    put(root, "=HYPERLINK(1)\x1b[2J\u202e", MHA, near_copy(reference(MHA)))  # a name for a terminal and a spreadsheet
    with zipfile.ZipFile(root / "zipped.zip", "w") as zf:
        zf.writestr(f"repo/exercises/{MHA}.py", near_copy(reference(MHA)))
    (root / "zipped.zip").with_name("notazip.zip").write_bytes(b"PK not a zip")
    return root


def test_hostile_files_cost_nothing_and_crash_nothing(tmp_path: Path, honest_class: Path) -> None:
    root = hostile_class(tmp_path / "class", honest_class)
    out = tmp_path / "out"
    assert cli.main(["similarity", str(root), "--out", str(out)]) == 0
    result = compare_class(students_of(root))
    pairs = {p.students for p in result.pairs[MHA]}
    odd = "=HYPERLINK(1)\x1b[2J\u202e"
    assert pairs == {(odd, "ann"), (odd, "padded"), (odd, "zipped"), ("ann", "padded"), ("ann", "zipped"),
                     ("padded", "zipped")}, "the zip is found as score-all finds it; what is padded is cut"
    assert not result.pairs[CAUSAL]  # a link out of the submission (a file or a group folder) is never followed:
    assert not {"linker", "dirlink"} & {s for p in result.pairs[MHA] for s in p.students}, "the pairs above say it"
    notes = "\n".join(result.notes)
    for said in ("huge: 04_multihead/multihead_attention.py: skipped (larger than",
                 "linker: 04_multihead/multihead_attention.py: skipped (a symlink",
                 "fifo: 03_causal/causal_attention.py: skipped (not a regular file)",
                 "padded: 04_multihead/multihead_attention.py: compared on its first", "notazip: not compared"):
        assert said in notes, said
    markdown = (out / "similarity.md").read_text(encoding="utf-8")
    spreadsheet = (out / "similarity.csv").read_text(encoding="utf-8")
    assert "\x1b" not in markdown and "\u202e" not in markdown and "\\x1b[2J\\u202e" in markdown
    # the CSV names students as the grades CSV does (grades_sheet.csv_cell): a formula escaped, the rest as it is
    assert f"'{odd}," in spreadsheet and f",{odd}" not in spreadsheet
    assert len(normalized_tokens("x = (" * 30_000)) == MAX_TOKENS


def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "class").mkdir()
    (tmp_path / "file").write_text("")
    for args in ([str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")], [str(tmp_path / "file"), "--out", str(tmp_path / "o")],
                 [str(tmp_path / "class"), "--out", str(tmp_path / "file")], [str(tmp_path / "class")],
                 *([str(tmp_path / "class"), "--out", str(tmp_path / "o"), "--threshold", t] for t in ("0", "1.5", "half"))):
        rc = cli.main(["similarity", *args])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert not (tmp_path / "o").exists()


def test_score_all_outputs_write_the_report_and_the_summary_lists_the_pairs(
        tmp_path: Path, honest_class: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The class-level output (grader/classroom/class_outputs.py) with the submissions folder score-all
    hands it; after ``merge`` (no folder) the summary has no such section and no report is written."""
    monkeypatch.setattr(class_summary, "_plots", lambda summary: None)  # no matplotlib: not what is tested
    rows = [csv_row(student, {"report": fake_report()}, submission_hash(path))
            for student, path in students_of(honest_class).items()]
    csv_path = tmp_path / "grades.csv"
    write_grades(csv_path, rows)
    warnings: list[str] = []
    written = write_class_outputs(csv_path, {}, warnings, None, honest_class)
    assert not warnings and report_path(csv_path) in written and report_path(csv_path).with_suffix(".csv") in written
    summary = (tmp_path / "grades-summary.md").read_text(encoding="utf-8")
    section = summary[summary.index("## Similar submissions"):]
    assert f"| `{MHA}` | ann, bob |" in section and "cy" not in section and "dee" not in section
    assert "Similar submissions" in (tmp_path / "grades-summary.html").read_text(encoding="utf-8")
    merged = tmp_path / "merged.csv"
    write_grades(merged, rows)
    assert report_path(merged) not in write_class_outputs(merged, {}, warnings, None)
    assert "Similar submissions" not in (tmp_path / "merged-summary.md").read_text(encoding="utf-8")


def test_the_docs_state_the_method_s_numbers() -> None:
    """docs/class-grading.md, "Similar submissions", says what is discounted and reported, with the numbers
    the code uses."""
    from grader.classroom import similarity

    docs = (REPO_ROOT / "docs" / "class-grading.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Similar submissions"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    for said in (f"more than {similarity.COMMON_SHARE:.0%} of the class", f"more than {similarity.COMMON_FLOOR} students",
                 f"default {similarity.THRESHOLD}", f"at least {similarity.MIN_SHARED} fingerprints",
                 f"first {similarity_report.MAX_COMPARED_BYTES // 1024} KB", f"{similarity.MAX_TOKENS:,} tokens",
                 "not a verdict"):
        assert said in section, said


def test_score_all_hands_its_submissions_folder_to_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """score-all itself (its jobs faked: nothing graded) writes the report of the folder it graded."""
    monkeypatch.setattr(class_summary, "_plots", lambda summary: None)
    folder = fake_class(tmp_path / "class", {"ann": 1.0, "bob": 1.0})
    put(folder, "ann", MHA, reference(MHA))
    put(folder, "bob", MHA, near_copy(reference(MHA)))
    summary = score_all(folder, tmp_path / "g.csv", fake_options(tmp_path))
    assert report_path(tmp_path / "g.csv") in summary.outputs, summary.warnings
    assert f"{MHA},ann,bob," in report_path(tmp_path / "g.csv").with_suffix(".csv").read_text(encoding="utf-8")
