"""Where a PDF page's figures are: its graphics in page space, clustered into drawings, and the box a caption names.

- Graphics are PDFium's path, image and shading objects, Form XObjects' included: an object inside a form has its
  bounds in the form's space, so they are mapped through each enclosing form's matrix (the dot guide draws each
  graph as one form; read unmapped, its 78 paths sat in the page's corner and two captions got the same node).
- A drawing is a cluster of graphics less than ``GAP`` apart (a graph's nodes touch its edges; a chart's bars its
  axes), found through a grid of cells, so a page of 10,000 paths is not compared pair by pair.
- A caption's figure is what lies in the band of its column between it and the nearest body text or other caption
  above it (else below it): the graphics there, and the text lines there that sit beside or under them (a graph's
  labels, a chart's ticks, the listing printed beside its drawing). Body text is a heading, or a paragraph (not code)
  of six words or more with a row as wide as ``BODY_WIDTH`` of the page, outside every drawing: the labels of a graph
  set on one baseline, read as one wide line, are not body text. A band holding no graphic but text (a listing
  captioned "Figure 1") is a figure of the blocks adjoining the caption.
- A drawing no caption claims is a figure when it is at least ``MIN_DRAWING`` points wide and high and drawn: one of
  its paths, not its outer frame, bends or runs slanted, and it holds no body text. A ruled table, a rule, an
  underline, a page frame or a box around a listing is made of straight lines along the page's axes (or of a frame
  with rounded corners only); a warning's box holds body text beside its drawn sign: none of them is a figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling.utils.locks import pypdfium2_lock

from .regions import Box, rounded, union

GAP = 6.0  # points: graphics closer than this belong to one drawing
CELL = 24.0  # points: the side of the grid's cells the clustering looks up neighbours in
BACKGROUND_SHARE = 0.6  # a graphic over this share of the page is its background, not a figure
MIN_DRAWING = (72.0, 48.0)  # points: an uncaptioned drawing is at least an inch wide and two thirds of one high
BODY_WIDTH = 0.3  # a body line is at least this share of the page wide
BODY_WORDS = 6
TEXT_GAP = 18.0  # points: the blocks of a listing captioned as a figure lie closer than this to one another
LABEL_REACH = 12.0  # points: text this far above or below a figure's graphics is its (axis, tick) labels
_GRAPHICS = (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_SHADING)
_MAX_SEGMENTS = 400  # path segments looked at per path when telling a drawing from a frame


@dataclass(frozen=True)
class Graphic:
    box: Box
    picture: bool  # a raster image


@dataclass(frozen=True)
class PageGraphics:
    width: float
    graphics: list[Graphic] = field(default_factory=list)
    clusters: list[Box] = field(default_factory=list)  # the drawings: boxes of graphics less than GAP apart
    drawn: list[Box] = field(default_factory=list)  # the clusters big enough and drawn to be figures without caption


@dataclass(frozen=True)
class TextBlock:
    """A segment's lines on a page, as the figure search sees them."""

    lines: tuple[Box, ...]
    words: int
    kind: str = "paragraph"  # the segment's: heading, paragraph, code, table...
    caption: bool = False


def _mapped(obj: pdfium.PdfObject, height: float) -> Box:
    """``obj``'s bounds on the page (top-left origin), through the matrices of the forms that hold it."""
    left, bottom, right, top = obj.get_bounds()
    corners = [(left, bottom), (left, top), (right, bottom), (right, top)]
    container = obj.container
    while container is not None:
        matrix = container.get_matrix()
        corners = [matrix.on_point(x, y) for x, y in corners]
        container = container.container
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return rounded((min(xs), height - max(ys), max(xs), height - min(ys)))


def _bends(obj: pdfium.PdfObject) -> bool:
    """Whether a path has a curve or a slanted straight segment (a frame or a rule has neither)."""
    raw = obj.raw
    count = min(pdfium_c.FPDFPath_CountSegments(raw), _MAX_SEGMENTS)
    x, y = pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT()
    previous: tuple[float, float] | None = None
    for index in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(raw, index)
        kind = pdfium_c.FPDFPathSegment_GetType(segment)
        pdfium_c.FPDFPathSegment_GetPoint(segment, x, y)
        point = (x.value, y.value)
        if kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            return True
        slanted = previous is not None and abs(point[0] - previous[0]) > 1 and abs(point[1] - previous[1]) > 1
        if kind == pdfium_c.FPDF_SEGMENT_LINETO and slanted:
            return True
        previous = point
    return False


def clusters(boxes: list[Box], gap: float = GAP) -> list[list[int]]:
    """Indices of ``boxes`` grouped into clusters: boxes less than ``gap`` apart, and so on transitively."""
    parent = list(range(len(boxes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    cells: dict[tuple[int, int], list[int]] = {}
    for index, box in enumerate(boxes):
        for cell in _cells(box, gap / 2):
            for other in cells.setdefault(cell, []):
                if root(other) != root(index) and _near(box, boxes[other], gap):
                    parent[root(other)] = root(index)
            cells[cell].append(index)
    groups: dict[int, list[int]] = {}
    for index in range(len(boxes)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())


def _cells(box: Box, margin: float) -> Iterator[tuple[int, int]]:
    x0, y0 = math.floor((box[0] - margin) / CELL), math.floor((box[1] - margin) / CELL)
    x1, y1 = math.floor((box[2] + margin) / CELL), math.floor((box[3] + margin) / CELL)
    for cx in range(x0, x1 + 1):
        for cy in range(y0, y1 + 1):
            yield cx, cy


def _near(a: Box, b: Box, gap: float) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def _read_page(page: pdfium.PdfPage) -> PageGraphics:
    width, height = page.get_size()
    objects, graphics = [], []
    for obj in page.get_objects(filter=list(_GRAPHICS), max_depth=4):
        box = _mapped(obj, height)
        if (box[2] - box[0]) * (box[3] - box[1]) <= BACKGROUND_SHARE * width * height:
            objects.append(obj)
            graphics.append(Graphic(box, obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE))
    found, drawn = [], []
    for group in clusters([g.box for g in graphics]):
        box = union(graphics[i].box for i in group)
        found.append(box)
        big = box[2] - box[0] >= MIN_DRAWING[0] and box[3] - box[1] >= MIN_DRAWING[1]
        if big and not any(graphics[i].picture for i in group) and _drawing(box, [objects[i] for i in group]):
            drawn.append(box)
    return PageGraphics(width, graphics, found, drawn)


def _drawing(box: Box, objects: list[pdfium.PdfObject]) -> bool:
    """A cluster holding a path that bends, other than its outer frame (a listing's box with rounded corners)."""
    for obj in objects:
        if obj.type != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        left, bottom, right, top = obj.get_bounds()
        if obj.container is None and right - left >= box[2] - box[0] - 3 and top - bottom >= box[3] - box[1] - 3:
            continue  # the frame around the whole cluster
        if _bends(obj):
            return True
    return False


def page_graphics(data: bytes, pages: set[int]) -> dict[int, PageGraphics]:
    """The graphics and drawings of the given pages (1-based), top-left origin, page backgrounds left out."""
    found: dict[int, PageGraphics] = {}
    if not pages:
        return found
    with pypdfium2_lock:
        document = pdfium.PdfDocument(data)
        try:
            for number in sorted(pages):
                if number > len(document):
                    continue
                page = document[number - 1]
                found[number] = _read_page(page)
                page.close()
        finally:
            document.close()
    return found


def _column(caption: Box, lines: Iterable[Box], width: float) -> tuple[float, float]:
    """The left and right edges of the text column the caption is centred in: of the body text's rows across its
    middle (the whole page when none)."""
    middle = (caption[0] + caption[2]) / 2
    holding = [line for line in lines if line[0] <= middle <= line[2] and line[2] - line[0] >= 0.3 * width]
    if not holding:
        return 0.0, width
    return min(line[0] for line in holding), max(line[2] for line in holding)


def _inside_any(box: Box, outers: list[Box]) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(o[0] <= x <= o[2] and o[1] <= y <= o[3] for o in outers)


def _bounds(block: TextBlock, page: PageGraphics) -> list[Box]:
    """The lines of ``block`` that bound a figure's band: body text and captions, outside every drawing."""
    outside = [line for line in block.lines if not _inside_any(line, page.clusters)]
    if block.caption or block.kind in ("heading", "title"):
        return outside
    if block.kind == "code":  # a listing: what a figure may show beside its drawing
        return []
    wide = any(row[2] - row[0] >= BODY_WIDTH * page.width for row in _rows(outside))
    return outside if wide and block.words >= BODY_WORDS else []


def _rows(boxes: list[Box]) -> list[Box]:
    """Boxes on one baseline joined into rows (a line located word by word is one row)."""
    rows: list[Box] = []
    for box in sorted(boxes, key=lambda b: (b[1], b[0])):
        last = rows[-1] if rows else None
        if last and min(last[3], box[3]) - max(last[1], box[1]) > 0.5 * min(last[3] - last[1], box[3] - box[1]):
            rows[-1] = union([last, box])
        else:
            rows.append(box)
    return rows


def figure_box(caption: TextBlock, blocks: list[TextBlock], page: PageGraphics) -> Box | None:
    """The figure ``caption`` names (its own block is one of ``blocks``): the graphics and text of the band of its
    column above it, else below it; None when both bands are empty."""
    first = caption.lines[0]
    body = [row for b in blocks if not b.caption for row in _rows(_bounds(b, page))]
    left, right = _column(first, body, page.width)

    def in_column(box: Box) -> bool:
        return left - 2 <= (box[0] + box[2]) / 2 <= right + 2

    limits = [line for b in blocks if b is not caption for line in _bounds(b, page) if in_column(line)]
    top = max((line[3] for line in limits if line[3] <= first[1] + 1), default=0.0)
    last = caption.lines[-1]
    bottom = min((line[1] for line in limits if line[1] >= last[3] - 1), default=math.inf)
    text = [b for b in blocks if b is not caption and not _bounds(b, page)]
    above = _band(page, text, in_column, (top, first[1]), above=True)
    below = _band(page, text, in_column, (last[3], bottom), above=False)
    # Above first, as figures are captioned under them: a listing captioned under it, and a drawing whose caption
    # comes after it under the listing's caption, each go to their own caption (the gaps alone do not tell).
    for graphics, lines in (above, below):
        if graphics or lines:
            return rounded(union(graphics + lines))
    return None


def _band(
    page: PageGraphics,
    text: list[TextBlock],
    in_column: Callable[[Box], bool],
    band: tuple[float, float],
    *,
    above: bool,
) -> tuple[list[Box], list[Box]]:
    """The graphics and the text lines of a band: for a band above the caption, the text under the graphics' top
    (less LABEL_REACH) and the blocks reaching there; below it, the same upside down."""
    lo, hi = band[0] - 0.5, band[1] + 0.5
    graphics = [g.box for g in page.graphics if in_column(g.box) and lo <= g.box[1] and g.box[3] <= hi]
    held = [b for b in text if b.lines and in_column(union(b.lines))
            and all(lo <= line[1] and line[3] <= hi for line in b.lines)]  # fmt: skip
    if not graphics:
        return [], _adjoining(held, band[1] if above else band[0], above=above)
    drawn = union(graphics)
    reach = (drawn[1] - LABEL_REACH, hi) if above else (lo, drawn[3] + LABEL_REACH)
    lines = [line for b in held if any(reach[0] <= line[3] and line[1] <= reach[1] for line in b.lines)
             for line in b.lines]  # fmt: skip
    return graphics, lines


def _adjoining(held: list[TextBlock], edge: float, *, above: bool) -> list[Box]:
    """The lines of the blocks that follow one another from the caption's ``edge`` with gaps under TEXT_GAP: a
    listing captioned as a figure, not the running head far above it."""
    boxes = sorted((union(b.lines) for b in held), key=lambda box: -box[3] if above else box[1])
    out: list[Box] = []
    for box in boxes:
        gap = (edge - box[3]) if above else (box[1] - edge)
        if out and gap > TEXT_GAP:
            break
        out.append(box)
        edge = box[1] if above else box[3]
    return out


def uncaptioned(page: PageGraphics, blocks: list[TextBlock]) -> list[Box]:
    """The page's drawings that are figures without a caption, each with the labels beside it (ticks, axis titles):
    the text lines within LABEL_REACH of it that are no body text. A drawing holding body text (a warning's box,
    its sign drawn beside the words) is a frame around text, none."""
    if not page.drawn:
        return []
    body = [row for b in blocks for row in _rows(list(b.lines)) if _body(b, page)]
    # Not a heading either: one set just over a chart stays a heading, not a label the drawing's box takes in.
    labels = [line for b in blocks if not _body(b, page) and b.kind not in ("heading", "title") for line in b.lines]
    out = []
    for box in page.drawn:
        if any(_inside_any(row, [box]) for row in body):
            continue
        out.append(rounded(union([box, *(line for line in labels if _near(line, box, LABEL_REACH))])))
    return out


def _body(block: TextBlock, page: PageGraphics) -> bool:
    """A paragraph of BODY_WORDS words or more with a row BODY_WIDTH of the page wide, wherever it lies."""
    wide = any(row[2] - row[0] >= BODY_WIDTH * page.width for row in _rows(list(block.lines)))
    return block.kind not in ("code", "heading", "title") and not block.caption and wide and block.words >= BODY_WORDS
