"""Tables and figures as units of the model-free PDF reading: a table gets its caption, figures are found.

- A table's caption is the "Table N ..." paragraph just before or after it on its page (the nearer, where a caption
  lies between two tables).
- A figure is found from its caption: the "Figure N ..." (or "Fig. N") line, and the graphics (paths, images,
  shadings) PDFium finds in the band of its column between it and the body text above it (the nearest line of
  text as wide as half the column, else the page's first line: a running header), or below it when that band
  holds none; the figure is their box with the labels (text lines) inside it. The caption's paragraph carries it,
  so the chunk holding the caption holds the figure: searchable by its caption and the text around it.
- A raster image of at least ``MIN_PICTURE_SIDE`` points a side that no caption claimed is a figure without one,
  carried by the paragraph nearest below it on its page (else the one nearest above).
- A figure's interior is no section: a heading whose lines all lie inside a figure (a chart's label set larger than
  the body text), or that is set vertically (an axis label, "S e c o n d s", read as "s d n o c e S"), is a
  paragraph; but a heading the PDF's own outline names (a bookmark's title) stays one, whatever box a figure found
  around it takes in (why3's "2.2 Getting Started with the GUI", under its page's running head, was in the box of
  the screenshot below it, and its sections nested under 2.1). A block that is a
  drawn pattern, not words (a chart's hatching set in a Type 3 pattern font, which PDFium reads as "rururu..."; poppler
  reads nothing there), is left out, wherever it is.
"""

from __future__ import annotations

import dataclasses
import logging
import re

from .figures import PageGraphics, TextBlock, figure_box, page_graphics, uncaptioned
from .markdown import Segment
from .regions import Box, Located, UnitDraft, caption_kind, union

log = logging.getLogger("docling_service.units")

MIN_PICTURE_SIDE = 36.0  # half an inch: smaller images are bullets, logos, icons
# One to three letters repeated eight times or more, the whole word: a pattern drawn with a font, not a word.
_PATTERN = re.compile(r"([^\W\d_]{1,3})\1{7,}")


def _box(segment: Segment) -> Box | None:
    return union(line.box for line in segment.located) if segment.located else None


def _gap_y(a: Box, b: Box) -> float:
    """Vertical distance between two boxes (0 when they overlap)."""
    return max(a[1] - b[3], b[1] - a[3], 0.0)


def _caption_tables(segments: list[Segment]) -> list[Segment]:
    """Each "Table N" paragraph captions the table next to it in reading order that lies nearer on the page (a
    caption between two tables, below the first and above the second, is the one whose gap is smaller)."""
    out = list(segments)
    for index, segment in enumerate(segments):
        if segment.kind not in ("paragraph", "caption") or caption_kind(segment.text) != "table":
            continue
        box = _box(segment)
        tables = [i for i in (index - 1, index + 1) if 0 <= i < len(out) and _uncaptioned_table(out[i], segment.page)]
        if not tables:
            continue
        nearest = min(tables, key=lambda i: _gap_y(box, b) if box and (b := _box(out[i])) else abs(i - index))
        drafts = (dataclasses.replace(out[nearest].units[0], caption=segment.text), *out[nearest].units[1:])
        out[nearest] = dataclasses.replace(out[nearest], units=drafts)
    return out


def _uncaptioned_table(segment: Segment, page: int | None) -> bool:
    return segment.kind == "table" and segment.page == page and bool(segment.units) and not segment.units[0].caption


def _nearest(segments: list[Segment], page: int, box: Box) -> int | None:
    """The segment on ``page`` nearest below ``box`` (else nearest above) that has a place on it."""
    placed = [(i, b) for i, s in enumerate(segments) if s.page == page and (b := _box(s)) is not None]
    below = [(b[1] - box[3], i) for i, b in placed if b[1] >= box[3] - 2]
    above = [(box[1] - b[3], i) for i, b in placed if b[3] <= box[1] + 2]
    for side in (below, above):
        if side:
            return min(side)[1]
    return min(placed, key=lambda item: _gap_y(item[1], box))[0] if placed else None


def _blocks(segments: list[Segment]) -> dict[int, list[tuple[int, TextBlock]]]:
    """Each page's segments as the figure search sees them, with their index."""
    out: dict[int, list[tuple[int, TextBlock]]] = {}
    for index, segment in enumerate(segments):
        if segment.page and segment.located:
            block = TextBlock(
                tuple(line.box for line in segment.located), len(segment.text.split()),
                kind=segment.kind, caption=caption_kind(segment.text) is not None,
            )  # fmt: skip
            out.setdefault(segment.page, []).append((index, block))
    return out


def _with_figures(segments: list[Segment], data: bytes, outlined: bool) -> list[Segment]:
    blocks = _blocks(segments)
    try:
        graphics = page_graphics(data, set(blocks))
    except Exception as exc:  # a page PDFium cannot read keeps its text; only its figures go
        log.warning("figure search failed; figures are left out", exc_info=exc)
        return segments
    out = list(segments)
    figures: dict[int, list[Box]] = {}
    for page, on_page in blocks.items():
        found = graphics.get(page)
        if found is None:
            continue
        page_blocks = [block for _, block in on_page]
        for index, block in on_page:
            if block.caption and caption_kind(segments[index].text) == "figure":
                figure = figure_box(block, page_blocks, found)
                if figure is not None:
                    draft = UnitDraft("figure", page, figure, segments[index].text)
                    out[index] = dataclasses.replace(out[index], units=(*out[index].units, draft))
                    figures.setdefault(page, []).append(figure)
        tables = [unit.box for index, _ in on_page for unit in out[index].units if unit.kind == "table"]
        for box in _uncaptioned(found, page_blocks, figures.get(page, []), tables):
            carrier = _nearest(out, page, box)
            if carrier is not None:
                out[carrier] = dataclasses.replace(
                    out[carrier], units=(*out[carrier].units, UnitDraft("figure", page, box))
                )
                figures.setdefault(page, []).append(box)
    return _figure_interiors(out, figures, outlined)


def _uncaptioned(found: PageGraphics, blocks: list[TextBlock], claimed: list[Box], tables: list[Box]) -> list[Box]:
    """Raster images at least MIN_PICTURE_SIDE a side and drawings (figures.py) that no figure or table holds."""
    pictures = [
        g.box for g in found.graphics if g.picture and min(g.box[2] - g.box[0], g.box[3] - g.box[1]) >= MIN_PICTURE_SIDE
    ]
    out: list[Box] = []
    for box in [*pictures, *uncaptioned(found, blocks)]:
        if not any(_overlaps(box, other) for other in [*claimed, *tables, *out]):
            out.append(box)
    return out


def _overlaps(box: Box, other: Box) -> bool:
    """Whether most of ``box`` lies inside ``other``."""
    width = min(box[2], other[2]) - max(box[0], other[0])
    height = min(box[3], other[3]) - max(box[1], other[1])
    area = (box[2] - box[0]) * (box[3] - box[1])
    return width > 0 and height > 0 and width * height >= 0.5 * max(area, 1e-6)


def _drawn_pattern(text: str) -> bool:
    """Whether a block's text is a pattern drawn with a font ("rururu...", "ululul..."), no words."""
    words = text.split()
    return bool(words) and all(_PATTERN.fullmatch(word) for word in words)


def _vertical(lines: tuple[Located, ...]) -> bool:
    """Lines set vertically (words much taller than wide: an axis label, a margin note), never a heading; a
    heading of one letter ("A" of an index) is as tall as wide."""
    return all(len(line.text.strip()) > 1 and line.box[3] - line.box[1] > 2 * (line.box[2] - line.box[0])
               for line in lines)  # fmt: skip


def _within(boxes: list[Box], figures: list[Box]) -> bool:
    return any(all(_inside(box, figure) for box in boxes) for figure in figures)


def _figure_interiors(segments: list[Segment], figures: dict[int, list[Box]], outlined: bool) -> list[Segment]:
    """Headings inside a figure or set vertically become paragraphs (not those of the PDF's outline: ``outlined``);
    blocks that are drawn patterns are left out."""
    out = []
    for segment in segments:
        if segment.kind in ("heading", "paragraph") and not segment.units and _drawn_pattern(segment.text):
            continue
        boxes = [line.box for line in segment.located]
        if (
            segment.kind == "heading"
            and not outlined
            and boxes
            and (_vertical(segment.located) or _within(boxes, figures.get(segment.page or 0, [])))
        ):
            segment = dataclasses.replace(segment, kind="paragraph", level=None)
        out.append(segment)
    return out


def _inside(box: Box, outer: Box) -> bool:
    return box[0] >= outer[0] - 1 and box[1] >= outer[1] - 1 and box[2] <= outer[2] + 1 and box[3] <= outer[3] + 1


def with_units(segments: list[Segment], data: bytes, *, outlined: bool = False) -> list[Segment]:
    """Tables with their captions, and the figures of the PDF on the paragraphs that carry them. ``outlined``: the
    headings are the PDF's bookmarks (pdf_outline.mark_bookmarks), which a figure's box never turns into text."""
    return _with_figures(_caption_tables(segments), data, outlined)
