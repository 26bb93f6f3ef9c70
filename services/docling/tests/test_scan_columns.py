"""A scanned two-column page is read column by column (reading_order.py); a one-column page keeps RapidOCR's order.

Real pages nobody here wrote, scanned here as bench.boxes does (200 dpi, blurred, JPEG 75, no text layer): page 3
of the Berkeley DB USENIX paper (two columns, Debian's db5.3-doc), a page of gnuplot's manual (one column).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from docling_service.converter import Converter
from docling_service.ocr import OcrEngine

from bench.boxes import scan_of
from scripts.system_files import BDB_USENIX, GNUPLOT, system_file

BDB = BDB_USENIX


@pytest.fixture(scope="module")
def bdb_scan(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    system_file(BDB)
    folder = tmp_path_factory.mktemp("bdb")
    paper = folder / "bdb_usenix.pdf"
    paper.write_bytes(gzip.decompress(BDB.read_bytes()))
    return scan_of(paper, 3, 3, folder / "scan.pdf").read_bytes()


@pytest.mark.slow
def test_a_scanned_two_column_page_reads_each_column_through(converter: Converter, bdb_scan: bytes) -> None:
    """RapidOCR sorts lines top to bottom across the page: "record inser-" (left column) was followed by "variants,
    generally" (right column), and the right column's "3.1." heading came before the left one's "2.3."."""
    result = converter.convert(bdb_scan, "bdb-scan.pdf")
    assert result.ocr_pages == [1]
    # Paragraph breaks and hyphens at line ends aside (OCR line heights vary with the ink: some lines start a
    # paragraph of their own, "inser-" is then not joined to "tion").
    text = " ".join(result.markdown.split()).replace("- ", "")
    assert "B+trees support record insertion, deletion, and iteration over all records in the tree." in text
    assert "its variants, generally do not require concurrent access or crash recovery." in text
    left, right = text.index("2.3. Recno"), text.index("3.1. Programmatic interfaces")
    assert left < text.index("be inserted between existing keys.") < text.index("3. Features") < right


@pytest.mark.slow
def test_a_scanned_one_column_page_keeps_the_order_it_was_read_in(tmp_path: Path) -> None:
    scan = pdfium.PdfDocument(scan_of(system_file(GNUPLOT), 62, 62, tmp_path / "scan.pdf"))
    image = scan[0].render(scale=200 / 72, grayscale=True).to_pil()
    engine = OcrEngine()
    read = engine._run(image)  # RapidOCR's own order, top to bottom
    assert len(read) > 20
    assert engine.read(image) == read
