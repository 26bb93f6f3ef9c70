"""A short mixed PDF for the page-window work: what a window boundary could break.

`mixed_report_pdf()` has nine pages: text with headings, a ruled and an unruled table, a scanned page and a
paragraph that runs from one page onto the next. Long reports come from bench/pdf_scale_docs.py.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from fpdf import FPDF

from .pdf_fixtures import REVENUE, STAFF, memo_pdf, scan_image, table_rows
from .pdf_scale_docs import FILLER


def _pdf() -> FPDF:
    pdf = FPDF(format="A4", unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # deterministic bytes
    pdf.set_font("helvetica", size=11)
    return pdf


def _prose(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choices(FILLER, k=sentences))


def _heading(pdf: FPDF, text: str) -> None:
    pdf.set_font("helvetica", "B", size=16)
    pdf.cell(0, 24, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)


def _text_page(pdf: FPDF, rng: random.Random, heading: str | None = None) -> None:
    pdf.add_page()
    if heading:
        _heading(pdf, heading)
    for _ in range(4):
        pdf.multi_cell(0, 15, _prose(rng, 3), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(6)


def _table(pdf: FPDF, rows: tuple[tuple[str, ...], ...], *, ruled: bool) -> None:
    pdf.add_page()
    _heading(pdf, "Ruled figures" if ruled else "Unruled directory")
    pdf.ln(6)
    table_rows(pdf, rows, ruled=ruled)


def mixed_report_pdf(seed: int = 0) -> bytes:
    """Nine pages: text, a ruled table, a scan (no text layer), an unruled table, a paragraph across a page
    break (pages 6-7), headings of two sizes."""
    rng = random.Random(seed)
    pdf = _pdf()
    _text_page(pdf, rng, "Section 1: harbour records")
    _text_page(pdf, rng)
    _table(pdf, REVENUE, ruled=True)
    pdf.add_page()
    pdf.image(scan_image(memo_pdf()), x=0, y=0, w=pdf.w, h=pdf.h)
    _table(pdf, STAFF, ruled=False)
    pdf.add_page()
    pdf.set_y(pdf.h - 90)
    pdf.multi_cell(0, 15, _prose(rng, 2)[:-1] + " and", new_x="LMARGIN", new_y="NEXT")  # no full stop: it goes on
    pdf.add_page()
    rest = _prose(rng, 2)
    pdf.multi_cell(0, 15, rest[0].lower() + rest[1:], new_x="LMARGIN", new_y="NEXT")
    _text_page(pdf, rng)
    _text_page(pdf, rng)
    return bytes(pdf.output())
