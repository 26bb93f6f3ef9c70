"""A chart's interior is no section and its hatching is no text (units._figure_interiors).

Page 9 of Seltzer and Yigit's hash paper (Debian's db5.3-doc) holds two bar charts. Their bars are hatched with a
Type 3 pattern font that PDFium reads as "rurururu..." (poppler reads nothing there), taller than the body text: it
came out as two "## rururu..." sections; the vertical axis label "Seconds" came out as a level-1 heading
"s d n o c e S".
"""

from __future__ import annotations

import gzip
import io
import re

import pytest
from docling_service.converter import Converter
from pypdf import PdfReader, PdfWriter

from scripts.system_files import HASH_USENIX, needs

HASH = HASH_USENIX
pytestmark = needs(HASH)


@pytest.mark.slow
def test_a_charts_hatching_and_axis_label_make_no_sections(converter: Converter) -> None:
    reader, writer = PdfReader(io.BytesIO(gzip.decompress(HASH.read_bytes()))), PdfWriter()
    writer.add_page(reader.pages[8])
    page = io.BytesIO()
    writer.write(page)
    result = converter.convert(page.getvalue(), "hash_usenix_p9.pdf")
    assert "rururu" not in result.markdown
    assert re.findall(r"^#+ .*", result.markdown, re.MULTILINE) == []
    # The labels stay text (searchable), the figures stay units with their captions.
    assert "Fill Factor" in result.markdown and "s d n o c e S" in result.markdown
    captions = [unit.caption for unit in result.units if unit.kind == "figure"]
    assert [caption[:8] for caption in captions] == ["Figure 6", "Figure 7"]
