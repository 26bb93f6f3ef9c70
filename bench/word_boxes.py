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
import itertools
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
# Parts of a passage left unaligned, at least MIN_PART characters long (enough text to be placed by it), are aligned
# again, ROUNDS alignments at most.
MIN_PART = 24
ROUNDS = 12
# Shorter parts left over are taken word by word where they are printed as is, nearest the passage's words already
# found, at most NEAR line heights away.
NEAR = 2.0


def _chars(text: str) -> str:
    return "".join(_chars_by_word(text))


def _chars_by_word(text: str) -> list[str]:
    """The passage's words (spaces and Markdown aside), normalised as they are aligned."""
    return unicodedata.normalize("NFKC", _MARKUP.sub(" ", text)).lower().split()


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
    wanted = _chars(text)
    keys = [_chars(word.text) for word in words]
    page = "".join(keys)
    if not wanted or not page:
        return Aligned([], 0.0)
    symbols: dict[str, int] = {}
    for char, _ in Counter(wanted + page).most_common():
        symbols[char] = min(len(symbols), _ALPHABET)
    state = _State([symbols[c] for c in wanted], np.array([symbols[c] for c in page], dtype=np.int64))
    todo = [(0, len(wanted))]
    for _ in range(ROUNDS):
        if not todo:
            break
        # Parts of the passage a round left out are aligned again (each a sequence of its own).
        todo += [part for part in state.align(*todo.pop(0)) if part[1] - part[0] >= MIN_PART]
    # Short parts left out (a "[Function]" the PDF draws before its signature, poppler reads in a block of labels
    # after several; a table's "16") carry too little text to be placed by it: each is taken where it is printed as
    # is, nearest the passage's words the alignment found (never by where the marks are).
    owners = np.array([index for index, key in enumerate(keys) for _ in key], dtype=np.int64)
    starts = np.cumsum([len(piece) for piece in _chars_by_word(text)])  # where each of the passage's words ends
    for first, last in _runs(~state.covered):
        cuts = [first, *(int(at) for at in starts if first < at < last), last]
        for a, b in itertools.pairwise(cuts):  # word by word: ")" and "These" are printed apart
            state.place(wanted[a:b], a, b, page, owners, words)
    hits = np.bincount(owners[state.matched], minlength=len(words))
    chosen = [word for word, count, key in zip(words, hits, keys, strict=True) if key and count * 2 > len(key)]
    return Aligned(chosen, state.done / len(wanted))


class _State:
    """One passage's alignment with its pages so far."""

    def __init__(self, query: list[int], target: np.ndarray) -> None:
        self.query, self.target = query, target
        self.taken = np.zeros(len(target), dtype=bool)  # page characters inside an accepted alignment
        self.matched = np.zeros(len(target), dtype=bool)  # ... matched with the passage's same character
        self.covered = np.zeros(len(query), dtype=bool)  # the passage's characters inside an accepted alignment
        self.done = 0  # the passage's characters matched

    def align(self, first: int, last: int) -> list[tuple[int, int]]:
        """Align query[first:last] with the characters not yet taken; the parts of it left out."""
        free = np.flatnonzero(~self.taken)
        columns = _columns(self.query[first:last], self.target[free].tolist()) if len(free) else []
        if not columns:
            return []
        ops = np.array([op == "=" for op, _, _ in columns], dtype=float)
        window = np.ones(min(WINDOW, len(ops)))
        sure = np.convolve(ops, window, "same") / np.convolve(np.ones(len(ops)), window, "same") >= IDENTITY
        covered = np.zeros(last - first, dtype=bool)
        for (op, at_query, at_target), good in zip(columns, sure, strict=True):
            if good and at_target is not None:
                self.taken[free[at_target]] = True
                self.matched[free[at_target]] |= op == "="
            if good and at_query is not None:
                covered[at_query] = True
                self.done += op == "="
        self.covered[first:last] |= covered
        return [(first + a, first + b) for a, b in _runs(~covered)]

    def place(self, part: str, first: int, last: int, page: str, owners: np.ndarray, words: Sequence[Word]) -> None:
        """Take ``part`` (query[first:last]) where it is printed as is, in words not yet taken, nearest the words
        already matched (on their page, at most NEAR line heights away)."""
        near = [words[i] for i in np.unique(owners[self.matched])]
        if not near:
            return
        height = float(np.median([w.box[3] - w.box[1] for w in near]))
        best: tuple[float, int] | None = None
        for found in re.finditer(re.escape(part), page):
            if self.taken[found.start() : found.end()].any():
                continue
            word = words[owners[found.start()]]
            gaps = [_gap(word, other) for other in near if other.page == word.page]
            if gaps and min(gaps) <= NEAR * height and (best is None or min(gaps) < best[0]):
                best = (min(gaps), found.start())
        if best is not None:
            at = best[1]
            self.taken[at : at + len(part)] = self.matched[at : at + len(part)] = True
            self.covered[first:last] = True
            self.done += last - first


def _gap(a: Word, b: Word) -> float:
    """How far apart two words are printed: the vertical gap, and a quarter of the horizontal one."""
    dx = max(a.box[0] - b.box[2], b.box[0] - a.box[2], 0.0)
    dy = max(a.box[1] - b.box[3], b.box[1] - a.box[3], 0.0)
    return dy + dx / 4


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(int), [0]))))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


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
