"""HTML manuals as written, before docling's HTML reader sees them (issue 51, point 3).

Documentation generators (Sphinx, mdBook, Texinfo, DocBook) write pages for a browser: a permalink glyph after
each heading, code highlighted into one span per token, inline code in <code>, navigation bars, hidden dialogs.
docling's HTML reader (BeautifulSoup) reads every element as content: headings end in "¶" or the theme's icon
glyph, code reads "pdf . pages . extend ( appendix . pages )", inline code becomes fenced blocks mid-sentence,
and an mdBook page's first heading is its keyboard-help dialog. So before docling reads a page:

- what a reader never sees goes: the ``hidden`` attribute, ``aria-hidden="true"``, an inline ``display:none`` or
  ``visibility:hidden``, a ``<dialog>`` not open, and the site's navigation (``<nav>``, ``role="navigation"``,
  the generators' navigation bars and tables of contents, which repeat the headings);
- permalinks go: Sphinx's ``headerlink``, Texinfo's ``copiable-link``, any in-page link whose text is only a
  permalink glyph ("¶", "§", "#", U+F0C1) or a number linking to the block it labels (SiSU's paragraph numbers);
- code keeps its text: a ``<pre>`` becomes its own text, exactly as a browser shows it (token spans joined as in
  the source), and inline code (``<code>``, ``<tt>``, ``<kbd>``, ``<samp>`` outside a ``<pre>``) becomes
  Markdown's backticks inside its sentence.

HTML files, MHTML archives (their HTML part) and EPUB books (each XHTML member) are cleaned alike.
"""

from __future__ import annotations

import email
import email.encoders
import email.policy
import io
import re
import zipfile
from email.message import Message

from bs4 import BeautifulSoup, NavigableString, Tag

from .epub_nav import NavEntry, read_toc, set_headings, toc_by_member

# Utility classes that hide (mdBook's search bar is class="hidden"; Bootstrap's d-none; screen-reader-only text).
_HIDDEN_CLASSES = {"hidden", "d-none", "visually-hidden", "sr-only"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*(hidden|collapse)", re.I)
_PERMALINK_GLYPHS = {"¶", "§", "#", "\uf0c1", "🔗", "link"}
_PERMALINK_CLASSES = {"headerlink", "copiable-link", "anchorjs-link", "permalink"}
# Navigation bars and tables of contents of the generators the project reads (their headings repeat the page's).
_CHROME_CLASSES = {
    "sphinxsidebar", "related",  # Sphinx
    "menu-bar", "nav-wrapper", "nav-wide-wrapper",  # mdBook
    "navheader", "navfooter", "toc",  # DocBook
}  # fmt: skip
# Texinfo's: a bar of Next/Previous/Up links ("header", "nav-panel": names other sites give their page header, so
# only with such links), and its tables of contents under their "contents-heading".
_TEXINFO_BARS = {"header", "nav-panel"}
_TEXINFO_TOC_HEADINGS = {"contents-heading", "shortcontents-heading"}
_NAV_RELS = {"next", "prev", "previous", "up"}
_INLINE_CODE = ("code", "tt", "kbd", "samp")
_BACKTICKS = re.compile(r"`+")


def _words(value: object) -> set[str]:
    """A multi-valued attribute (class, rel) as its words, however BeautifulSoup holds it."""
    if isinstance(value, str):
        return set(value.split())
    return {str(word) for word in value} if isinstance(value, list) else set()


def _classes(tag: Tag) -> set[str]:
    return _words(tag.get("class"))


def _hidden(tag: Tag) -> bool:
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).strip().lower() == "true":
        return True
    if (tag.name == "dialog" and not tag.has_attr("open")) or _classes(tag) & _HIDDEN_CLASSES:
        return True
    return bool(_HIDDEN_STYLE.search(str(tag.get("style", ""))))


def _rel(link: Tag) -> set[str]:
    return _words(link.get("rel"))


def _texinfo_chrome(tag: Tag, classes: set[str]) -> bool:
    if classes & _TEXINFO_BARS:
        return any(_rel(link) & _NAV_RELS for link in tag.find_all("a"))
    if classes & _TEXINFO_TOC_HEADINGS:  # the heading; the list after it goes with it (below)
        return True
    previous = tag.find_previous_sibling(True)
    return (
        bool({"contents", "shortcontents"} & classes)
        and previous is not None
        and bool(_classes(previous) & _TEXINFO_TOC_HEADINGS)
    )


def _chrome(tag: Tag) -> bool:
    if tag.name == "nav" or str(tag.get("role", "")).lower() in ("navigation", "search"):
        return True
    classes = _classes(tag)
    # A class names chrome only on a block (a DocBook "toc" div, not a <span class="toc">) or a heading (SiSU's
    # table of contents is h1-h6 of class "toc": every title of the book again, at the top of an EPUB).
    if tag.name not in ("div", "header", "footer", "aside", "ul", "h1", "h2", "h3", "h4", "h5", "h6"):
        return False
    return bool(classes & _CHROME_CLASSES) or _texinfo_chrome(tag, classes)


def _permalink(tag: Tag) -> bool:
    if tag.name != "a":
        return False
    if _classes(tag) & _PERMALINK_CLASSES:
        return True
    href = str(tag.get("href", ""))
    text = tag.get_text(strip=True)
    return href.startswith("#") and (text in _PERMALINK_GLYPHS or (text.isdigit() and _labels(tag, href[1:])))


def _labels(link: Tag, target: str) -> bool:
    """A number linking to the block it stands beside or in: a paragraph's own citation number (SiSU prints one
    in the margin of every paragraph and heading, ``<label><a href="#o110">110</a></label><p id="o110">``)."""
    holder = link.parent
    beside = holder.find_next_sibling(True) if holder is not None else None
    return any(node.get("id") == target for node in [*link.parents, beside] if isinstance(node, Tag))


def _drop_invisible(soup: BeautifulSoup) -> None:
    # All judged first: a table of contents is known by the heading before it, which goes too.
    doomed = [tag for tag in soup.find_all(True) if _hidden(tag) or _chrome(tag) or _permalink(tag)]
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


def _code_as_written(soup: BeautifulSoup) -> None:
    for pre in soup.find_all("pre"):
        text = pre.get_text()
        code = pre.find("code")
        pre.clear()
        if isinstance(code, Tag):  # kept: docling reads a language class from it
            code.clear()
            code.append(NavigableString(text))
            pre.append(code)
        else:
            pre.append(NavigableString(text))
    for tag in soup.find_all(_INLINE_CODE):
        if tag.decomposed or tag.find_parent("pre") is not None:
            continue
        text = " ".join(tag.get_text().split())
        fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        tag.replace_with(NavigableString(f"{fence}{pad}{text}{pad}{fence}" if text else ""))


def clean_html(data: bytes, toc: list[NavEntry] | None = None) -> bytes:
    """One HTML page, as a reader sees it (module docstring), as UTF-8 (its meta charset rewritten to match); an
    EPUB member's headings set by the entries of the book's table of contents that point into it (``toc``)."""
    soup = BeautifulSoup(data, "html.parser")
    _drop_invisible(soup)
    if toc:
        set_headings(soup, toc)
    _code_as_written(soup)
    return soup.encode("utf-8")


def _html_part(message: Message) -> Message | None:
    for part in message.walk():
        if part.get_content_type() in ("text/html", "application/xhtml+xml"):
            return part
    return None


def clean_mhtml(data: bytes) -> bytes:
    """An MHTML archive with its HTML part cleaned (the archive as it was when it has none)."""
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    part = _html_part(message)
    payload = part.get_payload(decode=True) if part is not None else None
    if part is None or not isinstance(payload, bytes):
        return data
    part.set_payload(clean_html(payload))
    part.set_param("charset", "utf-8")
    del part["Content-Transfer-Encoding"]
    email.encoders.encode_base64(part)
    return message.as_bytes()


def clean_epub(data: bytes) -> bytes:
    """An EPUB with each (X)HTML member cleaned, its headings set by the book's table of contents (epub_nav); its
    other members as they were."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        toc = toc_by_member(read_toc(source))
        for info in source.infolist():
            member = source.read(info)
            if info.filename.lower().endswith((".xhtml", ".html", ".htm")):
                member = clean_html(member, toc.get(info.filename))
            stored = info.filename == "mimetype"  # EPUB: the mimetype member is stored, not deflated
            target.writestr(info, member, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    return out.getvalue()


def clean_document(file_type: str, data: bytes) -> bytes:
    """The document with its HTML cleaned: an HTML page, an MHTML archive, an EPUB; any other as it is."""
    cleaners = {"html": clean_html, "mhtml": clean_mhtml, "epub": clean_epub}
    cleaner = cleaners.get(file_type)
    return cleaner(data) if cleaner else data
