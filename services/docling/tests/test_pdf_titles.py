"""Headings and titles as the manual prints them (issue 51, points 2 and 4), on pages of R-intro.pdf (Texinfo, no
Title metadata; Debian's r-doc-pdf) cut out with pypdf, with the bookmarks the full manual has for them: the title
is the cover's largest text, not the first bookmark ("Preface"); a heading does not begin with the end of the table
above it; a chapter's label stays out of its heading; a hyphen the manual prints stays where a line breaks at it."""

from __future__ import annotations

import io

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

from scripts.system_files import R_INTRO_PDF, needs

R_INTRO = R_INTRO_PDF
PAGES = [1, 72, 98]  # the cover; "11.7.2 Maximum likelihood" under a table; "Appendix B Invoking R"
pytestmark = needs(R_INTRO)


def _outline(items: list, level: int) -> list:
    found = []
    for item in items:
        found += _outline(item, level + 1) if isinstance(item, list) else [(level, item)]
    return found


@pytest.fixture(scope="module")
def excerpt(converter: Converter) -> ConvertResponse:
    reader, writer = PdfReader(R_INTRO), PdfWriter()
    for number in PAGES:
        writer.add_page(reader.pages[number - 1])
    parents: dict[int, object] = {}
    for level, mark in _outline(reader.outline, 1):
        page = reader.get_destination_page_number(mark) + 1
        if page in PAGES[1:]:
            parents[level] = writer.add_outline_item(
                mark.title, PAGES.index(page), parent=parents.get(level - 1), fit=Fit.xyz(top=mark.top)
            )
    out = io.BytesIO()
    writer.write(out)
    return converter.convert(out.getvalue(), "R-intro-excerpt.pdf")


def _headings(result: ConvertResponse) -> list[str]:
    return [block.text for block in result.blocks if block.kind == "heading"]


def test_a_pdf_without_title_metadata_is_named_by_its_cover(excerpt: ConvertResponse) -> None:
    assert excerpt.title == "An Introduction to R"  # was its first bookmark's title


def test_a_heading_does_not_begin_with_the_table_above_it(excerpt: ConvertResponse) -> None:
    headings = _headings(excerpt)
    assert "11.7.2 Maximum likelihood" in headings, headings  # was "K 0.7651 11.7.2 Maximum likelihood"
    before = excerpt.markdown.split("11.7.2 Maximum likelihood")[0]
    assert "K 0.7651" in before.rstrip(" #\n")[-200:]  # the table keeps its last row


def test_a_chapter_label_is_kept_out_of_its_heading(excerpt: ConvertResponse) -> None:
    headings = _headings(excerpt)
    assert "B Invoking R" in headings and not [h for h in headings if h.startswith("Appendix")], headings


def test_a_hyphen_the_manual_prints_is_kept_at_a_line_break(excerpt: ConvertResponse) -> None:
    text = " ".join(excerpt.markdown.split())
    assert "but command-line use is also supported" in text  # "command-" ends a line; was "commandline"
