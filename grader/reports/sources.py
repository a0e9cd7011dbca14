"""The source documents as students know them, in what the feedback shows of the hidden tests.

    readable_sources("called causal_mask(6)  [001 In[818]]:")
    # -> "called causal_mask(6)  [notebook_causal_self_attention.txt, In [818]]:"

Why: the hidden tests cite the documents by the numbers of their original files (``000`` to ``004``, as
tests/fixtures/printed_tensors.json names them), in their calls' labels (``[000 3.5.1, 001 In[820]]``)
and in some test ids (``test_attention_scores_printed[000-journey-query2]``). Students never see those
numbers: their copies in exercises/documents/ are renamed, and the table of that folder's README.md
(``| [chapter_notes_3.1-3.6.txt](…) | 000_7ebab5a40414ec2e.txt |``) is the one place that pairs each
name with its original file. The labels are rewritten here, when the feedback is rendered, rather than
in the many hidden tests that write them, so the tests keep matching the oracle's keys.

A notebook's cell ``In[818]`` becomes ``In [818]``, as the document prints it (a student can search for
it). Only a bracketed label that starts with a document's number is touched: ``[1000, 1001]``,
``[0.000, …]`` and ``[004_seeded.txt]`` stay as they are. Without the README's table (a tree without
exercises/), every label stays as it is.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from grader.rubric import EXERCISES_DIR

DOCUMENTS_README = EXERCISES_DIR / "documents" / "README.md"
# | [chapter_notes_3.1-3.6.txt](chapter_notes_3.1-3.6.txt) | 000_7ebab5a40414ec2e.txt |
_NAME_ROW = re.compile(r"^\|\s*\[([^\]]+)\]\([^)]*\)\s*\|\s*(\d{3})_[0-9a-f]+\.txt\s*\|\s*$", re.MULTILINE)
_NUMBER = r"\d{3}(?=[ ;,\]-])"
# A bracketed label starting with a document's number; one level of brackets inside (In[818], [14]-[15]).
_LABEL = re.compile(r"\[(" + _NUMBER + r"(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]")
# A document's number in a label: at its start or after ", ", and what follows it (a space or "-": a place in it).
_CITED = re.compile(r"(^|, )(\d{3})([ -](?=\S))?")


@lru_cache(maxsize=None)
def document_names(readme: Path = DOCUMENTS_README) -> dict[str, str]:
    """``{"000": "chapter_notes_3.1-3.6.txt", ...}`` from the README's table of names ({} without it)."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return {}
    return {number: name for name, number in _NAME_ROW.findall(text)}


def readable_sources(text: str, names: dict[str, str] | None = None) -> str:
    """``text`` with every document label's numbers replaced by the documents' names (module docstring):
    ``[000 3.5.1, 001 In[820]]`` -> ``[chapter_notes_3.1-3.6.txt, 3.5.1; notebook_causal_self_attention.txt,
    In [820]]``, ``[000-journey-query2]`` -> ``[chapter_notes_3.1-3.6.txt, journey-query2]``."""
    names = document_names() if names is None else names
    if not names:
        return text

    def cited(match: re.Match[str]) -> str:
        before, number, place = match.groups()
        if number not in names:
            return match.group()
        return ("; " if before else "") + names[number] + (", " if place else "")

    def label(match: re.Match[str]) -> str:
        body = match.group(1)
        if body[:3] not in names:
            return match.group()
        return "[" + re.sub(r"\bIn\[", "In [", _CITED.sub(cited, body)) + "]"

    return _LABEL.sub(label, text)
