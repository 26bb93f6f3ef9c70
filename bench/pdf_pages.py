"""Long generated PDFs for the page-window work: N born-digital pages, one known sentence on each.

`report_pdf(pages)` is a plain report (a heading every 10 pages, paragraphs); `mixed_report_pdf()` adds
what a window boundary could break: a ruled and an unruled table, a scanned page, a paragraph that runs
from one page onto the next. (bench/pdf_scale_docs.py, written beside this, may replace report_pdf.)
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from fpdf import FPDF

from .pdf_fixtures import REVENUE, STAFF, memo_pdf, scan_image, table_rows

WORDS = (
    "harbour", "ledger", "tide", "survey", "beacon", "pilot", "cargo", "quay", "ferry", "permit", "dredging",
    "buoy", "channel", "ballast", "mooring", "crane", "warehouse", "customs", "manifest", "berth",
    "lighthouse", "estuary", "salvage",
)  # fmt: skip


def _pdf() -> FPDF:
    pdf = FPDF(format="A4", unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # deterministic bytes
    pdf.set_font("helvetica", size=11)
    return pdf


def _sentence(rng: random.Random, page: int) -> str:
    return f"Page {page} records the {' '.join(rng.choices(WORDS, k=6))} of the {rng.choice(WORDS)} office."


def _page(pdf: FPDF, rng: random.Random, page: int) -> str:
    pdf.add_page()
    if page % 10 == 1:
        pdf.set_font("helvetica", "B", size=16)
        pdf.cell(0, 24, f"Section {page // 10 + 1}: harbour records", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=11)
    sentence = _sentence(rng, page)
    pdf.multi_cell(0, 15, sentence, new_x="LMARGIN", new_y="NEXT")
    for _ in range(4):
        pdf.ln(6)
        pdf.multi_cell(0, 15, " ".join(rng.choices(WORDS, k=40)).capitalize() + ".", new_x="LMARGIN", new_y="NEXT")
    return sentence


def report_pdf(pages: int, seed: int = 0) -> tuple[bytes, dict[int, str]]:
    """A ``pages``-page born-digital report and the sentence each page holds."""
    rng = random.Random(seed)
    pdf = _pdf()
    sentences = {page: _page(pdf, rng, page) for page in range(1, pages + 1)}
    return bytes(pdf.output()), sentences


def _table(pdf: FPDF, rows: tuple[tuple[str, ...], ...], *, ruled: bool) -> None:
    pdf.add_page()
    pdf.set_font("helvetica", "B", size=16)
    pdf.cell(0, 24, "Ruled figures" if ruled else "Unruled directory", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.ln(6)
    table_rows(pdf, rows, ruled=ruled)


def mixed_report_pdf(seed: int = 0) -> bytes:
    """Nine pages: text, a ruled table, a scan (no text layer), an unruled table, a paragraph across a page
    break (pages 6-7), headings of two sizes."""
    rng = random.Random(seed)
    pdf = _pdf()
    for page in (1, 2):
        _page(pdf, rng, page)
    _table(pdf, REVENUE, ruled=True)
    pdf.add_page()
    pdf.image(scan_image(memo_pdf()), x=0, y=0, w=pdf.w, h=pdf.h)
    _table(pdf, STAFF, ruled=False)
    pdf.add_page()
    pdf.set_y(pdf.h - 90)
    pdf.multi_cell(0, 15, " ".join(rng.choices(WORDS, k=30)), new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.multi_cell(0, 15, " ".join(rng.choices(WORDS, k=30)) + ".", new_x="LMARGIN", new_y="NEXT")
    for page in (8, 9):
        _page(pdf, rng, page)
    return bytes(pdf.output())
