"""The reference a passage's boxes are checked against: the words' own boxes, from poppler's
`pdftotext -bbox-layout` (a reader independent of PDFium and docling-parse), and the two measures.

- coverage: the share of the passage's word area inside the marked boxes (1.0: every word fully marked);
- outside: the share of the marked area that lies on none of the passage's words. Two readings are given:
  ``strict`` counts the space between two words of a line as outside; ``lines`` counts it as the line's (a
  highlighter marks it too): the gap between neighbouring words of one line, up to two line heights, is filled.

A passage's words are found by aligning its text (letters and digits, lower-cased) with the words of its pages in
poppler's reading order (difflib's matching blocks); words that do not align (a hyphenated word split in two, a
ligature) are left out of both sides rather than guessed.
"""

from __future__ import annotations

import html
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

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


def passage_words(text: str, words: Sequence[Word]) -> list[Word]:
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
