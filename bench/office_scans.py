"""Office-quality scans of a known multi-page report (for bench.pdf_fidelity, bench.ocr_levers and the tests).

A report is typeset with fpdf2 (11 pt body, 15 pt section headings), each page rendered by PDFium at the
scanner's dpi, then degraded as an office scanner does: a slight skew (0.4 degree), a Gaussian blur and
JPEG compression at quality 70. The pages go back into a PDF as images only (no text layer).
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from datetime import UTC, datetime

import pypdfium2 as pdfium
from fpdf import FPDF
from PIL import Image, ImageFilter

from .pdf_fixtures import Fixture

TOPICS = ("Orchard", "Harbour", "Library", "Transport", "Water", "Energy", "Housing", "Schools", "Parks", "Budget")
_OPENINGS = (
    "The committee reviewed the {topic} figures for the year and found",
    "Staff from the {topic} office visited eleven sites in March and reported",
    "According to the survey returned by 248 residents, the {topic} service showed",
    "Compared with 2024, spending on the {topic} programme rose by 7.5 percent, with",
)
_MIDDLES = (
    "a steady increase in demand during the spring months",
    "that maintenance costs were lower than the budget of 42,000 euros",
    "longer waiting times on weekday mornings between 8 and 10 o'clock",
    "that two contractors finished their work ahead of the agreed schedule",
)
_CLOSINGS = (
    "The board will discuss the next steps at its meeting on 12 June.",
    "A full breakdown by district is attached to the minutes of the session.",
    "Questions about these results can be sent to the planning desk.",
    "The figures will be checked again by the auditors in the autumn.",
)


def report_text(pages: int, seed: int = 21) -> list[list[str]]:
    """Per page: a section heading then four paragraphs (each an expected line of text)."""
    rng = random.Random(seed)
    text = []
    for page in range(pages):
        topic = TOPICS[page % len(TOPICS)]
        paragraphs = [f"Section {page + 1}: {topic} report"]
        for _ in range(4):
            sentences = [f"{rng.choice(_OPENINGS).format(topic=topic.lower())} {rng.choice(_MIDDLES)}."]
            sentences += rng.sample(_CLOSINGS, 2)
            paragraphs.append(" ".join(sentences))
        text.append(paragraphs)
    return text


@dataclass(frozen=True)
class Typography:
    """How a report is set: the office report's Helvetica 11 pt by default (points throughout)."""

    font: str = "helvetica"
    size: float = 11
    heading_size: float = 15
    heading_line: float = 26
    heading_gap: float = 8
    line: float = 15
    gap: float = 10

    @classmethod
    def scaled(cls, font: str, size: float) -> Typography:
        """``font`` at ``size`` with spacing in proportion (bench/varied_scans.py)."""
        return cls(font, size, size + 3, (size + 3) * 1.5, size, size * 1.35, size)


def report_pdf(text: list[list[str]], typography: Typography = Typography()) -> bytes:
    """A born-digital A4 report, one page per entry of ``text`` (heading, then paragraphs); a heading too long
    for one line wraps."""
    pdf = FPDF(format="A4", unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))
    pdf.set_margins(60, 60)
    for heading, *paragraphs in text:
        pdf.add_page()
        pdf.set_font(typography.font, "B", size=typography.heading_size)
        pdf.multi_cell(0, typography.heading_line, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(typography.heading_gap)
        pdf.set_font(typography.font, size=typography.size)
        for paragraph in paragraphs:
            pdf.multi_cell(0, typography.line, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(typography.gap)
    return bytes(pdf.output())


def degrade(page: Image.Image, *, angle: float, blur: float, jpeg: int) -> Image.Image:
    """What an office scanner does to a page: skew, blur, JPEG artefacts."""
    page = page.rotate(angle, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
    page = page.filter(ImageFilter.GaussianBlur(blur))
    buffer = io.BytesIO()
    page.save(buffer, format="JPEG", quality=jpeg)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


def office_scan(
    pdf_bytes: bytes, *, dpi: int = 200, angle: float = 0.4, blur: float = 0.8, jpeg: int = 70
) -> list[Image.Image]:
    """Every page of a PDF as an office scanner returns it, in grey at ``dpi``."""
    document = pdfium.PdfDocument(pdf_bytes)
    try:
        pages = [document[i].render(scale=dpi / 72, grayscale=True).to_pil().convert("L") for i in range(len(document))]
    finally:
        document.close()
    return [degrade(page, angle=angle, blur=blur, jpeg=jpeg) for page in pages]


def scan_pdf(pages: list[Image.Image], dpi: int) -> bytes:
    """A scanner's PDF: one JPEG image per page at its resolution, no text layer."""
    buffer = io.BytesIO()
    pages[0].save(buffer, format="PDF", save_all=True, append_images=pages[1:], resolution=dpi, quality=95)
    return buffer.getvalue()


def office_report(pages: int, dpi: int, seed: int = 21) -> tuple[bytes, list[str]]:
    """A scanned report of ``pages`` pages at ``dpi`` and its expected text (headings and paragraphs)."""
    text = report_text(pages, seed)
    return scan_pdf(office_scan(report_pdf(text), dpi=dpi), dpi), [line for page in text for line in page]


def office_fixtures() -> list[Fixture]:
    """The office-quality scans of bench.pdf_fidelity: the user's 10-page 150 dpi report, and 200/300 dpi."""
    out = []
    for name, pages, dpi in (
        ("report_10p_150dpi.pdf", 10, 150),
        ("report_200dpi.pdf", 2, 200),
        ("report_300dpi.pdf", 2, 300),
    ):
        data, lines = office_report(pages, dpi, seed=dpi)
        out.append(Fixture(name, data, "office-scan", pages, tuple(lines)))
    return out
