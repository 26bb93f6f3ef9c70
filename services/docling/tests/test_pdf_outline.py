"""A real manual's own structure (issue 38): gnuplot.pdf (pdfTeX, Debian's gnuplot-doc), a few of its pages cut
out with pypdf, with and without the bookmarks the full manual carries for them."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

GNUPLOT = Path("/usr/share/doc/gnuplot/gnuplot.pdf")
PAGES = [1, 30, 62, 63]  # the title page (accented names), code examples, the start of "Plotting styles"
pytestmark = pytest.mark.skipif(not GNUPLOT.exists(), reason="needs Debian's gnuplot-doc (apt-get install gnuplot-doc)")


def _excerpt(*, bookmarks: bool) -> bytes:
    reader, writer = PdfReader(GNUPLOT), PdfWriter()
    for number in PAGES:
        writer.add_page(reader.pages[number - 1])
    if bookmarks:  # the manual's own bookmarks of pages 62-63 (a part, its sections and a subsection)
        parents: dict[int, object] = {}
        for level, mark in _outline(reader.outline, 1):
            page = reader.get_destination_page_number(mark) + 1
            if page in (62, 63):
                parents[level] = writer.add_outline_item(
                    mark.title, PAGES.index(page), parent=parents.get(level - 1), fit=Fit.xyz(top=mark.top)
                )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _outline(items: list, level: int) -> list:
    """(level, destination) of every bookmark, in order (pypdf nests a bookmark's children in a list after it)."""
    found = []
    for item in items:
        found += _outline(item, level + 1) if isinstance(item, list) else [(level, item)]
    return found


@pytest.fixture(scope="module")
def outlined(converter: Converter) -> ConvertResponse:
    return converter.convert(_excerpt(bookmarks=True), "gnuplot-excerpt.pdf")


@pytest.fixture(scope="module")
def plain(converter: Converter) -> ConvertResponse:
    return converter.convert(_excerpt(bookmarks=False), "gnuplot-excerpt.pdf")


def _headings(result: ConvertResponse) -> list[tuple[int | None, int | None, str]]:
    return [(b.page, b.level, b.text) for b in result.blocks if b.kind == "heading"]


def test_the_bookmarks_give_the_headings_their_levels_and_nothing_else_is_a_heading(outlined: ConvertResponse) -> None:
    assert _headings(outlined) == [
        (3, 1, "Part II Plotting styles"),  # pages 62 and 63 of the manual are the excerpt's 3 and 4
        (3, 2, "Arrows"),
        (3, 2, "Bee swarm plots"),
        (3, 2, "Boxerrorbars"),
        (4, 2, "Boxes"),
        (4, 3, "2D boxes"),
    ]
    assert outlined.levels_known


def test_without_bookmarks_levels_come_from_the_layout_not_one_level_for_all(plain: ConvertResponse) -> None:
    levels = {text: level for _, level, text in _headings(plain)}
    assert levels["Boxes"] < levels["2D boxes"] and levels["Plotting styles"] < levels["Boxes"]
    assert not plain.levels_known


def test_code_keeps_its_lines_and_a_comment_stays_code(outlined: ConvertResponse, plain: ConvertResponse) -> None:
    for result in (outlined, plain):
        assert "```\nset data linespoints\nplot 'file' thru f(x)\nplot 1 2 4" in result.markdown
        assert re.search(r"\nplot 1 2 4 +# horizontal line at y=1\nupdate\n```", result.markdown)
        assert not any("horizontal line" in text for _, _, text in _headings(result))
        assert "   (in script: print $0" in result.markdown  # an indented code line keeps its indentation


def test_accented_names_read_as_pdftotext_reads_them(outlined: ConvertResponse) -> None:
    assert "Hans-Bernhard Bröker, John Campbell" in outlined.markdown
    assert "Péter Juhász" in outlined.markdown and "Jérôme Lodewyck" in outlined.markdown
    assert not re.search("[\u00a8\u00b4\u02c6]", outlined.markdown)
