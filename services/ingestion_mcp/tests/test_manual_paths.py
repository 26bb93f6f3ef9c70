"""Every section of a real manual is read by the heading path its outline gives (issue 51, point 2).

For every outline entry of the manuals here (the converter's Markdown, chunked by the chunker, mapped by the
gateway as get_document_outline lists it: bench/manual_outline.py), get_document_section(heading=path) reads that
entry, not an ambiguity error, and no two entries share a path. A CI-sized part of the bench's manual set
(python -m bench.manuals measures all of it, docs/pdf.md "Manuals"): the French installation guide's HTML
chapter 3 (DocBook; the bench reads chapters 1-6), EbookLib's Sphinx pages, the X Logical Font Description (Apache
FOP PDF, 97 bookmarks) and the Live Systems Manual's EPUB (SiSU), against its own table of contents.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from docling_service.converter import Converter, ConverterOptions
from ingestion_contracts.gateway import DocumentStructure, OutlineSection

from bench.manual_html import epub_reference
from bench.manual_outline import path_figures, read_by_path, structure
from scripts.system_files import LIVE_MANUAL_EPUB, needs

DOC = Path("/usr/share/doc")
FRENCH_GUIDE = DOC / "installation-guide-amd64/fr"
SPHINX = DOC / "python-ebooklib-doc/html"
SPHINX_INDEXES = ("genindex.html", "search.html")
XLFD = DOC / "xorg-docs/xlfd/xlfd.pdf.gz"
GERMAN_GUIDE = DOC / "installation-guide-amd64/de/install.de.pdf.gz"


@pytest.fixture(scope="module")
def converter() -> Converter:
    started = Converter(ConverterOptions())
    started.start()
    return started


def _pages(folder: Path, pattern: str, package: str) -> list[Path]:
    pages = sorted(folder.glob(pattern))
    if not pages:
        pytest.skip(f"needs Debian's {package} (apt-get install {package})")
    return pages


@pytest.fixture(scope="module")
def html_outlines(converter: Converter) -> dict[str, DocumentStructure]:
    """The outlines of the French guide's chapter 3 (DocBook; the page that opens with headings is its ch03s03) and
    of EbookLib's Sphinx pages, each page converted once for the tests below."""
    pages = _pages(FRENCH_GUIDE, "ch03*.html", "installation-guide-amd64")
    pages += [page for page in _pages(SPHINX, "*.html", "python-ebooklib-doc") if page.name not in SPHINX_INDEXES]
    return {page.name: structure(converter.convert(page.read_bytes(), page.name), page.name) for page in pages}


def _unreadable(name: str, doc: DocumentStructure) -> list[object]:
    figures = path_figures(doc, keep=100)
    wrong = figures.unreadable or figures.duplicate_paths
    return [(name, figures.duplicate_paths, figures.unreadable)] if wrong else []


def test_a_page_opening_with_headings_without_text_has_each_once(html_outlines: dict[str, DocumentStructure]) -> None:
    """ch03s03.html opens with "3.3", "3.3.1", "3.3.1.1" before any text: "3.3" was two entries (one empty)."""
    doc = html_outlines["ch03s03.html"]
    paths = [s.heading_path for s in doc.sections]
    assert paths[:2] == [["3.3. Informations utiles"], ["3.3. Informations utiles", "3.3.1. La documentation"]]
    assert not _unreadable("ch03s03.html", doc)


def test_every_outline_path_of_html_manuals_reads_its_section(html_outlines: dict[str, DocumentStructure]) -> None:
    assert len(html_outlines) >= 7
    assert not [problem for name, doc in html_outlines.items() for problem in _unreadable(name, doc)]


def test_every_outline_path_of_a_pdf_manual_reads_its_section(converter: Converter) -> None:
    if not XLFD.exists():
        pytest.skip("needs Debian's xorg-docs (apt-get install xorg-docs)")
    data = gzip.decompress(XLFD.read_bytes())
    figures = path_figures(structure(converter.convert(data, "xlfd.pdf"), "xlfd.pdf"), keep=100)
    assert figures.sections >= 97 and figures.duplicate_paths == 0 and not figures.unreadable, figures


def _pages_of(pdf: Path, first: int, last: int) -> bytes:
    """Pages first..last (1-based) of a PDF, as a PDF of their own."""
    whole, part = pdfium.PdfDocument(gzip.decompress(pdf.read_bytes())), pdfium.PdfDocument.new()
    try:
        part.import_pages(whole, list(range(first - 1, last)))
        out = io.BytesIO()
        part.save(out)
        return out.getvalue()
    finally:
        part.close()
        whole.close()


def test_a_comment_line_of_an_example_is_no_outline_entry(converter: Converter) -> None:
    """Pages 100-104 of the German guide print the preseed example, read as code: its "# debconf-get-selections
    >> file" comment was an outline entry when a section began inside that code block."""
    if not GERMAN_GUIDE.exists():
        pytest.skip("needs Debian's installation-guide-amd64 (apt-get install installation-guide-amd64)")
    converted = converter.convert(_pages_of(GERMAN_GUIDE, 100, 104), "install.de-B4.pdf")
    titles = [s.heading_path[-1] for s in structure(converted, "install.de-B4.pdf").sections if s.heading_path]
    assert "debconf-get-selections >> file" in converted.markdown  # the example's line, in its code block
    assert not [title for title in titles if "debconf" in title]
    assert [title.split()[0] for title in titles[1:]] == ["B.4.8", "B.4.9", "B.4.10", "B.4.11", "B.4.12", "B.4.13",
                                                           "B.5", "B.5.1", "B.5.2"]  # fmt: skip


@needs(LIVE_MANUAL_EPUB)
def test_an_epub_outline_is_its_table_of_contents(converter: Converter) -> None:
    """live-manual.en.epub (SiSU) prints its sections as bold paragraphs, each part and chapter page as an <h1>, and
    its table of contents as headings: its outline was 243 entries, 37 paths twice, the sections missing."""
    converted = converter.convert(LIVE_MANUAL_EPUB.read_bytes(), LIVE_MANUAL_EPUB.name)
    doc = structure(converted, LIVE_MANUAL_EPUB.name)
    paths = [s.heading_path for s in doc.sections if s.heading_path]
    assert ["Live Systems Manual", "Installation", "3. Installation", "3.1 Requirements"] in paths
    assert sum(path[-1] == "3. Installation" for path in paths) == 1  # no table of contents of headings
    section = read_by_path(doc, ["3. Installation", "3.1 Requirements"])
    assert isinstance(section, OutlineSection)
    assert "very few system requirements" in doc.content[section.start : section.end]
    assert not re.search(r"^\d+$", doc.content, re.M)  # SiSU's paragraph numbers (a link to their own block) go
    # Every path reads its section but where the book's own table of contents names two parts alike.
    figures = path_figures(doc, keep=100)
    twice = [path for path, _ in figures.unreadable]
    assert figures.sections == len(paths) >= 180 and figures.duplicate_paths <= 1, figures
    assert all(path == ["Live Systems Manual", "Customizing contents"] for path in twice), figures
    # Its titles are the table of contents', in its order (inline code in backticks: "The `lb config` command").
    assert [path[-1].replace("`", "") for path in paths] == [
        label for label, _ in epub_reference(LIVE_MANUAL_EPUB.read_bytes())
    ]
