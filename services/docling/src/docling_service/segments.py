"""A DoclingDocument read as a list of Markdown segments (or, for the native PDF pipeline, of lines)."""

from __future__ import annotations

from collections.abc import Mapping

from docling_core.types.doc import (
    CodeItem,
    DocItem,
    DoclingDocument,
    FormulaItem,
    ListItem,
    SectionHeaderItem,
    TableItem,
    TextItem,
    TitleItem,
)
from docling_core.types.doc.labels import DocItemLabel
from docling_core.types.doc.page import SegmentedPdfPage
from ingestion_contracts.docling import BlockKind

from .markdown import Segment
from .pdf_lines import Line, is_mono_font
from .pdf_text import clean_text

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


def document_segments(document: DoclingDocument, *, paged: bool) -> list[Segment]:
    """Segments in reading order. Headings sit one level below the title when the document has one."""
    items = [item for item, _ in document.iterate_items() if isinstance(item, DocItem)]
    heading_shift = 1 if any(isinstance(item, TitleItem) for item in items) else 0
    segments = []
    for item in items:
        segment = _segment(item, paged, heading_shift)
        if segment is not None:
            segments.append(segment)
    return segments


def document_lines(document: DoclingDocument, parsed: Mapping[int, SegmentedPdfPage] | None = None) -> list[Line]:
    """The printed lines of a natively parsed PDF, in top-left coordinates, their text cleaned (pdf_text.py).

    ``parsed``: docling-parse's pages by number (the conversion's ``pages[i].parsed_page``), which name each
    line's font: the native pipeline adds one text item per text line cell of a page, in the same order."""
    fonts = {number: _line_fonts(page) for number, page in (parsed or {}).items()}
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
        font, mono = page_fonts[position] if position < len(page_fonts) else ("", False)
        text = clean_text(item.text, code=mono)
        lines.append(Line(text=text, page=prov.page_no, left=box.l, top=top, right=box.r, bottom=bottom,
                          font=font, mono=mono))  # fmt: skip
    return lines


def _line_fonts(page: SegmentedPdfPage) -> list[tuple[str, bool]]:
    """(font, monospaced) of each text line cell with text, in the order the native pipeline adds them. A line
    is monospaced when its first font is and most of its words are (a sentence may start with a command)."""
    lines = [cell for cell in page.textline_cells if cell.text]
    out: list[tuple[str, bool]] = []
    words = None
    for cell in lines:
        font = getattr(cell, "font_name", "") or ""  # PdfTextCell names its font; a plain TextCell does not
        mono = is_mono_font(font)
        if mono:
            if words is None:
                words = [(w.rect.to_bounding_box(), is_mono_font(getattr(w, "font_name", ""))) for w in page.word_cells]
            box = cell.rect.to_bounding_box()
            inside = [m for b, m in words if b.l >= box.l - 1 and b.r <= box.r + 1
                      and abs((b.t + b.b) / 2 - (box.t + box.b) / 2) < abs(box.b - box.t) / 2]  # fmt: skip
            mono = not inside or sum(inside) * 2 > len(inside)
        out.append((font, mono))
    return out
