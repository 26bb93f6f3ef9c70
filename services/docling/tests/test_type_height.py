"""A line's type size is that of the words most of its letters are set in, not its box's height.

A footnote's marker, a superscript ("the 0 th bit", "2 n+1") or an inline formula's sub- and superscripts make a
printed line's box taller than its neighbours'. The line's height stood for its type size, so such a line was
taken for a larger font: cut out of its paragraph as a heading of its own (hash_usenix.pdf: "0 and 1, by
considering the 0 th bit (the lowest bit not", a level-1 heading; crc-doc.1.0.pdf: "(20) may be implemented using
formula (13) by setting v'0 =", with real numbered sections missed beside them).
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

from docling_service.converter import Converter
from docling_service.pdf_lines import Line, merge_lines
from pypdf import PdfReader, PdfWriter

from scripts.system_files import CRC_DOC, HASH_USENIX, needs

HASH, CRC = HASH_USENIX, CRC_DOC


def page_of(pdf: Path, number: int) -> bytes:
    reader, writer = PdfReader(io.BytesIO(gzip.decompress(pdf.read_bytes()))), PdfWriter()
    writer.add_page(reader.pages[number - 1])
    page = io.BytesIO()
    writer.write(page)
    return page.getvalue()


def headings(markdown: str) -> list[str]:
    return re.findall(r"^#+ (.*)", markdown, re.MULTILINE)


@needs(HASH)
def test_a_line_with_a_superscript_stays_in_its_paragraph(converter: Converter) -> None:
    result = converter.convert(page_of(HASH, 2), "hash_usenix_p2.pdf")
    assert not any("th bit" in heading for heading in headings(result.markdown))
    assert "buckets 0 and 1, by considering the 0 th bit (the lowest bit not" in " ".join(result.markdown.split())


@needs(CRC)
def test_a_sentence_with_an_inline_formula_is_no_heading_and_numbered_sections_are(converter: Converter) -> None:
    result = converter.convert(page_of(CRC, 19), "crc_p19.pdf")
    found = headings(result.markdown)
    assert not any("may be implemented" in heading for heading in found)
    assert "4.11.3 Efficient computation of individual CRCs" not in found  # set in the body's size
    body = " ".join(result.markdown.split())
    assert "(20) may be implemented using formula (13) by setting v\u20320 = 0, and then for n = 0, . . . , N" in body
    result = converter.convert(page_of(CRC, 4), "crc_p4.pdf")
    assert "3.2 Changing initial CRC value" in headings(result.markdown)


def test_a_line_without_words_known_keeps_its_height_as_its_size() -> None:
    body = [Line(text=f"body text line {i}", page=1, left=50, top=100 + 12 * i, right=500, bottom=110 + 12 * i)
            for i in range(6)]  # fmt: skip
    tall = Line(text="A Larger Title", page=1, left=50, top=60, right=300, bottom=74)
    raised = Line(text="with a raised note 1", page=1, left=50, top=172, right=500, bottom=186, size=10.0)
    segments = merge_lines([tall, *body, raised])
    assert [s.kind for s in segments] == ["heading", "paragraph"]
    assert segments[1].text.endswith("with a raised note 1")


@needs(CRC)
def test_a_displayed_formula_is_marked_word_by_word_and_prose_line_by_line(converter: Converter) -> None:
    """crc-doc page 6's derivation: its lines are taller than their type by the sums' brackets and the powers of x.
    One box a line marked the blank corners around them; such a line is now marked word by word."""
    result = converter.convert(page_of(CRC, 6), "crc_p6.pdf")
    marked = [(result.markdown[r.start : r.end], r.box) for r in result.regions]
    formula = [(text, box) for text, box in marked if box[1] >= 494 and box[3] <= 510]  # "= ((Q(x) - u(x)) · xW ..."
    assert len(formula) >= 15
    assert [text for text, _ in formula][:4] == ["=", "((Q(x)", "-", "u(x))"]
    assert all(box[2] - box[0] < 35 for _, box in formula)
    prose = next(box for text, box in marked if text.startswith("A more generic solution is to store"))
    assert prose[2] - prose[0] > 300  # one box for the printed line


@needs(CRC)
def test_a_formulas_fragments_are_no_headings(converter: Converter) -> None:
    """crc-doc page 8 sets a power's exponent ("nk2k") and page 19 a formula's line ("vK,n(x) · x-nW + xD") in
    type as large as a heading's; they were headings of their own."""
    assert not [h for h in headings(converter.convert(page_of(CRC, 8), "crc_p8.pdf").markdown) if "2k" in h]
    found = headings(converter.convert(page_of(CRC, 19), "crc_p19.pdf").markdown)
    assert not [h for h in found if "·" in h or h.endswith("=")]


def test_short_headings_without_a_word_of_three_letters_stay_headings() -> None:
    body = [Line(text=f"body text line {i}", page=1, left=50, top=100 + 12 * i, right=500, bottom=110 + 12 * i)
            for i in range(6)]  # fmt: skip
    titles = [Line(text=text, page=1, left=50, top=200 + 30 * i, right=150, bottom=214 + 30 * i)
              for i, text in enumerate(["UI", "A", "Qt5"])]  # fmt: skip
    found = [s.text for s in merge_lines([*body, *titles]) if s.kind == "heading"]
    assert found == ["UI", "A", "Qt5"]
