"""A page whose text docling-parse cannot decode is read from PDFium (text_layer.readable).

device-tree-compiler's dtc-paper.pdf (pdfTeX, 2005) sets its text in Type 3 bitmap fonts without a Unicode map.
docling-parse decoded them through a symbol encoding: the whole paper came out as "❚❤❡ ❢♦a114♠❛a116" and no
search found it. PDFium reads the same glyphs by their codes: "The format for the blob".
"""

from __future__ import annotations

import gzip

from docling_service.converter import Converter
from docling_service.pdf_lines import Line
from docling_service.text_layer import symbols_share, unreadable_pages

from scripts.system_files import DTC_PAPER, needs

DTC = DTC_PAPER


@needs(DTC)
def test_a_paper_set_in_type3_fonts_without_a_unicode_map_reads_as_words(converter: Converter) -> None:
    result = converter.convert(gzip.decompress(DTC.read_bytes()), "dtc-paper.pdf")
    text = " ".join(result.markdown.split())
    assert symbols_share([result.markdown])[0] < 0.01
    assert "The format for the blob we devised, was first de" in text
    assert "tree to refer to other nodes in the tree." in text
    # Where each line is printed is still known (docling-parse's boxes), for the page image's marks.
    assert result.regions and all(region.page >= 1 for region in result.regions)


def line(text: str, page: int, top: int) -> Line:
    return Line(text=text, page=page, left=0, top=top, right=9, bottom=top + 1)


def test_a_page_of_symbols_is_unreadable_and_a_page_with_a_few_is_not() -> None:
    garbled = [line("❚❤❡ ❢♦a114♠❛a116 ❢♦a114 a116❤❡ ❜❧♦❜ ✇❡ ❞❡✈✐a115❡❞", 1, top) for top in range(3)]
    bullets = [line("✓ Install the package and read its manual first", 2, top) for top in range(3)]
    assert unreadable_pages(garbled + bullets) == {1}
