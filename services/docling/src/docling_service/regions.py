"""Where each block's text lies on its page: printed lines placed in the Markdown (no docling, no I/O here).

A segment (markdown.Segment) carries the lines it was made from (``located``: text, page, box) beside its text,
which the paragraph merger joined from them (a space between lines, a hyphen dropped at a line break, maybe
normalised). Each line is placed in the block's Markdown by counting letters and digits: the n-th letter or digit
of the block is the n-th of its lines taken in order, whatever spaces, hyphens or Markdown syntax (a table's pipes)
came in between. NFKC first, so a ligature counts as the letters it stands for on both sides.

Kept apart from the block assembly (pdf_lines.py) on purpose: it only needs each line's text in reading order.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

from ingestion_contracts.regions import MAX_CAPTION_CHARS, PageSize, Region, Unit, UnitKind

Box = tuple[float, float, float, float]  # x0, top, x1, bottom in points, top-left origin
# Caption words in the languages of the manuals measured (English, German, French, Spanish, Italian, Portuguese).
# "3", "3.1", "5a" (a part of figure 5), "IV", then a stop, a colon or a space
_NUMBER = r"\s*(?:\d+(?:\.\d+)*[a-z]?|[IVXivx]+)[.:\s]"
_CAPTION = {
    "table": re.compile(r"^\s*(table|tab\.|tabelle|tableau|tabla|tabella|tabela)" + _NUMBER, re.IGNORECASE),
    "figure": re.compile(r"^\s*(figure|fig\.|abbildung|abb\.|figura|figur)" + _NUMBER, re.IGNORECASE),
}
DIGITS = 1  # coordinates are kept to a tenth of a point
_ALNUM = re.compile(r"[^\W_]")  # a letter or a digit (str.isalnum), found in C


class LineLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def page(self) -> int: ...
    @property
    def left(self) -> float: ...
    @property
    def top(self) -> float: ...
    @property
    def right(self) -> float: ...
    @property
    def bottom(self) -> float: ...
    @property
    def box(self) -> tuple[float, float, float, float] | None: ...


@dataclass(frozen=True)
class Located:
    """Text printed at ``box`` on ``page``: a line of a paragraph, a row of a table."""

    text: str
    page: int
    box: Box


@dataclass(frozen=True)
class UnitDraft:
    """A table or figure before its Markdown offsets are known: the segment carrying it gives them."""

    kind: UnitKind
    page: int
    box: Box
    caption: str = ""


def rounded(box: Sequence[float]) -> Box:
    x0, top, x1, bottom = (round(float(v), DIGITS) for v in box)
    return (min(x0, x1), min(top, bottom), max(x0, x1), max(top, bottom))


def located(lines: Iterable[LineLike]) -> tuple[Located, ...]:
    """Page lines (pdf_lines.Line, OCR lines) as located text: where they are printed on the page (a line read from
    a scan turned sideways has its reading frame's coordinates, and the page's in ``box``). A bookmark's title that
    its page does not print (pdf_outline.py) is not located anywhere. A line that gives its words (a displayed
    formula's, taller than its type by its sub- and superscripts) is located word by word."""
    out: list[Located] = []
    for line in lines:
        if not getattr(line, "printed", True):
            continue
        words = getattr(line, "words", ())
        if words:
            out.extend(Located(text, line.page, rounded(box)) for text, box in words)
        else:
            out.append(
                Located(line.text, line.page, rounded(line.box or (line.left, line.top, line.right, line.bottom)))
            )
    return tuple(out)


def union(boxes: Iterable[Box]) -> Box:
    found = list(boxes)
    return (min(b[0] for b in found), min(b[1] for b in found), max(b[2] for b in found), max(b[3] for b in found))


def _counted(text: str) -> int:
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return len(_ALNUM.findall(text))


def _alnum_positions(body: str) -> list[tuple[int, int]]:
    """(offset, weight) of each letter or digit of ``body``: weight = how many it counts for after NFKC."""
    if body.isascii():
        return [(match.start(), 1) for match in _ALNUM.finditer(body)]
    return [(match.start(), max(_counted(match.group()), 1)) for match in _ALNUM.finditer(body)]


def place(body: str, start: int, lines: Sequence[Located]) -> list[Region]:
    """Regions of ``lines`` inside a block whose text ``body`` starts at Markdown offset ``start``.

    Line i covers the letters and digits that follow those of lines 0..i-1, from its first to its last one, with
    the punctuation attached to them (``(see``, ``page.``). A line without letters or digits gets no region; one
    that the block's text does not reach (the merger left it out) neither.

    A line of symbols only (a listing's lone ``}``, an equation's ``=``) is placed where its symbols come next in
    the text, before the next letter or digit; where they do not (the Markdown rewrote them), it gets no region."""
    positions = _alnum_positions(body)
    totals = list(accumulate(weight for _, weight in positions))  # letters and digits up to each position
    regions: list[Region] = []
    cursor = 0  # positions taken by the lines before
    previous_end = 0
    for line in lines:
        wanted = _counted(line.text)
        if not wanted:
            symbols = "".join(line.text.split())
            following = positions[cursor][0] if cursor < len(positions) else len(body)
            at = body.find(symbols, previous_end, following) if symbols else -1
            if at >= 0:
                regions.append(Region(page=line.page, start=start + at, end=start + at + len(symbols), box=line.box))
                previous_end = at + len(symbols)
            continue
        if cursor >= len(positions):
            continue
        first = cursor
        done = totals[cursor - 1] if cursor else 0
        cursor = min(bisect_left(totals, done + wanted, lo=cursor) + 1, len(positions))
        begin, end = positions[first][0], positions[cursor - 1][0] + 1
        while begin > previous_end and not body[begin - 1].isspace() and not body[begin - 1].isalnum():
            begin -= 1  # opening punctuation of the line's first word
        following = positions[cursor][0] if cursor < len(positions) else len(body)
        while end < following and not body[end].isspace():
            end += 1  # closing punctuation of its last word
        regions.append(Region(page=line.page, start=start + begin, end=start + end, box=line.box))
        previous_end = end
    return regions


def caption_kind(text: str) -> UnitKind | None:
    """ "table" or "figure" for a caption line ("Table 3: ...", "Fig. 2."), else None."""
    for kind, pattern in _CAPTION.items():
        if pattern.match(text):
            return kind  # type: ignore[return-value]  # the two keys are the UnitKind values
    return None


def unit(draft: UnitDraft, start: int, end: int) -> Unit:
    return Unit(kind=draft.kind, page=draft.page, start=start, end=end, box=draft.box,
                caption=" ".join(draft.caption.split())[:MAX_CAPTION_CHARS])  # fmt: skip


def page_sizes(
    sizes: dict[int, tuple[float, float]], regions: Sequence[Region], units: Sequence[Unit]
) -> list[PageSize]:
    """The sizes of the pages the regions and units name, in page order."""
    named = {r.page for r in regions} | {u.page for u in units}
    return [PageSize(page=page, width=round(w, 2), height=round(h, 2)) for page, (w, h) in sorted(sizes.items())
            if page in named and w > 0 and h > 0]  # fmt: skip
