"""A scan laid slightly askew is read straightened (deskew.py): one printed line per box on the page as shown.

Page 12 of Debian's installation guide (full-width prose lines: the longest slant), scanned as bench.scan_skew does.
"""

from __future__ import annotations

import statistics

import pytest
from docling_service.converter import Converter
from docling_service.deskew import skew_angle, straighten
from PIL import Image

from bench.pdf_fidelity import _text, char_accuracy
from bench.pdf_fixtures import image_pdf, scan_image
from bench.scan_skew import DPI, _boxes, _middles, lines_held

GUIDE = ("installation-guide-amd64", "installation-guide-amd64/en/install.en.pdf.gz", 12)


@pytest.fixture(scope="module")
def guide_page(debian_pdf) -> bytes:  # type: ignore[no-untyped-def]  # conftest's session fixture
    return debian_pdf(*GUIDE)


@pytest.mark.parametrize("angle", [0.5, -1.0, 3.0])
def test_the_skew_of_a_real_page_is_found_from_its_lines(guide_page: bytes, angle: float) -> None:
    assert skew_angle(scan_image(guide_page, dpi=DPI)) == 0.0
    found = skew_angle(scan_image(guide_page, dpi=DPI, angle=angle))
    assert found == pytest.approx(-angle, abs=0.1)


def test_a_box_of_the_straightened_page_lands_where_its_ink_was() -> None:
    page = Image.new("L", (800, 1000), 255)
    page.putpixel((600, 200), 0)
    straight, back = straighten(page, 3.0)
    dark = [(x, y) for y in range(straight.height) for x in range(straight.width) if straight.getpixel((x, y)) < 128]
    x, y = dark[0]
    left, top, right, bottom = back.to_page((x, y, x + 1, y + 1))
    assert left <= 600.5 <= right + 0.5 and top <= 200.5 <= bottom + 0.5
    assert right - left < 2 and bottom - top < 2


@pytest.mark.slow
def test_a_page_scanned_0_9_degrees_askew_has_one_printed_line_per_box(converter: Converter, guide_page: bytes) -> None:
    """Read as it lay, 44 of 60 line boxes took in two or three printed lines (median box 2.2x as tall as on the
    page scanned straight), and a highlight struck through the neighbouring lines."""
    straight = scan_image(guide_page, dpi=DPI)
    truth = converter.convert(image_pdf(straight), "straight.pdf")
    truth_boxes = _boxes(truth)
    turned = scan_image(guide_page, dpi=DPI, angle=0.9)
    result = converter.convert(image_pdf(turned), "turned.pdf")
    boxes = _boxes(result)
    middles = _middles(truth_boxes, straight.size, 0.9, turned.size)
    assert sum(lines_held(box, middles) > 1 for box in boxes) == 0
    height = statistics.median(b[3] - b[1] for b in boxes)
    assert height <= 1.2 * statistics.median(b[3] - b[1] for b in truth_boxes)
    assert char_accuracy(_text(truth.markdown), _text(result.markdown)) >= 0.98
