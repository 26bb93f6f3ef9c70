"""Text lines of the model-free PDF pipeline merged into paragraphs and headings (geometry only, no I/O).

The native pipeline reports one item per printed line, without reading structure. Lines are joined
into a paragraph while they follow each other closely on the same page in the same font size;
a short line set in a clearly larger font than the body text becomes a heading.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from .markdown import Segment
from .regions import located

# A gap wider than this many line heights separates paragraphs (body leading is 0.15-0.5).
PARAGRAPH_GAP = 0.8
# Line heights that differ by more than this fraction are different font sizes.
SIZE_TOLERANCE = 0.15
HEADING_SIZE_RATIO = 1.2
MAX_HEADING_CHARS = 120
# A line ending a sentence that stops this far short of the column's right edge ends its paragraph.
SHORT_LINE = 0.8
_SENTENCE_END = re.compile(r"[.!?:;]['\")\]]?$")
_HYPHENATED = re.compile(r"[^\W\d_]-$")


@dataclass(frozen=True)
class Line:
    """One printed line, in top-left coordinates (y grows downwards)."""

    text: str
    page: int
    left: float
    top: float
    right: float
    bottom: float
    box: tuple[float, float, float, float] | None = None  # where it is printed, when read turned (a sideways scan)

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 0.1)


def _same_size(a: Line, b: Line) -> bool:
    return abs(a.height - b.height) <= SIZE_TOLERANCE * max(a.height, b.height)


def _column_right(lines: list[Line]) -> dict[int, float]:
    right: dict[int, float] = {}
    for line in lines:
        right[line.page] = max(right.get(line.page, 0.0), line.right)
    return right


def _continues(prev: Line, line: Line, column_right: float) -> bool:
    """Whether ``line`` continues the paragraph that ``prev`` ends."""
    if line.page != prev.page or not _same_size(prev, line):
        return False
    gap = line.top - prev.bottom
    if gap < -0.5 * prev.height or gap > PARAGRAPH_GAP * max(prev.height, line.height):
        return False  # above the previous line (a new column) or after a paragraph gap
    if line.left > prev.right:
        return False  # beside it: another column or a table cell
    width = column_right - prev.left
    ends_short = width > 0 and (prev.right - prev.left) < SHORT_LINE * width
    return not (ends_short and _SENTENCE_END.search(prev.text.rstrip()))


def _join(lines: list[Line]) -> str:
    text = ""
    for line in lines:
        part = line.text.strip()
        if not text:
            text = part
        elif _HYPHENATED.search(text) and part[:1].islower():
            text = text[:-1] + part  # a word hyphenated across the line break
        else:
            text = f"{text} {part}"
    return text


def _body_height(lines: list[Line]) -> float:
    """The line height most of the text is set in (weighted by characters)."""
    weighted = [round(line.height, 1) for line in lines for _ in range(max(1, len(line.text) // 10))]
    return statistics.median(weighted) if weighted else 0.0


def _heading_levels(paragraphs: list[list[Line]], body: float) -> dict[float, int]:
    sizes = sorted(
        {round(p[0].height, 1) for p in paragraphs if len(p) == 1 and p[0].height >= HEADING_SIZE_RATIO * body},
        reverse=True,
    )
    return {size: min(index + 1, 3) for index, size in enumerate(sizes)}


def _is_heading(paragraph: list[Line], levels: dict[float, int]) -> bool:
    if len(paragraph) != 1 or round(paragraph[0].height, 1) not in levels:
        return False
    text = paragraph[0].text.strip()
    return 0 < len(text) <= MAX_HEADING_CHARS and any(c.isalpha() for c in text) and not text.endswith(".")


def _paragraphs(items: list[Line | Segment], right: dict[int, float]) -> list[list[Line] | Segment]:
    """Lines grouped into paragraphs; a ready segment (a table) ends the paragraph before it."""
    groups: list[list[Line] | Segment] = []
    for item in items:
        if isinstance(item, Segment):
            groups.append(item)
        elif item.text.strip():
            last = groups[-1] if groups else None
            if isinstance(last, list) and _continues(last[-1], item, right[item.page]):
                last.append(item)
            else:
                groups.append([item])
    return groups


def merge_lines(items: list[Line | Segment]) -> list[Segment]:
    """Paragraph and heading segments from lines given in reading order; segments in between pass through."""
    lines = [item for item in items if isinstance(item, Line) and item.text.strip()]
    groups = _paragraphs(items, _column_right(lines))
    levels = _heading_levels([group for group in groups if isinstance(group, list)], _body_height(lines))
    segments = []
    for paragraph in groups:
        if isinstance(paragraph, Segment):
            segments.append(paragraph)
            continue
        page = paragraph[0].page
        if _is_heading(paragraph, levels):
            level = levels[round(paragraph[0].height, 1)]
            segments.append(
                Segment(kind="heading", text=_join(paragraph), page=page, level=level, located=located(paragraph))
            )
        else:
            segments.append(Segment(kind="paragraph", text=_join(paragraph), page=page, located=located(paragraph)))
    return segments
