"""Similar submissions: which students' code for one module is too alike to be written apart (the method).

MOSS's method, winnowing (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003), over Python's own tokens:

- **Normalized tokens.** A module's text is read by the standard library's ``tokenize`` (never imported,
  never run): comments, docstrings and layout dropped, every identifier one symbol and every literal one
  symbol per kind, keywords and operators kept. Renaming variables changes nothing. A file that does not
  tokenize (a syntax error, a binary file) is read line by line, keeping what each line gives; a file's
  first :data:`MAX_TOKENS` count, so a padded file costs no more than a long module.
- **Fingerprints per definition.** The tokens are cut at each ``def``, ``class`` or decorator (methods
  included); each piece's k-grams (:data:`K` tokens) are hashed and winnowed (the smallest hash of every
  :data:`WINDOW` consecutive ones). Every match of ``K + WINDOW - 1`` tokens or more shares a
  fingerprint; no match shorter than ``K`` does. Functions (and methods) in another order give the same
  fingerprints.
- **What is discounted.** The stubs' text and the documents' own code (exercises/documents/: the book's
  listings students are meant to follow): a fingerprint found anywhere in them counts for no one. So does
  one held by more than :data:`COMMON_SHARE` of the class (and more than :data:`COMMON_FLOOR` students,
  MOSS's default): a common idiom.
- **A pair's similarity** is the fingerprints the two share over the smaller one's count. A pair is
  reported from :data:`THRESHOLD` on, when they share at least :data:`MIN_SHARED` fingerprints (a
  module barely started is too small to say anything).

Why not a library: ``copydetect`` (MIT, 0.5.0 of 2024; winnowing over Pygments tokens) fits the method,
but it would make pygments, jinja2, tqdm and matplotlib (its detector imports pyplot) requirements of the
grader, whose are torch, pytest, pytest-timeout and nbgrader; it opens the files it finds by path, whole
and through links, unless handed a stream (a submission is read here as the bundle reads one:
grader/files.py); it fingerprints whole files, not definitions; and its report is its own HTML of the
students' code. The algorithm itself is the few functions below, on the standard library's tokenizer,
which knows Python's comments and docstrings.

A pair is a place to look, never a verdict: two students who follow the book closely share its code,
which is discounted, but they may share more by chance; one who copied and rewrote enough is not found.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import keyword
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

K = 12  # tokens in a k-gram: shorter matches never count (MOSS's noise threshold)
WINDOW = 6  # every match of K + WINDOW - 1 tokens or more shares a fingerprint
THRESHOLD = 0.5  # shared fingerprints over the smaller submission's: a pair from here on is reported
MIN_SHARED = 15  # fewer shared fingerprints (some five lines of code) say nothing, whatever the share
COMMON_SHARE = 0.3  # a fingerprint held by more of the class than this is a common idiom...
COMMON_FLOOR = 10  # ... when more students than this hold it (MOSS's -m default)
MAX_TOKENS = 10_000  # of one file (a module has a few hundred): what a padded file can cost
_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
            tokenize.ENDMARKER, tokenize.ERRORTOKEN, *(getattr(tokenize, n) for n in ("FSTRING_MIDDLE", "FSTRING_END")
                                                        if hasattr(tokenize, n))}
_STRINGS = {tokenize.STRING, *(getattr(tokenize, n) for n in ("FSTRING_START",) if hasattr(tokenize, n))}
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.NL,
                    tokenize.COMMENT}


@dataclass(frozen=True)
class Token:
    symbol: str  # the normalized token: "V" an identifier, "N" a number, "S" a string, else itself
    line: int  # 1-based, in the file's text
    starts_unit: bool  # a def, class or decorator: a new piece begins here


def normalized_tokens(text: str) -> list[Token]:
    """The normalized tokens of a module's ``text`` (see the module docstring); line by line where the
    whole text does not tokenize."""
    try:
        return list(itertools.islice(_tokens(tokenize.generate_tokens(io.StringIO(text).readline), 0), MAX_TOKENS))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return lenient_tokens(text)


def lenient_tokens(text: str) -> list[Token]:
    """The normalized tokens of ``text`` read one line at a time, each line as far as it tokenizes: for
    prose with code in it (the documents) and files that are not Python. Lines inside triple quotes
    (docstrings) are left out, as the whole file's tokens leave them out."""
    found: list[Token] = []
    quoted = False
    for number, line in enumerate(text.splitlines(), 1):
        if len(found) >= MAX_TOKENS:
            return found[:MAX_TOKENS]
        toggles = (line.count('"""') + line.count("'''")) % 2 == 1
        if quoted or toggles:
            quoted ^= toggles
            continue
        stripped = line.lstrip()
        try:
            for token in _tokens(tokenize.generate_tokens(io.StringIO(stripped).readline), number - 1):
                found.append(token)
        except (tokenize.TokenError, SyntaxError, ValueError):
            continue  # what the line gave before the error is kept
    return found


def _tokens(raw: Iterator[tokenize.TokenInfo], line_offset: int) -> Iterator[Token]:
    previous, pending, depth = tokenize.NEWLINE, None, 0
    for info in raw:
        if pending is not None:  # a string that starts a statement: a docstring unless more follows
            if info.type not in (tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER, tokenize.NL):
                yield pending
            pending = None
        depth = max(0, depth + (info.string in "([{") - (info.string in ")]}")) if info.type == tokenize.OP else depth
        symbol = _symbol(info)
        if symbol is not None:
            starts = symbol in ("def", "class") or symbol == "@" and previous in _STATEMENT_START and depth == 0
            token = Token(symbol, info.start[0] + line_offset, starts)
            if info.type in _STRINGS and previous in _STATEMENT_START and depth == 0:
                pending = token
            else:
                yield token
        previous = info.type


def _symbol(info: tokenize.TokenInfo) -> str | None:
    if info.type in _DROPPED:
        return None
    if info.type == tokenize.NAME:
        return info.string if keyword.iskeyword(info.string) else "V"
    if info.type == tokenize.NUMBER:
        return "N"
    if info.type in _STRINGS:
        return "S"
    return info.string


# --- fingerprints ----------------------------------------------------------------------------------------


def _pieces(tokens: list[Token]) -> list[list[Token]]:
    """The tokens cut before each definition (its decorators with it)."""
    pieces: list[list[Token]] = [[]]
    decorated = False
    for token in tokens:
        if token.starts_unit:
            if pieces[-1] and not decorated:
                pieces.append([])
            decorated = token.symbol == "@"
        pieces[-1].append(token)
    return [piece for piece in pieces if piece]


def _kgrams(tokens: list[Token]) -> list[tuple[int, frozenset[int]]]:
    """(hash, the lines its tokens are on) of every K consecutive tokens: a stable hash (not Python's,
    which changes between runs), so a report is the same every time."""
    return [(int.from_bytes(hashlib.blake2b(" ".join(t.symbol for t in tokens[i:i + K]).encode(),
                                            digest_size=8).digest(), "big"), frozenset(t.line for t in tokens[i:i + K]))
            for i in range(len(tokens) - K + 1)]


def _winnowed(grams: list[tuple[int, frozenset[int]]]) -> list[tuple[int, frozenset[int]]]:
    """The k-grams winnowing keeps: in every WINDOW consecutive ones, the rightmost smallest hash."""
    if len(grams) <= WINDOW:
        return [min(grams, key=lambda g: g[0])] if grams else []
    chosen: dict[int, tuple[int, frozenset[int]]] = {}
    for start in range(len(grams) - WINDOW + 1):
        window = grams[start:start + WINDOW]
        low = min(g[0] for g in window)
        at = max(i for i, g in enumerate(window) if g[0] == low)
        chosen[start + at] = window[at]
    return [chosen[i] for i in sorted(chosen)]


Fingerprints = dict[int, set[int]]  # hash -> the lines of the k-grams that gave it


def fingerprints(text: str) -> Fingerprints:
    """The winnowed fingerprints of a module's text, piece by piece, with the lines they cover."""
    found: Fingerprints = {}
    for piece in _pieces(normalized_tokens(text)):
        for value, lines in _winnowed(_kgrams(piece)):
            found.setdefault(value, set()).update(lines)
    return found


def every_kgram(texts: Iterable[str]) -> set[int]:
    """Every k-gram hash of ``texts`` (the stubs, the documents' text): what is discounted.
    All of them, not only those winnowing keeps, so a student's fingerprint found anywhere in them counts."""
    return {value for text in texts for value, _ in _kgrams(normalized_tokens(text))}


# --- pairs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """Two students' submissions of one module that share much code that is not the book's or the stub's."""

    module: str  # the exercise id
    students: tuple[str, str]
    similarity: float  # shared fingerprints over the smaller submission's count, 0..1
    shared: int
    lines: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]  # each one's matching line ranges


def similar_pairs(module: str, class_prints: Mapping[str, Fingerprints], discounted: set[int],
                  threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of ``class_prints`` (student -> fingerprints of this module) from ``threshold`` on,
    most similar first, after the discounted fingerprints and the class's common ones are left out."""
    held = Counter(value for prints in class_prints.values() for value in prints)
    common_above = max(COMMON_FLOOR, COMMON_SHARE * len(class_prints))
    kept = {student: {value: lines for value, lines in prints.items()
                      if value not in discounted and held[value] <= common_above}
            for student, prints in class_prints.items()}
    students = sorted(student for student, prints in kept.items() if len(prints) >= MIN_SHARED)
    pairs = []
    for i, first in enumerate(students):
        for second in students[i + 1:]:
            shared = kept[first].keys() & kept[second].keys()
            similarity = len(shared) / min(len(kept[first]), len(kept[second]))
            if len(shared) >= MIN_SHARED and similarity >= threshold:
                lines = (line_ranges(kept[first], shared), line_ranges(kept[second], shared))
                pairs.append(Pair(module, (first, second), similarity, len(shared), lines))
    return sorted(pairs, key=lambda p: (-p.similarity, p.students))


def line_ranges(prints: Fingerprints, values: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """The lines the fingerprints ``values`` cover in ``prints``, as sorted (first, last) ranges; a
    range goes on over one line without tokens (a blank line, a comment)."""
    merged: list[list[int]] = []
    for line in sorted(set().union(*(prints[value] for value in values))):
        if merged and line <= merged[-1][1] + 2:
            merged[-1][1] = line
        else:
            merged.append([line, line])
    return tuple((first, last) for first, last in merged)
