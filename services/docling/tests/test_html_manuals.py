"""HTML manuals as written (issue 51, point 3), on four generators' real pages: Sphinx (Debian's
python-ebooklib-doc, also saved as MHTML), mdBook (rust-doc's Rust book, kept in tests/fixtures/real), Texinfo
(r-doc-html's R-intro) and DocBook (installation-guide-amd64). No permalink glyph in a heading, code as its source
reads, inline code inside its sentence, no navigation or hidden element read as content, the page's own title."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from docling_service.converter import Converter
from ingestion_contracts.docling import ConvertResponse

from scripts.system_files import DOCBOOK_HTML, SPHINX_HTML, TEXINFO_HTML

REAL = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "real"
SPHINX, TEXINFO, DOCBOOK = SPHINX_HTML, TEXINFO_HTML, DOCBOOK_HTML
GLYPHS = re.compile("[\u00b6\u00a7\uf0c1]|#$")


Convert = Callable[[Path, str], ConvertResponse]


@pytest.fixture(scope="module")
def convert(converter: Converter) -> Convert:
    """A page's conversion, each page converted once for the module (R-intro takes seconds)."""
    done: dict[Path, ConvertResponse] = {}

    def read(path: Path, package: str) -> ConvertResponse:
        if not path.exists():
            pytest.skip(f"needs Debian's {package} (apt-get install {package})")
        if path not in done:
            done[path] = converter.convert(path.read_bytes(), path.name)
        return done[path]

    return read


def _headings(result: ConvertResponse) -> list[str]:
    return [block.text for block in result.blocks if block.kind in ("title", "heading")]


@pytest.mark.parametrize(("path", "package"), [(SPHINX, "python-ebooklib-doc"), (REAL / "ebooklib-tutorial.mhtml", "")])
def test_a_sphinx_page_reads_as_written(convert: Convert, path: Path, package: str) -> None:
    result = convert(path, package)
    assert result.title == "Tutorial — EbookLib 0.17 documentation"  # its <title>, not the sidebar's "Navigation"
    assert _headings(result)[:3] == ["Tutorial", "Introduction", "Reading EPUB"]
    text = result.markdown
    assert "book = epub.read_epub('test.epub')" in text  # highlighted tokens joined as in the source
    assert "There is a `ebooklib.epub.read_epub()` function used for reading EPUB files." in text
    assert "Quick search" not in text and "Previous topic" not in text  # the sidebar is navigation


def test_an_mdbook_page_reads_as_written(convert: Convert) -> None:
    result = convert(REAL / "rust-book-data-types.html", "")
    assert result.title == "Data Types - The Rust Programming Language"
    assert _headings(result)[:3] == ["Data Types", "Scalar Types", "Integer Types"]  # no menu-bar title first
    assert 'let guess: u32 = "42".parse().expect("Not a number!");' in result.markdown
    assert "Storing Lists of Values with Vectors" not in result.markdown  # the sidebar's chapter list
    assert "Press ? to show" not in result.markdown and "searchresults" not in result.markdown


def test_a_texinfo_manual_reads_as_written(convert: Convert) -> None:
    result = convert(TEXINFO, "r-doc-html")
    headings = _headings(result)
    assert result.title == "An Introduction to R"
    assert "Table of Contents" not in headings and "1.1 The R environment" in headings
    assert "Next: Preface" not in " ".join(result.markdown.split())  # the node navigation bars
    assert "> help(solve)" in result.markdown


def test_a_docbook_page_reads_as_written(convert: Convert) -> None:
    result = convert(DOCBOOK, "installation-guide-amd64")
    assert result.title == "1.1. What is Debian?" and _headings(result)[0] == "1.1. What is Debian?"
    assert not re.search(r"\bPrev\b.*\bNext\b", result.markdown[:300])  # the page's navigation header


@pytest.mark.parametrize(
    ("path", "package"),
    [(SPHINX, "python-ebooklib-doc"), (REAL / "rust-book-data-types.html", ""), (TEXINFO, "r-doc-html")],
)
def test_no_heading_ends_in_a_permalink_glyph(convert: Convert, path: Path, package: str) -> None:
    headings = _headings(convert(path, package))
    assert headings and not [heading for heading in headings if GLYPHS.search(heading)]
