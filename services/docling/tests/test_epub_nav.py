"""An EPUB's own table of contents, read as the converter reads it (docling_service.epub_nav, issue 51).

The outline an EPUB converts to is tested whole in services/ingestion_mcp/tests/test_manual_paths.py; here, what
its table of contents is read as, and that a hostile one costs nothing: the book is read by its markup.
"""

from __future__ import annotations

import io
import zipfile

from docling_service.epub_nav import read_toc
from docling_service.html_clean import clean_epub

from scripts.system_files import LIVE_MANUAL_EPUB, needs

ENTITY_BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE ncx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/"><navMap><navPoint><navLabel><text>&c;</text></navLabel>
<content src="installation.xhtml"/></navPoint></navMap></ncx>"""


def _with_member(book: bytes, name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, data if info.filename == name else source.read(info))
    return out.getvalue()


@needs(LIVE_MANUAL_EPUB)
def test_the_ncx_is_read_as_the_books_outline() -> None:
    with zipfile.ZipFile(LIVE_MANUAL_EPUB) as book:
        entries = read_toc(book)
    assert len(entries) == 190 and entries[0].label == "Table of Contents"
    requirements = next(e for e in entries if e.label == "3.1 Requirements")
    assert (requirements.depth, requirements.member, requirements.fragment) == (4, "OEBPS/installation.xhtml", "o110")
    assert [e.depth for e in entries if e.label in ("Live Systems Manual", "User", "3. Installation")] == [1, 2, 3]


@needs(LIVE_MANUAL_EPUB)
def test_a_hostile_table_of_contents_is_not_read() -> None:
    """An NCX with entity expansion (or one that does not parse) is no outline: the book is read by its markup."""
    book = _with_member(LIVE_MANUAL_EPUB.read_bytes(), "OEBPS/toc.ncx", ENTITY_BOMB)
    with zipfile.ZipFile(io.BytesIO(book)) as archive:
        assert read_toc(archive) == []
    broken = _with_member(LIVE_MANUAL_EPUB.read_bytes(), "OEBPS/toc.ncx", b"<ncx><navMap>")
    cleaned = clean_epub(broken)
    with zipfile.ZipFile(io.BytesIO(cleaned)) as archive:
        page = archive.read("OEBPS/installation.xhtml").decode()
    assert "3.1 Requirements" in page and "<h1" in page
