"""A run-in heading starts where it is printed (issue 51, point 2): biblatex's German manual (Debian's
texlive-lang-german) prints its fourth-level sections as a paragraph's first words, with their number ("2.4.1.1 Das
xref-Feld Zusätzlich zum crossref-Feld ..."), and bookmarks them without it ("Das xref-Feld"). The bookmark's title
was found on no line, so it was a heading at its page's top: the section began mid-sentence of the paragraph before
and took in its parent's example. Pages 42-44 and 146 cut out with pypdf, with the manual's bookmarks for them."""

from __future__ import annotations

import io

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

from scripts.system_files import BIBLATEX_DE, needs

PAGES = [42, 43, 44, 146]
pytestmark = needs(BIBLATEX_DE)


def _outline(items: list, level: int) -> list:
    found = []
    for item in items:
        found += _outline(item, level + 1) if isinstance(item, list) else [(level, item)]
    return found


@pytest.fixture(scope="module")
def excerpt(converter: Converter) -> ConvertResponse:
    reader, writer = PdfReader(BIBLATEX_DE), PdfWriter()
    for number in PAGES:
        writer.add_page(reader.pages[number - 1])
    parents: dict[int, object] = {}
    for level, mark in _outline(reader.outline, 1):
        page = reader.get_destination_page_number(mark) + 1
        if page in PAGES:
            parents[level] = writer.add_outline_item(
                mark.title, PAGES.index(page), parent=parents.get(level - 1), fit=Fit.xyz(top=mark.top)
            )
    out = io.BytesIO()
    writer.write(out)
    return converter.convert(out.getvalue(), "biblatex-de-excerpt.pdf")


def _after(result: ConvertResponse, heading: str) -> tuple[str, str]:
    """The Markdown before the heading's line and the text of its section (to the next heading line)."""
    before, _, rest = result.markdown.partition(f" {heading}\n")
    return before, rest.split("\n#", 1)[0]


def test_a_numbered_run_in_heading_starts_where_it_is_printed(excerpt: ConvertResponse) -> None:
    headings = [(b.page, b.level, b.text) for b in excerpt.blocks if b.kind == "heading"]
    # Page 43 of the manual, as printed, under "2.4.1 Querverweise" (the excerpt's levels start at its first bookmark).
    assert (2, 3, "2.4.1.1 Das xref-Feld") in headings and (1, 2, "2.4.1 Querverweise") in headings
    before, section = _after(excerpt, "2.4.1.1 Das xref-Feld")
    assert section.strip().startswith("Zusätzlich zum")
    assert "@InBook{inbook," not in section and "@InBook{inbook," in before  # its parent's example stays there
    assert "Sehen Sie auch § 2.2.3." in before  # and the paragraph before it is whole
    assert (3, 3, "2.4.2.1 Besondere Kodierungen") in headings


def test_the_title_words_opening_a_later_paragraph_are_no_heading(excerpt: ConvertResponse) -> None:
    """Page 146 prints "3.12.5.2 Dynamische Eintragssätze Dynamische Eintragssätze werden ähn-" and, lower,
    a paragraph opening with the same two words: the numbered line is the heading."""
    _, section = _after(excerpt, "3.12.5.2 Dynamische Eintragssätze")
    assert section.strip().startswith("Dynamische Eintragssätze werden ähnlich gebildet")
