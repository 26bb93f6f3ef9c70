"""The reference a passage's boxes are checked against: the words' own boxes, from poppler's
`pdftotext -bbox-layout` (a reader independent of PDFium and docling-parse), and the two measures.

- coverage: the share of the passage's word area inside the marked boxes (1.0: every word fully marked);
- outside: the share of the marked area that lies on none of the passage's words. Two readings are given:
  ``strict`` counts the space between two words of a line as outside; ``lines`` counts it as the line's (a
  highlighter marks it too): the gap between neighbouring words of one line, up to two line heights, is filled.

A passage's words are found by aligning its whole text, every character but spaces (short words, numbers and
punctuation too), with the words of its pages in poppler's reading order: one infix alignment (edlib: the least
edits that turn the passage into some stretch of the pages), so that where the pages repeat a line (a table's header,
a run of near-identical signatures) the copy is chosen by the passage's text around it, never by where the marks
are. A word is the passage's when most of its characters align. ``passage_words_in_runs`` is the first measure,
kept for comparison: letters and digits only, in runs of 4 or more (difflib), which leaves short words and
punctuation out and can take a repeated run from the wrong copy.
"""

from __future__ import annotations

import html
import re
import subprocess
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

import edlib
import numpy as np

Box = tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
GRID = 4  # cells per point when areas are measured
_TOKEN = re.compile(r"[^\W_]+")
_PAGE = re.compile(r'<page width="(?P<width>[\d.]+)" height="(?P<height>[\d.]+)">')
_LINE = re.compile(r"<line [^>]*>(?P<body>.*?)</line>", re.DOTALL)
_WORD = re.compile(
    r'<word xMin="(?P<x0>[\d.-]+)" yMin="(?P<y0>[\d.-]+)" xMax="(?P<x1>[\d.-]+)" yMax="(?P<y1>[\d.-]+)">'
    r"(?P<text>.*?)</word>",
    re.DOTALL,
)


@dataclass(frozen=True)
class Word:
    text: str
    page: int
    box: Box
    line: int  # poppler's line number on the page (words of one line share it)


def _key(text: str) -> str:
    return "".join(_TOKEN.findall(text.lower()))


def pdf_words(pdf: Path, pages: Iterable[int]) -> tuple[list[Word], dict[int, tuple[float, float]]]:
    """The words of the given pages in poppler's reading order, and each page's size in points. (The XHTML is read
    with patterns: poppler leaves some characters unescaped, which an XML parser refuses.)"""
    words: list[Word] = []
    sizes: dict[int, tuple[float, float]] = {}
    line_number = 0
    for page in sorted(set(pages)):
        xhtml = subprocess.run(["pdftotext", "-bbox-layout", "-f", str(page), "-l", str(page), str(pdf), "-"],
                               capture_output=True, text=True, check=True, errors="replace").stdout  # fmt: skip
        if found := _PAGE.search(xhtml):
            sizes[page] = (float(found["width"]), float(found["height"]))
        for line in _LINE.finditer(xhtml):
            line_number += 1
            for word in _WORD.finditer(line["body"]):
                box = (float(word["x0"]), float(word["y0"]), float(word["x1"]), float(word["y1"]))
                words.append(Word(html.unescape(word["text"]), page, box, line_number))
    return words, sizes


# Markdown the passage's text carries and the printed page does not: a table's rule row and cell bars, a heading's
# hashes, code fences.
_MARKUP = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$|^#{1,6}\s|^```.*$|\|", re.MULTILINE)
# Characters past this many distinct ones are one symbol (edlib aligns at most 256).
_ALPHABET = 250
# A match counts where the alignment matches at least IDENTITY of the WINDOW columns around it: unrelated English
# text lined up by an edit-distance alignment matches ~a third of its letters by chance.
WINDOW = 21
IDENTITY = 0.7
# Parts of a passage left unaligned, at least MIN_PART characters long, are aligned again, ROUNDS alignments at most.
MIN_PART = 12
ROUNDS = 12


def _chars(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


@dataclass(frozen=True)
class Aligned:
    words: list[Word]  # the passage's words on its pages
    share: float  # the share of the passage's characters aligned with the pages' (1.0: all, in their order)


def passage_words(text: str, words: Sequence[Word]) -> list[Word]:
    return aligned(text, words).words


def aligned(text: str, words: Sequence[Word]) -> Aligned:
    """The words of ``words`` (pages in reading order) that ``text`` holds.

    The text's characters (spaces and Markdown aside) are aligned inside the words' as one sequence (edlib's infix
    mode: free ends on the pages' side, so the stretch of the pages the whole passage matches best is taken). Only
    matches where the alignment is mostly matches count (IDENTITY over WINDOW columns), not letters that chance
    lines up between unrelated text. A part of the passage left unaligned (poppler reads the page's blocks in
    another order: the other column's first block between two of this column's) is aligned again, as a sequence
    too, against the characters not yet taken, up to ROUNDS times. A word is the passage's when most of its
    characters are matched."""
    wanted = _chars(_MARKUP.sub(" ", text))
    keys = [_chars(word.text) for word in words]
    owners = np.array([index for index, key in enumerate(keys) for _ in key], dtype=np.int64)
    page = "".join(keys)
    if not wanted or not page:
        return Aligned([], 0.0)
    symbols: dict[str, int] = {}
    for char, _ in Counter(wanted + page).most_common():
        symbols[char] = min(len(symbols), _ALPHABET)
    query = [symbols[c] for c in wanted]
    target = np.array([symbols[c] for c in page], dtype=np.int64)
    taken = np.zeros(len(page), dtype=bool)  # page characters inside an accepted alignment
    matched = np.zeros(len(page), dtype=bool)  # ... matched with the passage's same character
    done = 0
    todo = [(0, len(query))]
    for _ in range(ROUNDS):
        if not todo:
            break
        first, last = todo.pop(0)
        free = np.flatnonzero(~taken)
        if not len(free):
            break
        columns = _columns(query[first:last], target[free].tolist())
        if not columns:
            continue
        ops = np.array([op == "=" for op, _, _ in columns], dtype=float)
        window = np.ones(min(WINDOW, len(ops)))
        sure = np.convolve(ops, window, "same") / np.convolve(np.ones(len(ops)), window, "same") >= IDENTITY
        covered = np.zeros(last - first, dtype=bool)
        for (op, at_query, at_target), good in zip(columns, sure, strict=True):
            if not good:
                continue
            if at_target is not None:
                taken[free[at_target]] = True
                matched[free[at_target]] |= op == "="
            if at_query is not None:
                covered[at_query] = True
                done += op == "="
        # Parts of the passage this round left out are aligned again (each a sequence of its own).
        edges = np.flatnonzero(np.diff(np.concatenate(([0], (~covered).astype(int), [0]))))
        todo += [(first + a, first + b) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a >= MIN_PART]
    hits = np.bincount(owners[matched], minlength=len(words))
    chosen = [word for word, count, key in zip(words, hits, keys, strict=True) if key and count * 2 > len(key)]
    return Aligned(chosen, done / len(query))


def _columns(query: list[int], target: list[int]) -> list[tuple[str, int | None, int | None]]:
    """The alignment's columns: (op, position in query or None, position in target or None)."""
    found = edlib.align(query, target, mode="HW", task="path")
    if found["editDistance"] < 0 or not found["locations"]:
        return []
    columns: list[tuple[str, int | None, int | None]] = []
    at_query, at_target = 0, found["locations"][0][0]
    for count, op in re.findall(r"(\d+)([=XID])", found["cigar"]):
        for _ in range(int(count)):
            if op in "=X":
                columns.append((op, at_query, at_target))
                at_query, at_target = at_query + 1, at_target + 1
            elif op == "I":  # in the passage, not on the pages
                columns.append((op, at_query, None))
                at_query += 1
            else:  # D: on the pages, not in the passage
                columns.append((op, None, at_target))
                at_target += 1
    return columns


def passage_words_in_runs(text: str, words: Sequence[Word]) -> list[Word]:
    """The words of ``words`` that ``text`` holds: the letters and digits of both, lower-cased, aligned character by
    character (difflib), so that a word split or joined differently on the two sides (a hyphen at a line break, an
    underscore drawn as a rule) still aligns; a word counts when most of its characters align in runs of 4+."""
    wanted = "".join(_TOKEN.findall(text.lower()))
    owners: list[int] = []
    letters = []
    for index, word in enumerate(words):
        key = _key(word.text)
        letters.append(key)
        owners.extend([index] * len(key))
    page = "".join(letters)
    matched = [0] * len(words)
    matcher = SequenceMatcher(None, wanted, page, autojunk=False)
    for block in matcher.get_matching_blocks():
        if block.size >= 4:  # shorter runs are chance ("the", "of"), not the passage
            for position in range(block.b, block.b + block.size):
                matched[owners[position]] += 1
    chosen = {i for i, (hits, key) in enumerate(zip(matched, letters, strict=True)) if key and hits * 2 > len(key)}
    # Punctuation printed between two of its words on one line (a dot leader, a dash) is the passage's too.
    for index, key in enumerate(letters):
        if not key and index - 1 in chosen and _next_chosen(words, chosen, index):
            chosen.add(index)
    return [words[i] for i in sorted(chosen)]


def _next_chosen(words: Sequence[Word], chosen: set[int], index: int) -> bool:
    line = (words[index].page, words[index].line)
    for later in range(index + 1, len(words)):
        if (words[later].page, words[later].line) != line:
            return False
        if later in chosen:
            return True
    return False


def _mask(boxes: Iterable[Box], size: tuple[float, float]) -> np.ndarray:
    mask = np.zeros((int(size[1] * GRID) + 1, int(size[0] * GRID) + 1), dtype=bool)
    for x0, top, x1, bottom in boxes:
        mask[max(int(top * GRID), 0) : max(int(bottom * GRID), 0), max(int(x0 * GRID), 0) : max(int(x1 * GRID), 0)] = (
            True
        )
    return mask


def line_spans(words: Sequence[Word]) -> list[Box]:
    """The words' boxes with the gap between neighbours on one line filled (up to two line heights)."""
    spans: list[Box] = []
    previous: Word | None = None
    for word in sorted(words, key=lambda w: (w.page, w.line, w.box[0])):
        height = word.box[3] - word.box[1]
        joins = previous is not None and (previous.page, previous.line) == (word.page, word.line)
        if joins and spans and 0 <= word.box[0] - spans[-1][2] <= 2 * height:
            last = spans[-1]
            spans[-1] = (last[0], min(last[1], word.box[1]), word.box[2], max(last[3], word.box[3]))
        else:
            spans.append(word.box)
        previous = word
    return spans


@dataclass(frozen=True)
class Measured:
    coverage: float
    outside_strict: float
    outside_lines: float
    words: int
    marked_area: float  # square points


def measure(marked: dict[int, list[Box]], words: Sequence[Word], sizes: dict[int, tuple[float, float]]) -> Measured:
    """Coverage and outside shares of ``marked`` (boxes by page) against ``words`` (the passage's)."""
    covered = total = outside_strict = outside_lines = marked_cells = 0
    for page, size in sizes.items():
        on_page = [w for w in words if w.page == page]
        mark = _mask(marked.get(page, []), size)
        word_mask = _mask((w.box for w in on_page), size)
        line_mask = _mask(line_spans(on_page), size)
        covered += int((word_mask & mark).sum())
        total += int(word_mask.sum())
        marked_cells += int(mark.sum())
        outside_strict += int((mark & ~word_mask).sum())
        outside_lines += int((mark & ~line_mask).sum())
    return Measured(
        coverage=covered / total if total else 0.0,
        outside_strict=outside_strict / marked_cells if marked_cells else 0.0,
        outside_lines=outside_lines / marked_cells if marked_cells else 0.0,
        words=len(words),
        marked_area=marked_cells / GRID**2,
    )
