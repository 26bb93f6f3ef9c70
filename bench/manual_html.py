"""HTML manuals and EPUB books for bench.manuals: their pages, and each page's own headings as the reference (an
EPUB's: its own table of contents).

The reference is the page's h1-h6 structure as a reader sees it, read here with BeautifulSoup apart from the
converter's cleaning: a heading's text (without a permalink glyph) and its level (the h number). Left out are
the headings no reader sees as the page's content: hidden ones (``hidden``, ``aria-hidden``, ``display:none``)
and those of navigation (``<nav>``, ``role="navigation"``, mdBook's ``menu-bar`` with the book's name on every
page) and of a table of contents (DocBook's ``div.toc``, Texinfo's ``contents-heading``), which repeat the
page's own.

An EPUB's reference is its table of contents (the EPUB 3 navigation or the NCX, read as the converter reads it:
docling_service.epub_nav), label and depth, without the entries whose target prints no such title (live-manual's
"Table of Contents" names its contents page, which prints the titles of the book, not its own), and one entry for
two in a row with one label (the outline holds no empty twin).
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from bs4 import BeautifulSoup, Tag

DOC = Path("/usr/share/doc")
GLYPHS = re.compile("[\u00b6\u00a7\uf0c1\U0001f517]")
_TOC_CLASSES = {"toc", "contents-heading", "shortcontents-heading", "sphinxsidebar", "related", "menu-bar"}
_HIDING = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


def _pages(folder: str, pattern: str, skip: tuple[str, ...] = ()) -> list[Path]:
    return sorted(p for p in (DOC / folder).glob(pattern) if p.name not in skip)


# (name, language, generator, Debian package, its pages)
SPHINX_SKIP = ("genindex.html", "search.html", "py-modindex.html")
HTML_MANUALS = [
    ("r-intro-html", "en", "Texinfo HTML (makeinfo)", "r-doc-html",
     lambda: _pages("r-doc-html/manual", "R-intro.html")),
    ("ebooklib-html", "en", "Sphinx HTML", "python-ebooklib-doc",
     lambda: _pages("python-ebooklib-doc/html", "*.html", SPHINX_SKIP)),
    ("rust-book-html", "en", "mdBook", "rust-doc",
     lambda: _pages("rust-doc/html/book", "ch0[3-6]-*.html")),
    ("install-en-html", "en", "DocBook HTML (xsltproc)", "installation-guide-amd64",
     lambda: _pages("installation-guide-amd64/en", "ch0[1-6]*.html")),
    ("install-fr-html", "fr", "DocBook HTML (xsltproc)", "installation-guide-amd64",
     lambda: _pages("installation-guide-amd64/fr", "ch0[1-6]*.html")),
    ("install-es-html", "es", "DocBook HTML (xsltproc)", "installation-guide-amd64",
     lambda: _pages("installation-guide-amd64/es", "ch0[1-6]*.html")),
]  # fmt: skip


# (name, language, generator, Debian package, the book)
EPUB_MANUALS = [
    ("live-manual-epub", "en", "SiSU EPUB", "live-manual-epub", DOC / "live-manual/epub/live-manual.en.epub"),
]


def epub_reference(data: bytes) -> list[tuple[str, int]]:
    """(label, depth) of the book's table of contents, in order, where the entry's target prints its label; an entry
    repeating the one before it is one (live-manual's part "Examples", then its sub-part "Examples")."""
    from docling_service.epub_nav import read_toc

    with zipfile.ZipFile(io.BytesIO(data)) as book:
        entries = read_toc(book)
        texts = {member: _words(BeautifulSoup(book.read(member), "html.parser").get_text(" ")).casefold()
                 for member in {e.member for e in entries} if member in book.namelist()}  # fmt: skip
    printed = [e for e in entries if e.label.casefold() in texts.get(e.member, "")]
    return [(e.label, e.depth) for i, e in enumerate(printed) if i == 0 or e.label != printed[i - 1].label]


def _words(text: str) -> str:
    return " ".join(text.split())


def _unseen(tag: Tag) -> bool:
    for node in [tag, *tag.parents]:
        if node.name == "[document]":
            continue
        classes = set(node.get("class") or [])
        if node.name == "nav" or node.get("role") == "navigation" or classes & _TOC_CLASSES:
            return True
        if node.has_attr("hidden") or str(node.get("aria-hidden", "")).lower() == "true":
            return True
        if _HIDING.search(str(node.get("style", ""))):
            return True
    return False


def reference_headings(html: bytes) -> list[tuple[str, int]]:
    """(text, level) of the page's visible headings, in order."""
    soup = BeautifulSoup(html, "lxml")
    found: list[tuple[str, int]] = []
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        if _unseen(tag):
            continue
        text = " ".join(GLYPHS.sub("", tag.get_text(" ")).split())
        # A heading repeating the one before it is one (Texinfo's title, then its Top node's; Sphinx's package
        # page, then its module's empty section): the outline holds no empty twin (issue 51).
        if text and text != (found[-1][0] if found else None):
            found.append((text, int(tag.name[1])))
    return found
