"""A drawn table's cells from the words printed in it (geometry only, no I/O here).

The words come from pdfplumber's characters, split where the characters' own gaps say (``WORD_GAP`` of the type
size): TeX and xdvipdfmx write no space characters, and a fixed tolerance glued "label text has no affect" into one
word. A cell's words make its printed lines; a band of cells (one ruled row, or a whole table ruled only above and
below) makes printed rows: a line that fills the first column, or two cells or more, starts a row; a line that
fills one other cell continues the row above (a wrapped description). A table that rules off only its header prints
its body rows inside one ruled row, a value a line in each cell: such a band is read as the rows it prints.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .pdf_lines import is_mono_font
from .pdf_text import clean_text
from .regions import Box, rounded, union

WORD_GAP = 0.15  # of the type size: wider gaps between characters are spaces (TeX's narrowest is ~0.22)
SCRIPT = 0.85  # a word set this much smaller than its neighbour is a sub- or superscript
COLUMN_GAP = 1.0  # of the type size: wider gaps between words of a line are column gaps
STACKING_ROWS = 3  # a grid of more ruled rows rules its rows one by one
_BREAK_HYPHEN = re.compile(r"[^\W\d_]-$")

CellLine = tuple[str, Box]  # a cell's printed line: its text and where it is


@dataclass(frozen=True)
class Word:
    text: str
    box: Box
    size: float  # the type size its characters are set in
    mono: bool = False  # set in a monospaced font

    @property
    def middle(self) -> float:
        return (self.box[1] + self.box[3]) / 2

    @property
    def height(self) -> float:
        return max(self.box[3] - self.box[1], 0.1)


_UNMAPPED = re.compile(r"\(cid:\d+\)")  # a glyph pdfminer found no character for


def words_of(found: Sequence[dict[str, object]]) -> list[Word]:
    """pdfplumber's words (``extract_words(x_tolerance_ratio=WORD_GAP, extra_attrs=["size", "fontname"])``)."""
    out = []
    for word in found:
        box = rounded((float(word["x0"]), float(word["top"]), float(word["x1"]), float(word["bottom"])))  # type: ignore[arg-type]  # pdfplumber's values are numbers
        size = float(word.get("size", box[3] - box[1]))  # type: ignore[arg-type]  # a number, as above
        text = _UNMAPPED.sub("", str(word["text"]))
        if text:
            out.append(Word(text, box, size, is_mono_font(str(word.get("fontname", "")))))
    return out


def inside(words: Sequence[Word], box: Box) -> list[Word]:
    """The words whose middle lies in ``box``."""
    return [w for w in words if box[0] <= (w.box[0] + w.box[2]) / 2 <= box[2] and box[1] <= w.middle <= box[3]]


def printed_lines(words: Sequence[Word]) -> list[list[Word]]:
    """Words grouped into printed lines, top to bottom, each left to right: a word joins the line whose middle is
    within half a typical word's height of its own, or, set smaller, touches it (a sub- or superscript). A tall
    word (a big operator of a formula) joins the nearest line without moving it, so it bridges no two lines."""
    if not words:
        return []
    typical = statistics.median(w.height for w in words)
    lines: list[list[Word]] = []
    middles: list[float] = []
    for word in sorted(words, key=lambda w: (w.middle, w.box[0])):
        near = min(range(len(lines)), key=lambda i: abs(middles[i] - word.middle), default=None)
        if near is not None and (abs(middles[near] - word.middle) < 0.5 * typical or _script(word, lines[near])):
            lines[near].append(word)
        else:
            lines.append([word])
            middles.append(word.middle)
    for line in lines:
        line.sort(key=lambda w: w.box[0])
    return sorted(lines, key=lambda line: min(w.box[1] for w in line))


def _script(word: Word, line: Sequence[Word]) -> bool:
    """A word set smaller than a line's words and overlapping them vertically: its sub- or superscript."""
    size = max(w.size for w in line)
    top, bottom = min(w.box[1] for w in line), max(w.box[3] for w in line)
    return word.size < SCRIPT * size and min(bottom, word.box[3]) - max(top, word.box[1]) > 0


def line_text(line: Sequence[Word]) -> str:
    """A printed line's words joined: a space where there is a gap, none where one word runs into the next (a
    subscript under its superscript, an accent over its letter)."""
    text = ""
    previous: Word | None = None
    for word in line:
        if previous is not None and word.box[0] - previous.box[2] > WORD_GAP * max(word.size, previous.size, 1.0):
            text += " "
        text += word.text
        previous = word
    return text


def cell_lines(words: Sequence[Word]) -> list[CellLine]:
    return [(clean_text(line_text(line)), rounded(union(w.box for w in line))) for line in printed_lines(words)]


def join_lines(lines: Sequence[str]) -> str:
    """A cell's lines as one text: a space between lines, a word hyphenated at a line break whole again (lower
    case after the hyphen, or an identifier in capitals: "XACE_SCREENSAVER_AC-" "CESS")."""
    text = ""
    for line in (line.strip() for line in lines):
        if not text:
            text = line
        elif _BREAK_HYPHEN.search(text) and (line[:1].islower() or (line[:1].isupper() and _caps_end(text))):
            text = text[:-1] + line
        else:
            text = f"{text} {line}"
    return " ".join(text.split())


def _caps_end(text: str) -> bool:
    last = text[:-1].split()[-1] if text[:-1].split() else ""
    letters = [c for c in last if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


Band = list[list[CellLine]]  # one entry per column: the lines printed in that cell


def printed_rows(band: Band, held: Sequence[int] = ()) -> list[Band]:
    """The rows a band of cells prints. Lines side by side across the cells (their middles within half a line of
    each other) are one printed line; a printed line starts a row when it fills the first column or two cells or
    more, else it continues the row above. ``held``: columns whose cell spans this band and the rows below (a merged
    cell, centred on them): its lines go to the first row whatever their height."""
    placed = [(column, line) for column, lines in enumerate(band) if column not in held for line in lines]
    placed.sort(key=lambda item: (item[1][1][1] + item[1][1][3]) / 2)
    groups: list[list[tuple[int, CellLine]]] = []
    for column, line in placed:
        middle, height = (line[1][1] + line[1][3]) / 2, line[1][3] - line[1][1]
        last = groups[-1] if groups else None
        if last is not None and any(abs(middle - (o[1][1] + o[1][3]) / 2) < 0.5 * max(height, o[1][3] - o[1][1])
                                    for _, o in last):  # fmt: skip
            last.append((column, line))
        else:
            groups.append([(column, line)])
    rows: list[Band] = []
    for group in groups:
        filled = {column for column, _ in group}
        if not rows or 0 in filled or len(filled) >= 2:
            rows.append([[] for _ in band])
        for column, line in group:
            rows[-1][column].append(line)
    if not rows:
        rows.append([[] for _ in band])
    for column in held:
        rows[0][column] = list(band[column])
    return rows


def stacked(rows: list[Band], ruled_rows: int) -> bool:
    """Whether a ruled row's printed rows are rows of the table (a body ruled off as one row, crc-doc's timings) rather
    than one row whose cells wrap: three of them or more fill the first column and another (two, in a grid of at most
    ``STACKING_ROWS`` ruled rows). Wrapped cells centred beside a cell of one line ("ARM with hardware" / "armhf" /
    "FPU") print the first column alone; a grid that rules every row rarely wraps two cells line for line."""
    filled = sum(1 for row in rows if row[0] and sum(1 for cell in row if cell) >= 2)
    return filled >= 3 or (filled == 2 and ruled_rows <= STACKING_ROWS)


def columns_by_gaps(lines: Sequence[Sequence[Word]]) -> list[tuple[float, float]]:
    """The columns of a table without column rules: the words of its lines gathered into phrases (words closer than
    ``COLUMN_GAP`` of their size), and the x-extents of the phrases of lines with two phrases or more merged where
    they overlap. A line of one phrase (a heading that spans columns) does not decide them."""
    spans: list[tuple[float, float]] = []
    for line in lines:
        found = phrases(line)
        if len(found) >= 2:
            spans.extend((p[0].box[0], p[-1].box[2]) for p in found)
    columns: list[tuple[float, float]] = []
    support: list[int] = []
    for left, right in sorted(spans):
        if columns and left <= columns[-1][1]:
            columns[-1] = (columns[-1][0], max(columns[-1][1], right))
            support[-1] += 1
        else:
            columns.append((left, right))
            support.append(1)
    # A column only one phrase makes is a cell's wide justified gap ("... at twice current   size"): its left's.
    for index in range(len(columns) - 1, 0, -1):
        if support[index] == 1 and len(spans) > 2:
            columns[index - 1] = (columns[index - 1][0], columns[index][1])
            del columns[index], support[index]
    return columns


def phrases(line: Sequence[Word]) -> list[list[Word]]:
    """A line's words in runs closer than ``COLUMN_GAP`` of their size: the cells it prints."""
    sizes = [w.size for w in line if w.size > 0]
    size = statistics.median(sizes) if sizes else 10.0
    out: list[list[Word]] = []
    for word in line:
        if out and word.box[0] - out[-1][-1].box[2] <= COLUMN_GAP * size:
            out[-1].append(word)
        else:
            out.append([word])
    return out


def column_of(phrase: Sequence[Word], columns: Sequence[tuple[float, float]]) -> int:
    """The first column a phrase overlaps (a spanning cell is written in its first column), else the nearest."""
    left, right = phrase[0].box[0], phrase[-1].box[2]
    for index, (start, end) in enumerate(columns):
        if left < end and right > start:
            return index
    middle = (left + right) / 2
    return min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - middle))
