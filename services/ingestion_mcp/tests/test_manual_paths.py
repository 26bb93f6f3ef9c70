"""Every section of a real manual is read by the heading path its outline gives (issue 51, point 2).

For every outline entry of the manuals here (the converter's Markdown, chunked by the chunker, mapped by the
gateway as get_document_outline lists it: bench/manual_outline.py), get_document_section(heading=path) reads that
entry, not an ambiguity error, and no two entries share a path. A CI-sized part of the bench's manual set
(python -m bench.manuals measures all of it, docs/pdf.md "Manuals"): the French installation guide's HTML
chapters (DocBook), EbookLib's Sphinx pages and the X Logical Font Description (Apache FOP PDF, 97 bookmarks).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from docling_service.converter import Converter, ConverterOptions

from bench.manual_outline import path_figures, structure

DOC = Path("/usr/share/doc")
FRENCH_GUIDE = DOC / "installation-guide-amd64/fr"
SPHINX = DOC / "python-ebooklib-doc/html"
SPHINX_INDEXES = ("genindex.html", "search.html")
XLFD = DOC / "xorg-docs/xlfd/xlfd.pdf.gz"


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


def _unreadable(converter: Converter, name: str, data: bytes) -> list[object]:
    figures = path_figures(structure(converter.convert(data, name), name), keep=100)
    wrong = figures.unreadable or figures.duplicate_paths
    return [(name, figures.duplicate_paths, figures.unreadable)] if wrong else []


def test_a_page_opening_with_headings_without_text_has_each_once(converter: Converter) -> None:
    """ch03s03.html opens with "3.3", "3.3.1", "3.3.1.1" before any text: "3.3" was two entries (one empty)."""
    page = _pages(FRENCH_GUIDE, "ch03s03.html", "installation-guide-amd64")[0]
    converted = converter.convert(page.read_bytes(), page.name)
    paths = [s.heading_path for s in structure(converted, page.name).sections]
    assert paths[:2] == [["3.3. Informations utiles"], ["3.3. Informations utiles", "3.3.1. La documentation"]]
    assert not _unreadable(converter, page.name, page.read_bytes())


def test_every_outline_path_of_html_manuals_reads_its_section(converter: Converter) -> None:
    pages = _pages(FRENCH_GUIDE, "ch0[1-6]*.html", "installation-guide-amd64")
    pages += [page for page in _pages(SPHINX, "*.html", "python-ebooklib-doc") if page.name not in SPHINX_INDEXES]
    problems = [problem for page in pages for problem in _unreadable(converter, page.name, page.read_bytes())]
    assert not problems


def test_every_outline_path_of_a_pdf_manual_reads_its_section(converter: Converter) -> None:
    if not XLFD.exists():
        pytest.skip("needs Debian's xorg-docs (apt-get install xorg-docs)")
    data = gzip.decompress(XLFD.read_bytes())
    figures = path_figures(structure(converter.convert(data, "xlfd.pdf"), "xlfd.pdf"), keep=100)
    assert figures.sections >= 97 and figures.duplicate_paths == 0 and not figures.unreadable, figures
