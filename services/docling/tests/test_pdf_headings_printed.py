"""Headings where the page prints them (issue 51, point 2).

A run-in heading starts where it is printed: biblatex's German manual (Debian's texlive-lang-german) prints its
fourth-level sections as a paragraph's first words, with their number ("2.4.1.1 Das xref-Feld Zusätzlich zum
crossref-Feld ..."), and bookmarks them without it ("Das xref-Feld"). The bookmark's title was found on no line, so
it was a heading at its page's top: the section began mid-sentence of the paragraph before and took in its
parent's example. And a bookmarked title stays a heading above a figure (why3's manual). Pages cut out with pypdf,
with the manual's bookmarks for them.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

from scripts.system_files import BIBLATEX_DE, WHY3_MANUAL, needs

PAGES = [42, 43, 44, 146]


def _outline(items: list, level: int) -> list:
    found = []
    for item in items:
        found += _outline(item, level + 1) if isinstance(item, list) else [(level, item)]
    return found


def _excerpt(pdf: Path, pages: list[int]) -> bytes:
    """Those pages of the PDF, with the manual's bookmarks that point at them."""
    reader, writer = PdfReader(pdf), PdfWriter()
    for number in pages:
        writer.add_page(reader.pages[number - 1])
    parents: dict[int, object] = {}
    for level, mark in _outline(reader.outline, 1):
        page = reader.get_destination_page_number(mark) + 1
        if page in pages:
            parents[level] = writer.add_outline_item(
                mark.title, pages.index(page), parent=parents.get(level - 1), fit=Fit.xyz(top=mark.top)
            )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def excerpt(converter: Converter) -> ConvertResponse:
    return converter.convert(_excerpt(BIBLATEX_DE, PAGES), "biblatex-de-excerpt.pdf")


def _after(result: ConvertResponse, heading: str) -> tuple[str, str]:
    """The Markdown before the heading's line and the text of its section (to the next heading line)."""
    before, _, rest = result.markdown.partition(f" {heading}\n")
    return before, rest.split("\n#", 1)[0]


@needs(BIBLATEX_DE)
def test_a_numbered_run_in_heading_starts_where_it_is_printed(excerpt: ConvertResponse) -> None:
    headings = [(b.page, b.level, b.text) for b in excerpt.blocks if b.kind == "heading"]
    # Page 43 of the manual, as printed, under "2.4.1 Querverweise" (the excerpt's levels start at its first bookmark).
    assert (2, 3, "2.4.1.1 Das xref-Feld") in headings and (1, 2, "2.4.1 Querverweise") in headings
    before, section = _after(excerpt, "2.4.1.1 Das xref-Feld")
    assert section.strip().startswith("Zusätzlich zum")
    assert "@InBook{inbook," not in section and "@InBook{inbook," in before  # its parent's example stays there
    assert "Sehen Sie auch § 2.2.3." in before  # and the paragraph before it is whole
    assert (3, 3, "2.4.2.1 Besondere Kodierungen") in headings


@needs(BIBLATEX_DE)
def test_the_title_words_opening_a_later_paragraph_are_no_heading(excerpt: ConvertResponse) -> None:
    """Page 146 prints "3.12.5.2 Dynamische Eintragssätze Dynamische Eintragssätze werden ähn-" and, lower,
    a paragraph opening with the same two words: the numbered line is the heading."""
    _, section = _after(excerpt, "3.12.5.2 Dynamische Eintragssätze")
    assert section.strip().startswith("Dynamische Eintragssätze werden ähnlich gebildet")


@needs(WHY3_MANUAL)
def test_a_bookmarked_title_above_a_figure_stays_a_heading(converter: Converter) -> None:
    """why3's manual (Debian's why3-doc-pdf) prints "2.2 Getting Started with the GUI" at the top of page 12, under
    the running head and above a screenshot whose figure box reached up to the running head: the title became a
    paragraph of the figure, not in the outline, and 2.2.1-2.2.5 nested under 2.1. Pages 11-13 with their bookmarks."""
    result = converter.convert(_excerpt(WHY3_MANUAL, [11, 12, 13]), "why3-excerpt.pdf")
    headings = [(b.page, b.level, b.text) for b in result.blocks if b.kind == "heading"]
    assert headings[:4] == [
        (1, 1, "GETTING STARTED"),
        (1, 2, "2.1 Hello Proofs"),
        (2, 2, "2.2 Getting Started with the GUI"),
        (3, 3, "2.2.1 Calling provers on goals"),
    ]
    assert any(unit.kind == "figure" and unit.page == 2 for unit in result.units)  # the screenshot is still a figure
