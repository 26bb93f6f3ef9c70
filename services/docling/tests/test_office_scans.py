"""Office-quality scans (0.4 degree skew, blur, JPEG quality 70) read by the real RapidOCR at >= 95% accuracy."""

from __future__ import annotations

import itertools
import time

import pytest
from docling_service.converter import Converter, ConverterOptions
from docling_service.ocr import OcrEngine, OcrOptions
from docling_service.pdf_lines import Line
from PIL import Image

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


class _Timed(OcrEngine):
    """The real engine, noting when each page's reading started and ended."""

    spans: list[tuple[int, float, float]]

    def page_lines(self, image: Image.Image, page: int, scale: float) -> list[Line]:
        started = time.monotonic()
        try:
            return super().page_lines(image, page, scale)
        finally:
            self.spans.append((page, started, time.monotonic()))


@pytest.mark.slow
def test_a_scanned_pdf_is_read_two_pages_side_by_side_and_progress_names_each_page() -> None:
    """The converter's page windows must not serialise OCR: with two page threads, pages overlap in time."""
    data, lines = office_report(4, 150, seed=SEED)
    converter = Converter(ConverterOptions(ocr=OcrOptions(page_threads=2), page_window=25))
    converter.start()
    timed = _Timed(converter.options.ocr)
    timed.spans = []
    converter._ocr = timed
    seen: list[int] = []
    result = converter.convert(data, "report.pdf", lambda done, total: seen.append(done))
    assert result.ocr_pages == [1, 2, 3, 4]
    assert char_accuracy("\n".join(lines), _text(result.markdown)) >= 0.95
    spans = sorted(timed.spans)
    assert [page for page, _, _ in spans] == [1, 2, 3, 4]
    overlapping = [(a, b) for (a, a0, a1), (b, b0, b1) in itertools.combinations(spans, 2) if a0 < b1 and b0 < a1]
    assert (1, 2) in overlapping and (3, 4) in overlapping, spans
    assert {1, 2, 3, 4} <= set(seen) and seen == sorted(seen)
