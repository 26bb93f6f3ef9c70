"""A PDF read without layout models: native text lines, OCR for pages without text, tables by rule."""

from __future__ import annotations

from docling_core.types.doc import DoclingDocument

from .markdown import Segment
from .ocr import OcrEngine
from .pdf_lines import merge_lines
from .pdf_tables import candidate_pages, ruled_tables, with_tables
from .scans import ocr_pdf_pages, scanned_pages
from .segments import document_lines


def native_segments(document: DoclingDocument, data: bytes, ocr: OcrEngine | None) -> tuple[list[Segment], list[int]]:
    """Segments of a natively parsed PDF and the pages read by OCR (none when ``ocr`` is None)."""
    lines = document_lines(document)
    scanned = scanned_pages(data) if ocr is not None else []
    if scanned and ocr is not None:
        skip = set(scanned)
        lines = [line for line in lines if line.page not in skip] + ocr_pdf_pages(data, scanned, ocr)
        lines.sort(key=lambda line: line.page)  # stable: keeps the reading order within each page
    ruled = ruled_tables(data, candidate_pages(lines) - set(scanned))
    return merge_lines(with_tables(lines, ruled)), scanned
