"""A PDF read without layout models: native text lines, OCR for pages without text, tables by rule."""

from __future__ import annotations

from docling_core.types.doc import DoclingDocument

from .markdown import Segment
from .ocr import OcrEngine
from .pdf_lines import merge_lines
from .pdf_tables import candidate_pages, ruled_tables, with_tables
from .scans import ocr_pdf_pages, scanned_pages
from .segments import document_lines


def native_segments(
    document: DoclingDocument, data: bytes, ocr: OcrEngine | None, *, tables: bool = True
) -> tuple[list[Segment], list[int]]:
    """Segments of a natively parsed PDF and the pages read by OCR (none when ``ocr`` is None)."""
    lines = document_lines(document)
    scanned = scanned_pages(data) if ocr is not None else []
    ocr_segments: list[Segment] = []
    if scanned and ocr is not None:
        skip = set(scanned)
        lines = [line for line in lines if line.page not in skip]
        # Merged on their own: OCR boxes are taller than printed lines, and would skew the heading sizes.
        ocr_segments = merge_lines(list(ocr_pdf_pages(data, scanned, ocr)))
    if tables:
        segments = merge_lines(with_tables(lines, ruled_tables(data, candidate_pages(lines))))
    else:  # the text-only reading, kept as the benchmark's baseline
        segments = merge_lines(list(lines))
    merged = sorted(segments + ocr_segments, key=lambda segment: segment.page or 0)  # stable within a page
    return merged, scanned
