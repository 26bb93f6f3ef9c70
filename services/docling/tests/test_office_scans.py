"""Office-quality scans (0.4 degree skew, blur, JPEG quality 70) read by the real RapidOCR at >= 95% accuracy."""

from __future__ import annotations

import pytest
from docling_service.converter import Converter

from bench.office_scans import office_report, office_scan, report_pdf, report_text, scan_pdf
from bench.pdf_fidelity import _text, char_accuracy

# The page whose lines the direction classifier turned upside down ("Aco t e s r st t t e e tctwo").
SEED = 150


@pytest.mark.slow
def test_a_skewed_blurred_150_dpi_report_page_reads_at_95_percent(converter: Converter) -> None:
    data, lines = office_report(1, 150, seed=SEED)
    result = converter.convert(data, "report.pdf")
    assert result.ocr_pages == [1]
    assert char_accuracy("\n".join(lines), _text(result.markdown)) >= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("angle", [180, 270])
def test_a_page_scanned_upside_down_or_turned_clockwise_reads_in_order(converter: Converter, angle: int) -> None:
    text = report_text(1, seed=SEED)
    page = office_scan(report_pdf(text), dpi=150)[0].rotate(angle, expand=True, fillcolor=255)
    result = converter.convert(scan_pdf([page], 150), "turned.pdf")
    assert char_accuracy("\n".join(text[0]), _text(result.markdown)) >= 0.95
