"""A PDF read without layout models: native text lines, OCR for pages without text, tables by rule.

The PDF is parsed in windows of pages (``page_window``): docling holds one window's parsed pages at a
time, and only the text lines found in it are kept, so a 500-page PDF does not hold 500 parsed pages
at once, and the caller hears after each window (and each OCR'd page) how far the work is. Headings,
paragraphs and tables are then built from all the lines together (a page's running head, foot and number
left out: furniture.py), as for a whole-document parse (heading sizes are compared across the whole
document); where the PDF has an outline (bookmarks), its titles are the headings, at their levels
(pdf_outline.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .furniture import FurnitureLine, page_furniture
from .markdown import Segment
from .ocr import OcrEngine
from .pdf_lines import Line, join_fragments, merge_lines
from .pdf_outline import mark_bookmarks, read_bookmarks
from .pdf_tables import drawn_tables, with_tables
from .pdf_title import page_title
from .scans import ocr_pdf_pages, pdf_page_sizes, scanned_pages
from .text_layer import readable
from .units import with_units
from .word_gaps import spaced

# (pages done, pages in all), called after each window and each page read by OCR.
PageProgress = Callable[[int, int], None]
# The printed lines of pages first..last (1-based, inclusive) of the PDF (segments.document_lines).
ReadPages = Callable[[int, int], list[Line]]


@dataclass(frozen=True)
class NativeText:
    segments: list[Segment]
    scanned: list[int]  # pages read by OCR
    bookmarks: int  # bookmarks of the PDF's outline
    bookmarks_found: int  # ... that became headings at their level (printed on their page, or where they point)
    furniture: list[FurnitureLine]  # running heads and feet, page numbers: kept out of the segments
    page_title: str | None = None  # the first page's largest text (pdf_title.py)


def _no_progress(_: int, __: int) -> None:
    return None


def windowed_native_segments(
    read_pages: ReadPages,
    data: bytes,
    page_count: int,
    ocr: OcrEngine | None,
    *,
    window: int,
    tables: bool = True,
    progress: PageProgress = _no_progress,
) -> NativeText:
    """Segments of a PDF parsed ``window`` pages at a time, and the pages read by OCR."""
    scanned = scanned_pages(data) if ocr is not None else []
    skip = set(scanned)
    lines: list[Line] = []
    ocr_lines: list[Line] = []
    progress(0, page_count)
    for first in range(1, page_count + 1, window):
        last = min(first + window - 1, page_count)
        lines.extend(line for line in read_pages(first, last) if line.page not in skip)
        if here := [page for page in scanned if first <= page <= last]:
            assert ocr is not None  # pages are scanned only with an OCR engine
            # All of the window's scanned pages at once, so that ``page_threads`` of them are read side by side;
            # an OCR'd page takes a second: progress is said page by page.
            ocr_lines.extend(ocr_pdf_pages(data, here, ocr, on_page=lambda number: progress(number, page_count)))
        progress(last, page_count)
    lines = readable(lines, data)  # a page docling-parse could not decode (a Type 3 font): PDFium's text
    lines = spaced(lines, data)  # word gaps docling-parse took for kerning (word_gaps.py)
    heights = {page: size[1] for page, size in pdf_page_sizes(data, {line.page for line in lines}).items()}
    lines, furniture = page_furniture(lines, heights)
    bookmarks = read_bookmarks(data)
    lines, found = mark_bookmarks(join_fragments(lines), bookmarks)
    return NativeText(_segments(lines, ocr_lines, data, tables=tables), scanned, len(bookmarks), found, furniture,
                      _first_page_title(lines, ocr_lines))  # fmt: skip


def _first_page_title(lines: list[Line], ocr_lines: list[Line]) -> str | None:
    """The first page's largest printed text (pdf_title.py); none when that page is a scan: OCR boxes are not type
    sizes (a memo's body lines came out taller than its heading and became its title)."""
    first_printed = min((line.page for line in lines if line.printed), default=None)
    first_scanned = min((line.page for line in ocr_lines), default=None)
    if first_printed is None or (first_scanned is not None and first_scanned < first_printed):
        return None
    return page_title(lines)


def _segments(lines: list[Line], ocr_lines: list[Line], data: bytes, *, tables: bool) -> list[Segment]:
    # OCR lines are merged on their own: their boxes are taller than printed lines, and would skew heading sizes.
    ocr_segments = merge_lines(list(ocr_lines)) if ocr_lines else []
    # Without tables: the text-only reading, kept as the benchmark's baseline.
    segments = merge_lines(with_tables(lines, drawn_tables(data, lines)) if tables else list(lines))
    ordered = sorted(segments + ocr_segments, key=lambda segment: segment.page or 0)  # stable within a page
    outlined = any(line.heading for line in lines)  # its headings are the bookmarks' titles
    return with_units(ordered, data, outlined=outlined) if tables else ordered
