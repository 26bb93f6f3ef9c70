"""A DoclingDocument read as a list of Markdown segments (or, for the native PDF pipeline, of lines)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
from docling_core.types.doc import (
    BoundingBox,
    CodeItem,
    DocItem,
    DoclingDocument,
    FormulaItem,
    ListItem,
    PictureItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)
from docling_core.types.doc.labels import DocItemLabel, GroupLabel
from docling_core.types.doc.page import SegmentedPdfPage
from ingestion_contracts.docling import BlockKind

from .markdown import Segment
from .pdf_lines import Line, is_mono_font
from .pdf_text import clean_text
from .regions import Box, Located, UnitDraft, rounded, union

# A line taller than this many times its type size is marked word by word (_line_fonts).
WORDS_MARKED_FROM = 1.2
# A gap between two words of a line wider than this many times its type size is a column gap (a table's cells the
# parser joined into one line): TeX's widest justified word gaps stay near one size (measured on R's manuals: 1.03).
COLUMN_GAP = 1.4
Words = tuple[tuple[str, Box], ...]
LineFont = tuple[str, bool, float, Words, Words]  # font, monospaced, size, words, pieces

# Furniture that would repeat on every page and split paragraphs across page breaks.
_SKIPPED_LABELS = {DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER}
_TEXT_KINDS: dict[DocItemLabel, BlockKind] = {
    DocItemLabel.CAPTION: "caption",
    DocItemLabel.CODE: "code",
    DocItemLabel.FORMULA: "other",
}


def _page(item: DocItem, paged: bool) -> int | None:
    if not paged or not item.prov:
        return None
    return item.prov[0].page_no if item.prov[0].page_no >= 1 else None


def _table_rows(item: TableItem) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(cell.text for cell in row) for row in item.data.grid)


def _segment(item: DocItem, paged: bool, heading_shift: int) -> Segment | None:
    page = _page(item, paged)
    if isinstance(item, TableItem):
        return Segment(kind="table", text="", page=page, rows=_table_rows(item))
    if not isinstance(item, TextItem) or item.label in _SKIPPED_LABELS:
        return None  # pictures, forms, key-value regions: no text of their own
    if isinstance(item, TitleItem):
        return Segment(kind="title", text=item.text, page=page, level=1)
    if isinstance(item, SectionHeaderItem):
        return Segment(kind="heading", text=item.text, page=page, level=min(6, item.level + heading_shift))
    if isinstance(item, ListItem):
        return Segment(kind="list_item", text=item.text, page=page)
    if isinstance(item, CodeItem):
        return Segment(kind="code", text=item.text, page=page)
    if isinstance(item, FormulaItem):
        return Segment(kind="other", text=item.text, page=page)
    return Segment(kind=_TEXT_KINDS.get(item.label, "paragraph"), text=item.text, page=page)


def _top_left(document: DoclingDocument, page: int, bbox: BoundingBox) -> tuple[float, float, float, float]:
    size = document.pages.get(page)
    box = bbox.to_top_left_origin(size.size.height) if size is not None else bbox
    return rounded((box.l, box.t, box.r, box.b))


def _located(document: DoclingDocument, item: DocItem) -> tuple[Located, ...]:
    """Where a text item lies, one entry per page it spans (the layout model gives its box, not its lines)."""
    text = getattr(item, "text", "")
    found = []
    for prov in item.prov:
        if prov.page_no < 1:
            continue
        first, last = prov.charspan
        part = text[first:last] if 0 <= first < last <= len(text) and len(item.prov) > 1 else text
        found.append(Located(part, prov.page_no, _top_left(document, prov.page_no, prov.bbox)))
    return tuple(found)


def _row_places(document: DoclingDocument, item: TableItem, page: int) -> tuple[Located, ...]:
    """A table's rows where the table model gave each cell its box (else none: the table's own box stands)."""
    boxes: dict[int, list[tuple[float, float, float, float]]] = {}
    for cell in item.data.table_cells:
        if cell.bbox is not None:
            boxes.setdefault(cell.start_row_offset_idx, []).append(_top_left(document, page, cell.bbox))
    if len(boxes) != len(item.data.grid):
        return ()
    return tuple(Located(" ".join(cell.text for cell in row), page, union(boxes[i]))
                 for i, row in enumerate(item.data.grid))  # fmt: skip


def _with_places(document: DoclingDocument, item: DocItem, segment: Segment) -> Segment:
    """The segment with where its text lies, and the table it is (with its caption)."""
    if isinstance(item, TableItem):
        page = item.prov[0].page_no
        draft = UnitDraft("table", page, _top_left(document, page, item.prov[0].bbox), item.caption_text(document))
        return replace(segment, located=_row_places(document, item, page), units=(draft,))
    return replace(segment, located=_located(document, item))


def _figure(document: DoclingDocument, item: PictureItem) -> UnitDraft | None:
    if not item.prov or item.prov[0].page_no < 1:
        return None
    page = item.prov[0].page_no
    return UnitDraft("figure", page, _top_left(document, page, item.prov[0].bbox), item.caption_text(document))


def _inline_parent(document: DoclingDocument, item: DocItem) -> str | None:
    """The inline group a text item is part of (a sentence docling split at its link or code), else None."""
    if item.parent is None or not isinstance(item, TextItem) or type(item) is not TextItem:
        return None
    parent = item.parent.resolve(document)
    return item.parent.cref if getattr(parent, "label", None) == GroupLabel.INLINE else None


def _joined_inline(document: DoclingDocument, items: list[DocItem]) -> list[DocItem]:
    """The items with each inline group's texts as one text item: a paragraph with a link or inline code in it is
    one paragraph ("There is a `read_epub()` function"), as docling's own Markdown writes it."""
    out: list[DocItem] = []
    group: str | None = None
    for item in items:
        parent = _inline_parent(document, item)
        previous = out[-1] if out else None
        if parent is not None and parent == group and isinstance(previous, TextItem) and isinstance(item, TextItem):
            joined = f"{previous.text} {item.text}" if previous.text and item.text else previous.text + item.text
            out[-1] = previous.model_copy(update={"text": joined, "orig": joined})
            continue
        group = parent
        out.append(item)
    return out


def document_segments(document: DoclingDocument, *, paged: bool, located: bool = False) -> list[Segment]:
    """Segments in reading order. Headings sit one level below the title when the document has one.

    With ``located`` (a PDF: its boxes are in points) each segment also says where it lies (its provenance box on
    its page), and tables and figures come as units: a figure goes with the segment after it (its caption, in
    docling's order). Slides' boxes are in their own units, which no page image is drawn in: left out."""
    items = _joined_inline(document, [item for item, _ in document.iterate_items() if isinstance(item, DocItem)])
    heading_shift = 1 if any(isinstance(item, TitleItem) for item in items) else 0
    segments: list[Segment] = []
    figures: list[UnitDraft] = []
    for item in items:
        if located and isinstance(item, PictureItem) and (figure := _figure(document, item)) is not None:
            figures.append(figure)
        segment = _segment(item, paged, heading_shift)
        if segment is None:
            continue
        if located and item.prov:
            segment = _with_places(document, item, segment)
        if figures:
            segment, figures = replace(segment, units=(*segment.units, *figures)), []
        segments.append(segment)
    if figures and segments:
        segments[-1] = replace(segments[-1], units=(*segments[-1].units, *figures))
    return segments


def document_lines(document: DoclingDocument, parsed: Mapping[int, SegmentedPdfPage] | None = None) -> list[Line]:
    """The printed lines of a natively parsed PDF, in top-left coordinates, their text cleaned (pdf_text.py).

    ``parsed``: docling-parse's pages by number (the conversion's ``pages[i].parsed_page``), which name each
    line's font: the native pipeline adds one text item per text line cell of a page, in the same order."""
    fonts = {number: _line_fonts(page, document.pages[number].size.height if number in document.pages else None)
             for number, page in (parsed or {}).items()}  # fmt: skip
    seen: dict[int, int] = {}
    lines = []
    for item, _ in document.iterate_items():
        if not isinstance(item, TextItem) or not item.prov or item.label in _SKIPPED_LABELS:
            continue
        prov = item.prov[0]
        page = document.pages.get(prov.page_no)
        box = prov.bbox.to_top_left_origin(page.size.height) if page is not None else prov.bbox
        top, bottom = sorted((box.t, box.b))
        position = seen[prov.page_no] = seen.get(prov.page_no, -1) + 1
        page_fonts = fonts.get(prov.page_no, [])
        font, mono, size, words, pieces = page_fonts[position] if position < len(page_fonts) else ("", 0, 0.0, (), ())
        text = clean_text(item.text, code=bool(mono))
        pieces = tuple((clean_text(piece, code=bool(mono)), place) for piece, place in pieces)
        lines.append(Line(text=text, page=prov.page_no, left=box.l, top=top, right=box.r, bottom=bottom,
                          font=font, mono=bool(mono), size=size, words=_same_letters(text, words),
                          pieces=_same_letters(text, pieces)))  # fmt: skip
    return lines


def _line_fonts(page: SegmentedPdfPage, height: float | None) -> list[LineFont]:
    """(font, monospaced, size, words) of each text line cell with text, in the order the native pipeline adds
    them. A line is monospaced when its first font is and most of its words are (a sentence may start with a
    command). Its size is the height of the words most of its letters and digits are set in: a sub- or
    superscript, a tall sum or bracket make the line's box taller, not its type larger (Line.type_height); 0
    where it has none. A line that much taller than its size (a displayed formula) also gives its words where they
    are printed (top-left origin, with the page's ``height``), so that it is marked word by word, not as one box
    whose corners are blank."""
    lines = [cell for cell in page.textline_cells if cell.text]
    words = [word for word in page.word_cells if word.text]
    boxes = np.array([_lrtb(word.rect.to_bounding_box()) for word in words], dtype=float).reshape(-1, 4)
    monos = np.array([is_mono_font(getattr(word, "font_name", "")) for word in words], dtype=bool)
    letters = np.array([sum(char.isalnum() for char in word.text) for word in words], dtype=int)
    plain = letters > 0
    heights = np.abs(boxes[:, 3] - boxes[:, 1])
    middles = (boxes[:, 1] + boxes[:, 3]) / 2
    out: list[LineFont] = []
    for cell in lines:
        font = getattr(cell, "font_name", "") or ""  # PdfTextCell names its font; a plain TextCell does not
        left, top, right, bottom = _lrtb(cell.rect.to_bounding_box())
        inside = ((boxes[:, 0] >= left - 1) & (boxes[:, 2] <= right + 1)
                  & (np.abs(middles - (top + bottom) / 2) < abs(bottom - top) / 2))  # fmt: skip
        mono = is_mono_font(font)
        if mono:
            mono = not inside.any() or int(monos[inside].sum()) * 2 > int(inside.sum())
        size = _most_set(heights[inside & plain], letters[inside & plain])
        parts: Words = ()
        if size > 0 and height is not None and abs(bottom - top) > WORDS_MARKED_FROM * size:
            parts = tuple((words[index].text, _word_box(words[index].rect.to_bounding_box(), height))
                          for index in np.flatnonzero(inside))  # fmt: skip
        pieces = _pieces(words, boxes, np.flatnonzero(inside), size, height) if height is not None else ()
        out.append((font, mono, size, parts, pieces))
    return out


def _pieces(words: list, boxes: np.ndarray, held: np.ndarray, size: float, height: float) -> Words:
    """A line's runs of words between column gaps (``COLUMN_GAP``), where it has one: each run's text and box."""
    if len(held) < 2 or size <= 0:
        return ()
    order = held[np.argsort(boxes[held, 0])]
    gaps = boxes[order[1:], 0] - boxes[order[:-1], 2]
    if not (gaps > COLUMN_GAP * size).any():
        return ()
    runs: list[list[int]] = [[int(order[0])]]
    for index, gap in zip(order[1:], gaps, strict=True):
        if gap > COLUMN_GAP * size:
            runs.append([])
        runs[-1].append(int(index))
    out = []
    for run in runs:
        box = union(_word_box(words[i].rect.to_bounding_box(), height) for i in run)
        out.append((" ".join(words[i].text for i in run), box))
    return tuple(out)


def _word_box(box: BoundingBox, height: float) -> Box:
    turned = box.to_top_left_origin(height)
    return rounded((turned.l, turned.t, turned.r, turned.b))


def _same_letters(text: str, words: tuple[tuple[str, Box], ...]) -> tuple[tuple[str, Box], ...]:
    """``words`` where they hold the line's letters and digits, in its order (regions places them by count) and
    each is drawn somewhere (a pattern font's glyphs can be boxes without width), else none: the line is marked as
    one box."""
    if not words or any(box[2] <= box[0] or box[3] <= box[1] for _, box in words):
        return ()
    letters = "".join(char for char in unicodedata.normalize("NFKC", text) if char.isalnum())
    held = "".join(char for word, _ in words for char in unicodedata.normalize("NFKC", word) if char.isalnum())
    return words if held == letters else ()


def _most_set(heights: np.ndarray, letters: np.ndarray) -> float:
    """The word height most of a line's letters and digits are set in (to a tenth of a point; the smaller of
    equals), 0 for none: a footnote's marker on a heading ("2.1. Software Conflict Resolution 4") is not its size."""
    if not len(heights):
        return 0.0
    counts: dict[float, int] = {}
    for height, count in zip(np.round(heights, 1).tolist(), letters.tolist(), strict=True):
        counts[height] = counts.get(height, 0) + count
    return max(sorted(counts), key=lambda height: counts[height])


def _lrtb(box: BoundingBox) -> tuple[float, float, float, float]:
    return (box.l, box.t, box.r, box.b)
