"""A real manual's own structure (issue 38): gnuplot.pdf (pdfTeX, Debian's gnuplot-doc), a few of its pages cut
out with pypdf, with and without the bookmarks the full manual carries for them."""

from __future__ import annotations

import io
import re

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

from scripts.system_files import GNUPLOT, PACKAGING_TUTORIAL, needs, system_file

PAGES = [1, 30, 62, 63]  # the title page (accented names), code examples, the start of "Plotting styles"
pytestmark = needs(GNUPLOT)


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


def test_a_bookmark_whose_title_its_page_does_not_print_is_still_a_section(converter: Converter) -> None:
    """A Beamer deck's subsection bookmark points at a slide titled otherwise (Debian's packaging-tutorial.fr.pdf:
    6 of 48 bookmarks, "Reconstruction de dash" among them, were missing from the outline): the document's own
    outline keeps it, as a heading of its level where it points, with no box (nothing prints it)."""
    reader, writer = PdfReader(GNUPLOT), PdfWriter()
    for number in (62, 63):
        writer.add_page(reader.pages[number - 1])
    part = writer.add_outline_item("Part II Plotting styles", 0, fit=Fit.xyz(top=700))
    writer.add_outline_item("Styles at a glance", 1, parent=part, fit=Fit.xyz(top=760))  # printed nowhere
    writer.add_outline_item("Boxes", 1, parent=part)
    out = io.BytesIO()
    writer.write(out)
    result = converter.convert(out.getvalue(), "unprinted.pdf")
    headings = _headings(result)
    assert headings[:3] == [(1, 1, "Part II Plotting styles"), (2, 2, "Styles at a glance"), (2, 2, "Boxes")]
    assert result.levels_known
    assert "## Styles at a glance\n" in result.markdown


def test_a_ruled_region_around_a_bookmarked_title_is_not_a_table(converter: Converter) -> None:
    """A slide whose diagram is drawn in ruled boxes around its title (packaging-tutorial.fr.pdf, Beamer, page 9
    "Processus général de la construction de paquets") was read as one table, and its bookmarked title went into
    the table's first cell: the section was missing from the outline."""
    tutorial = system_file(PACKAGING_TUTORIAL)
    reader, writer = PdfReader(tutorial), PdfWriter()
    for number in (8, 9, 10):
        writer.add_page(reader.pages[number - 1])
    writer.add_outline_item("Outils dont vous avez besoin", 0)
    writer.add_outline_item("Processus général de la construction de paquets", 1)
    writer.add_outline_item("Reconstruction de dash", 2)
    out = io.BytesIO()
    writer.write(out)
    headings = [text for _, _, text in _headings(converter.convert(out.getvalue(), "tutorial.pdf"))]
    assert headings == ["Outils dont vous avez besoin", "Processus général de la construction de paquets",
                        "Reconstruction de dash"]  # fmt: skip
