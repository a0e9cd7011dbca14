"""exercises/documents/: the source documents read as clean UTF-8, and still print the oracle's tensors.

The chapter notes came as UTF-8 read as Mac Roman ("it‚Äôs" for "it’s"); they were repaired line by
line (issue 24). These checks keep the mojibake out, and make sure that no repair (or later edit)
touches a printed tensor: every tensor of ``tests/fixtures/printed_tensors.json`` that a document
prints is found there, its numbers in order, exactly as printed. Plain text and JSON only: no torch.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grader.rubric import EXERCISES_DIR, TESTS_DIR

DOCUMENTS_DIR = EXERCISES_DIR / "documents"


def _mac_roman(first: int, last: int) -> str:
    return bytes(range(first, last + 1)).decode("mac_roman")


# UTF-8 read as Mac Roman: a lead byte's character, then continuation bytes' ("‚Äô" is ’, "√©" is é);
# "â€" is the same mistake through Windows-1252, U+FFFD a decoder's replacement for bytes it dropped.
MOJIBAKE = re.compile(f"[{re.escape(_mac_roman(0xC2, 0xF4))}][{re.escape(_mac_roman(0x80, 0xBF))}]+|â€|\ufffd")
# A printed number: 0.9544, -1.4950, 1., 2, -inf, 5.24e-05; not the digits of a name (float64, token_3, 3.3.1).
NUMBER = re.compile(r"(?<![\w.])-?(?:inf|\d+(?:\.\d*)?(?:e[+-]?\d+)?)")
# A row of the README's table of names: | [chapter_notes_3.1-3.6.txt](chapter_notes_3.1-3.6.txt) | 000_7e….txt |
# Tensors printed a number per line, each after a label with numbers of its own: found in order, not side by side.
ONE_PER_LINE = {"004/In32/variances"}  # "Variance before scaling (dim = 5 ) {np.float64(5.2447…)}"
NAME_ROW = re.compile(r"^\| \[([^\]]+\.txt)\]\([^)]+\) \| (\S+\.txt) \|$", re.MULTILINE)


def _numbers(text: str) -> list[float]:
    return [float(n) for n in NUMBER.findall(text)]


def _flat(value) -> list[float]:
    return [x for item in value for x in _flat(item)] if isinstance(value, list) else [float(value)]


def _prints(document: list[float], tensor: list[float], one_per_line: bool = False) -> bool:
    """Whether the tensor's numbers appear in the document's exactly as printed: side by side, or in order."""
    if one_per_line:
        rest = iter(document)
        return all(x in rest for x in tensor)  # each found after the one before
    n = len(tensor)
    return any(document[i:i + n] == tensor for i in range(len(document) - n + 1))


def _documents() -> dict[str, Path]:
    """The fixture's document keys ("000", …) -> the files here, through the README's table of old names."""
    fixture = json.loads((TESTS_DIR / "fixtures" / "printed_tensors.json").read_text())
    here = dict((old, new) for new, old in NAME_ROW.findall((DOCUMENTS_DIR / "README.md").read_text()))
    return {key: DOCUMENTS_DIR / here[old] for key, old in fixture["documents"].items() if old in here}


def test_no_document_holds_mojibake():
    files = sorted(DOCUMENTS_DIR.iterdir())
    assert len([p for p in files if p.suffix == ".txt"]) == 5, files
    found = [f"{p.name}:{number}: {match.group()!r} in {line.strip()[:80]!r}"
             for p in files for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             for match in MOJIBAKE.finditer(line)]
    assert found == [], "\n".join(found)


def test_the_mojibake_check_finds_the_usual_sequences():
    for bad in ("it‚Äôs", "encoder‚Äìdecoder", "projections‚Äîthe", "‚Äúattend to,‚Äù", "√©t√©",
                "\uf8ffüî∞ Step"):
        assert MOJIBAKE.search(bad), bad
    for good in ("it’s", "encoder–decoder", "“attend to,”", "été", "🔰 Step", "Q⋅K.T/√dk", "…",
                 "token_3 → token_1"):
        assert not MOJIBAKE.search(good), good


def test_every_printed_tensor_is_in_its_document_as_printed():
    documents = _documents()
    assert sorted(documents) == ["000", "001", "002", "003", "004"], documents
    printed = json.loads((TESTS_DIR / "fixtures" / "printed_tensors.json").read_text())["printed"]
    numbers = {key: _numbers(path.read_text(encoding="utf-8")) for key, path in documents.items()}
    entries = {key: _flat(entry["value"]) for key, entry in printed.items() if key.split("/")[0] in documents}
    assert len(entries) > 40, "the check would be vacuous"
    missing = [key for key, tensor in entries.items() 
               if not _prints(numbers[key.split("/")[0]], tensor, key in ONE_PER_LINE)]
    assert missing == [], f"printed tensors no longer in their document: {missing}"


def test_the_tensor_check_sees_one_changed_digit():
    printed = _numbers("tensor([[0.9995, 0.9544, -inf],\n        [1., 2, 5.24e-05]]) np.float64(3.5)")
    assert printed == [0.9995, 0.9544, float("-inf"), 1.0, 2.0, 5.24e-05, 3.5]
    assert _prints(printed, _flat([[0.9544, float("-inf")], [1, 2]]))
    assert not _prints(printed, _flat([[0.9545, float("-inf")], [1, 2]]))
    assert not _prints(printed, [0.9995, -0.9544])
    assert _prints(printed, [0.9544, 2, 3.5], one_per_line=True)
    assert not _prints(printed, [2, 0.9544], one_per_line=True)
