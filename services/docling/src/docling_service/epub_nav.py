"""An EPUB's own table of contents, and its members' headings set by it (issue 51, point 2).

An EPUB declares its outline in its navigation: the EPUB 3 navigation document (``<nav epub:type="toc">``) or the
EPUB 2 NCX (``toc.ncx``'s ``navMap``), each entry a label, a depth and a target (``chapter.xhtml#sect-2``). It is
the book's bookmarks, and the members' markup often does not say as much: docling reads each member's ``<h1>`` at
level 1, whatever part or chapter it opens, and a generator may print a section's title as a bold paragraph
(SiSU, which makes Debian's live-manual EPUBs: every part, sub-part and chapter page an ``<h1>``, every section
a ``<p class="bold">``). Read so, live-manual.en.epub's outline was flat parts and chapters with none of their
190 sections.

So each member's headings are set by the entries that point into it before docling reads it: the target
element (the one with that id or ``<a name>``; no fragment: the member's first heading) becomes a heading at the
entry's depth, when it is a heading, holds one (a ``<section id>`` wrapper) or prints the entry's label (a bold
paragraph). The member's other headings keep their place under it (shifted as its listed heading was). A book
without navigation, or an entry whose target prints something else, is read as its markup says.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import unquote
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from bs4 import BeautifulSoup, Tag
from defusedxml import DefusedXmlException

_OPF = "{http://www.idpf.org/2007/opf}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_EPUB_TYPE = "epub:type"
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_MAX_NAV_BYTES = 8 << 20  # a navigation file larger than this is not read (the book is read by its markup)


@dataclass(frozen=True)
class NavEntry:
    """One entry of the book's table of contents: its label, its depth (1 at the top), where it points."""

    label: str
    depth: int
    member: str  # the zip member it points into
    fragment: str | None  # the id (or <a name>) in it; None: the member's top


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def _member(archive: zipfile.ZipFile, name: str) -> bytes | None:
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    return archive.read(info) if info.file_size <= _MAX_NAV_BYTES else None


def _xml(data: bytes | None) -> Element | None:
    if data is None:
        return None
    try:
        return SafeET.fromstring(data)
    except (ParseError, DefusedXmlException):  # damaged or hostile (entities, a DTD): the book is read by its markup
        return None


def _target(base: str, href: str) -> tuple[str, str | None]:
    path, _, fragment = href.partition("#")
    member = posixpath.normpath(posixpath.join(base, unquote(path))) if path else base
    return member, unquote(fragment) or None


def _ncx_entries(root: Element, base: str) -> list[NavEntry]:
    entries: list[NavEntry] = []

    def walk(node: Element, depth: int) -> None:
        for point in node.findall(f"{_NCX}navPoint"):
            text = point.find(f"{_NCX}navLabel/{_NCX}text")
            label = _words("".join(text.itertext()) if text is not None else "")
            content = point.find(f"{_NCX}content")
            src = content.get("src") if content is not None else None
            if label and src:
                entries.append(NavEntry(label, depth, *_target(base, src)))
            walk(point, depth + 1)

    nav_map = root.find(f"{_NCX}navMap")
    if nav_map is not None:
        walk(nav_map, 1)
    return entries


def _nav_entries(data: bytes, base: str) -> list[NavEntry]:
    """The entries of an EPUB 3 navigation document's table of contents (its ``<nav epub:type="toc">``)."""
    soup = BeautifulSoup(data, "html.parser")
    nav = next((n for n in soup.find_all("nav") if "toc" in str(n.get(_EPUB_TYPE, "")).split()), None)
    if nav is None:
        return []
    entries: list[NavEntry] = []
    for link in nav.find_all("a", href=True):
        item = link.find_parent("li")
        depth = len([p for p in link.parents if p.name == "ol" and (p is nav or nav in p.parents)])
        label = _words(link.get_text(" "))
        if item is not None and label:
            entries.append(NavEntry(label, max(depth, 1), *_target(base, str(link["href"]))))
    return entries


def read_toc(archive: zipfile.ZipFile) -> list[NavEntry]:
    """The book's table of contents in reading order (EPUB 3 navigation first, else the NCX); [] when it has none
    that can be read."""
    container = _xml(_member(archive, "META-INF/container.xml"))
    rootfile = container.find(f".//{_CONTAINER}rootfile") if container is not None else None
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    package = _xml(_member(archive, opf_path)) if opf_path else None
    if package is None or opf_path is None:
        return []
    base = posixpath.dirname(opf_path)
    items = package.findall(f"{_OPF}manifest/{_OPF}item")
    nav = next((i for i in items if "nav" in (i.get("properties") or "").split()), None)
    if nav is not None and nav.get("href"):
        path = _target(base, str(nav.get("href")))[0]
        data = _member(archive, path)
        entries = _nav_entries(data, posixpath.dirname(path)) if data else []
        if entries:
            return entries
    spine = package.find(f"{_OPF}spine")
    toc_id = spine.get("toc") if spine is not None else None
    ncx = next((i for i in items if (toc_id and i.get("id") == toc_id)
                or i.get("media-type") == "application/x-dtbncx+xml"), None)  # fmt: skip
    if ncx is None or not ncx.get("href"):
        return []
    path = _target(base, str(ncx.get("href")))[0]
    root = _xml(_member(archive, path))
    return _ncx_entries(root, posixpath.dirname(path)) if root is not None else []


def toc_by_member(entries: list[NavEntry]) -> dict[str, list[NavEntry]]:
    by_member: dict[str, list[NavEntry]] = defaultdict(list)
    for entry in entries:
        by_member[entry.member].append(entry)
    return dict(by_member)


def _anchor(soup: BeautifulSoup, fragment: str) -> Tag | None:
    found = soup.find(id=fragment) or soup.find("a", attrs={"name": fragment})
    if not isinstance(found, Tag):
        return None
    if found.name == "a" and not _words(found.get_text()):  # an empty <a name>: the block it opens
        return found.find_parent(["p", "div", "section", "li", "dt", *HEADINGS]) or found
    return found


def _heading_for(soup: BeautifulSoup, entry: NavEntry) -> Tag | None:
    """The element an entry names as its heading: a heading, the first heading inside it, or a block that prints
    the entry's label (SiSU's bold paragraph)."""
    body = soup.body or soup
    target = _anchor(soup, entry.fragment) if entry.fragment else body
    if target is None:
        return None
    if target is body:  # the member's top: the heading that prints the label, else its first
        headings = body.find_all(HEADINGS)
        same = [h for h in headings if _words(h.get_text(" ")).casefold() == entry.label.casefold()]
        return next(iter(same or headings), None)
    if target.name in HEADINGS:
        return target
    if _words(target.get_text(" ")).casefold() == entry.label.casefold():
        return target
    inner = target.find(HEADINGS)
    return inner if isinstance(inner, Tag) else None


def set_headings(soup: BeautifulSoup, entries: list[NavEntry]) -> None:
    """Each entry's heading at its depth; the member's other headings shifted as the listed one before them."""
    listed: dict[int, tuple[Tag, int]] = {}
    for entry in entries:
        heading = _heading_for(soup, entry)
        if heading is not None and id(heading) not in listed:
            listed[id(heading)] = (heading, min(entry.depth, 6))
    if not listed:
        return
    shift = 0
    for tag in list(soup.find_all(True)):
        if id(tag) in listed:
            heading, level = listed[id(tag)]
            if heading.name in HEADINGS:
                shift = level - int(heading.name[1])
            heading.name = f"h{level}"
        elif tag.name in HEADINGS and shift:
            tag.name = f"h{min(max(int(tag.name[1]) + shift, 1), 6)}"
