"""PDFs as users have them, generated with their expected text (for the docling tests and bench.pdf_fidelity).

    python -m bench.pdf_fixtures OUT_DIR

Born-digital pages are drawn with fpdf2; a "scan" is a born-digital page rasterised by PDFium, noised a
little and wrapped back into a PDF as a single image (no text layer), so OCR has something real to read.
"""

from __future__ import annotations

import io
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pypdfium2 as pdfium
from fpdf import FPDF
from PIL import Image, ImageFilter

REVENUE = (
    ("Region", "Q1", "Q2", "Q3"),
    ("Europe", "120", "135", "142"),
    ("Asia", "310", "298", "356"),
    ("Antarctica", "5", "4", "3"),
)
STAFF = (
    ("Name", "Team", "Office", "Started"),
    ("Alma Reyes", "Billing", "Lisbon", "2019"),
    ("Bruno Tanaka", "Search", "Osaka", "2021"),
    ("Chidi Okafor", "Payments", "Lagos", "2017"),
    ("Dana Novak", "Support", "Prague", "2023"),
)
MEMO = (
    "MEMORANDUM",
    "To: All staff of the Harbour Office",
    "From: Facilities management",
    "The north parking lot closes on 14 March for resurfacing.",
    "Please use the south entrance and the visitor car park until 28 March.",
    "Questions go to the facilities desk, extension 4471.",
)
LEFT_COLUMN = (
    "Glaciers in the northern valley retreated forty metres last summer, the largest loss since records began.",
    "Survey teams measured the ice front every week from June to September.",
)
RIGHT_COLUMN = (
    "Reindeer herders report that calving grounds moved two kilometres uphill within a decade.",
    "The cooperative now shares grazing maps with the regional council each spring.",
)


@dataclass(frozen=True)
class Fixture:
    name: str
    data: bytes
    kind: str  # born-digital | scan
    pages: int
    lines: tuple[str, ...] = ()  # expected text, in reading order
    tables: tuple[tuple[tuple[str, ...], ...], ...] = field(default=())  # expected tables, header row first


def _pdf() -> FPDF:
    pdf = FPDF(format="A4", unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # deterministic bytes
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    return pdf


def _heading(pdf: FPDF, text: str) -> None:
    pdf.set_font("helvetica", "B", size=16)
    pdf.cell(0, 24, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.ln(6)


def table_rows(pdf: FPDF, rows: tuple[tuple[str, ...], ...], *, ruled: bool) -> None:
    """A table at the cursor, header row first: cell borders drawn (ruled) or none."""
    with pdf.table(
        borders_layout="ALL" if ruled else "NONE",
        first_row_as_headings=True,
        width=400,
        align="LEFT",
        line_height=18,
    ) as table:
        for row in rows:
            line = table.row()
            for cell in row:
                line.cell(cell)


def table_pdf(rows: tuple[tuple[str, ...], ...], title: str, *, ruled: bool) -> bytes:
    pdf = _pdf()
    _heading(pdf, title)
    pdf.multi_cell(0, 15, "The figures below are in thousands of euros, as reported by each regional office.")
    pdf.ln(10)
    table_rows(pdf, rows, ruled=ruled)
    pdf.ln(12)
    pdf.multi_cell(0, 15, "Figures for the fourth quarter follow in the annual report.")
    return bytes(pdf.output())


def two_column_pdf() -> bytes:
    pdf = _pdf()
    _heading(pdf, "Field Notes from the North")
    top = pdf.get_y()
    for x, paragraphs in ((pdf.l_margin, LEFT_COLUMN), (pdf.w / 2 + 10, RIGHT_COLUMN)):
        pdf.set_xy(x, top)
        for paragraph in paragraphs:
            pdf.set_x(x)
            pdf.multi_cell(pdf.w / 2 - pdf.l_margin - 10, 15, paragraph, new_x="LEFT", new_y="NEXT")
            pdf.ln(8)
    return bytes(pdf.output())


def memo_pdf() -> bytes:
    pdf = _pdf()
    pdf.set_font("helvetica", size=13)
    for line in MEMO:
        pdf.cell(0, 26, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def mixed_pdf(scan: Image.Image) -> bytes:
    """Three pages: text, a scanned page (an image only), text: OCR must keep the page numbers right."""
    pdf = _pdf()
    _heading(pdf, "Harbour Office Bulletin")
    pdf.multi_cell(0, 15, "Page one: the bulletin lists the changes to parking and access this spring.")
    pdf.add_page()
    pdf.image(scan, x=0, y=0, w=pdf.w, h=pdf.h)
    pdf.add_page()
    pdf.multi_cell(0, 15, "Page three: the visitor car park reopens on 29 March with new barriers.")
    return bytes(pdf.output())


def scan_image(pdf_bytes: bytes, *, dpi: int = 150, angle: float = 0, seed: int = 7, page: int = 1) -> Image.Image:
    """A page (1-based) as a scanner sees it: grey, slightly blurred, speckled, optionally turned by ``angle``
    degrees counter-clockwise (a fraction of a degree too: a page laid slightly askew; resampled smoothly)."""
    document = pdfium.PdfDocument(pdf_bytes)
    try:
        image = document[page - 1].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    image = image.filter(ImageFilter.GaussianBlur(0.6))
    rng = random.Random(seed)
    pixels = image.load()
    for _ in range(image.width * image.height // 400):
        pixels[rng.randrange(image.width), rng.randrange(image.height)] = rng.choice((40, 200))
    if not angle:
        return image
    smooth = Image.Resampling.NEAREST if angle % 90 == 0 else Image.Resampling.BICUBIC
    return image.rotate(angle, resample=smooth, expand=True, fillcolor=255)


def image_pdf(image: Image.Image) -> bytes:
    """A PDF whose only page is the image (what a scanner writes): no text layer."""
    buffer = io.BytesIO()
    image.save(buffer, format="PDF", resolution=150)
    return buffer.getvalue()


def image_bytes(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def fixtures() -> list[Fixture]:
    memo = memo_pdf()
    ruled = table_pdf(REVENUE, "Quarterly Revenue", ruled=True)
    unruled = table_pdf(STAFF, "Team Directory", ruled=False)
    return [
        Fixture("ruled_table.pdf", ruled, "born-digital", 1, (), (REVENUE,)),
        Fixture("unruled_table.pdf", unruled, "born-digital", 1, (), (STAFF,)),
        Fixture("two_column.pdf", two_column_pdf(), "born-digital", 1, LEFT_COLUMN + RIGHT_COLUMN),
        Fixture("scanned_memo.pdf", image_pdf(scan_image(memo)), "scan", 1, MEMO),
        Fixture("rotated_scan.pdf", image_pdf(scan_image(memo, angle=90)), "scan", 1, MEMO),
        Fixture("memo.png", image_bytes(scan_image(memo), "PNG"), "scan", 1, MEMO),
    ]


def mixed() -> bytes:
    return mixed_pdf(scan_image(memo_pdf()))


def write(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fixture in fixtures():
        path = out / fixture.name
        path.write_bytes(fixture.data)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write(Path(sys.argv[1] if len(sys.argv) > 1 else "pdf_fixtures")):
        print(written)
