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
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling.utils.locks import pypdfium2_lock

from .markdown import Segment
from .regions import Box, Located, UnitDraft, caption_kind, rounded, union

log = logging.getLogger("docling_service.units")

MIN_FIGURE_HEIGHT = 12.0  # points: graphics lower than this (a rule under a heading) are no figure
MIN_PICTURE_SIDE = 36.0  # half an inch: smaller images are bullets, logos, icons
BACKGROUND_SHARE = 0.6  # a graphic over this share of the page is its background, not a figure
# One to three letters repeated eight times or more, the whole word: a pattern drawn with a font, not a word.
_PATTERN = re.compile(r"([^\W\d_]{1,3})\1{7,}")
_GRAPHICS = (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_SHADING)


@dataclass(frozen=True)
class Graphic:
    box: Box
    picture: bool  # a raster image


def _box(segment: Segment) -> Box | None:
    return union(line.box for line in segment.located) if segment.located else None


def _gap_y(a: Box, b: Box) -> float:
    """Vertical distance between two boxes (0 when they overlap)."""
    return max(a[1] - b[3], b[1] - a[3], 0.0)


def page_graphics(data: bytes, pages: set[int]) -> tuple[dict[int, list[Graphic]], dict[int, float]]:
    """The graphics of the given pages (1-based), top-left origin, page backgrounds left out; and each page's width."""
    found: dict[int, list[Graphic]] = {}
    widths: dict[int, float] = {}
    if not pages:
        return found, widths
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            for number in sorted(pages):
                if number > len(document):
                    continue
                page = document[number - 1]
                width, height = page.get_size()
                graphics = []
                for obj in page.get_objects(filter=list(_GRAPHICS), max_depth=4):
                    left, bottom, right, top = obj.get_bounds()
                    box = rounded((left, height - top, right, height - bottom))
                    if (box[2] - box[0]) * (box[3] - box[1]) <= BACKGROUND_SHARE * width * height:
                        graphics.append(Graphic(box, obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE))
                found[number], widths[number] = graphics, width
                page.close()
        finally:
            document.close()
    return found, widths


def _column(caption: Box, lines: list[Box], width: float) -> tuple[float, float]:
    """The left and right edges of the text column the caption is centred in (the whole page when none)."""
    middle = (caption[0] + caption[2]) / 2
    holding = [line for line in lines if line[0] <= middle <= line[2] and line[2] - line[0] >= 0.3 * width]
    if not holding:
        return 0.0, width
    return min(line[0] for line in holding), max(line[2] for line in holding)


def figure_box(caption: Box, lines: list[Box], graphics: list[Graphic], width: float) -> Box | None:
    """The figure a caption names: the graphics of its column between it and the body text above it (else below
    it), with the labels among them; None when that band holds no graphic."""
    left, right = _column(caption, lines, width)
    wide = [line for line in lines if line[2] - line[0] >= 0.5 * (right - left) and line[0] < right and line[2] > left]
    column = [g for g in graphics if left - 2 <= g.box[0] and g.box[2] <= right + 2]
    above = [line[3] for line in wide if line[3] <= caption[1] + 1]
    top = max(above) if above else min((line[1] for line in lines), default=0.0)
    below = [line[1] for line in wide if line[1] >= caption[3] - 1 and line != caption]
    bottom = min(below) if below else max((line[3] for line in lines), default=caption[3])
    for band in ((top, caption[1] + 1), (caption[3] - 1, bottom)):
        inside = [g.box for g in column if band[0] - 0.5 <= g.box[1] and g.box[3] <= band[1] + 0.5]
        if inside and (union(inside)[3] - union(inside)[1] > MIN_FIGURE_HEIGHT or any(g.picture for g in column)):
            box = union(inside)
            labels = [line for line in lines if _inside(line, box)]
            return rounded(union([box, *labels]))
    return None


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


def _with_figures(segments: list[Segment], data: bytes, outlined: bool) -> list[Segment]:
    captions = {i: box for i, s in enumerate(segments)
                if s.page and caption_kind(s.text) == "figure" and (box := _box(s)) is not None}  # fmt: skip
    pages = {s.page for s in segments if s.page}
    try:
        graphics, widths = page_graphics(data, pages)
    except Exception as exc:  # a page PDFium cannot read keeps its text; only its figures go
        log.warning("figure search failed; figures are left out", exc_info=exc)
        return segments
    out = list(segments)
    claimed: list[Box] = []
    figures: dict[int, list[Box]] = {}
    for index, caption in captions.items():
        page = segments[index].page
        assert page is not None
        lines = [line.box for segment in segments if segment.page == page for line in segment.located]
        first_line = next((line.box for line in segments[index].located), caption)  # "Figure 1." itself
        figure = figure_box(first_line, lines, graphics.get(page, []), widths.get(page, 0.0))
        if figure is not None:
            draft = UnitDraft("figure", page, rounded(figure), segments[index].text)
            out[index] = dataclasses.replace(out[index], units=(*out[index].units, draft))
            claimed.append(figure)
            figures.setdefault(page, []).append(figure)
    for page, found in graphics.items():
        for graphic in found:
            box = graphic.box
            big = box[2] - box[0] >= MIN_PICTURE_SIDE and box[3] - box[1] >= MIN_PICTURE_SIDE
            if not graphic.picture or not big or any(_inside(box, c) for c in claimed):
                continue
            carrier = _nearest(out, page, box)
            if carrier is not None:
                drafts = (*out[carrier].units, UnitDraft("figure", page, box))
                out[carrier] = dataclasses.replace(out[carrier], units=drafts)
                claimed.append(box)
    return _figure_interiors(out, figures, outlined)


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
