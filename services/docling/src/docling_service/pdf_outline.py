"""A PDF's own outline (its bookmarks) as the headings of the converted text.

Most manuals carry an outline: LaTeX's hyperref, dblatex, Apache FOP, Texinfo, Sphinx, LibreOffice and Word
write one bookmark per section, with its level, its page and where on the page it starts. That is the
document's own statement of its structure, better than any guess from font sizes: each bookmark is matched to
the printed line(s) of its title on its page (near where the bookmark points), and those lines become a heading
of the bookmark's level. Read with pypdfium2 (already docling's PDF backend; pypdf would parse the file again).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, replace

import pypdfium2 as pdfium
from docling.utils.locks import pypdfium2_lock

from .pdf_lines import Line
from .pdf_text import clean_text

MAX_LEVEL = 6
# A printed heading may carry a number or a label the bookmark leaves out ("3.2.1", "Chapter 3", "Part II") or
# the other way round: up to this many letters or digits more on one side still match.
MAX_LABEL_CHARS = 14
MAX_TITLE_LINES = 3
MAX_BOOKMARKS = 20_000
# What may stand before a title, as _key leaves it: a word such as "Chapter", then a number ("3.2.1" -> "321"),
# a roman numeral ("Part II") or a letter with digits ("A.2").
_LABEL = re.compile(
    r"^(?:part|chapter|appendix|section|kapitel|teil|anhang|abschnitt|chapitre|partie|annexe|capitulo|capitolo"
    r"|apendice)?(?:\d+|[ivxlcdm]+|[a-z]\d*)?$"
)

# A line that is only a title's label, printed above it ("Chapter 3", "Kapitel 2", "CAPÍTULO 4", "Appendix A", "7").
LABEL_LINE = re.compile(
    r"^(?:(?:part|chapter|appendix|section|kapitel|teil|anhang|abschnitt|chapitre|partie|annexe|cap[ií]tulo"
    r"|capitolo|ap[eé]ndice)\s+)?(?:\d+|[IVXLCDM]+|[A-Z])\.?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Bookmark:
    title: str
    level: int  # 1 = top
    page: int  # 1-based
    top: float | None  # where it points on the page, from the top (points); None when the bookmark does not say


def read_bookmarks(data: bytes) -> list[Bookmark]:
    """The PDF's outline in order (empty when it has none or it cannot be read)."""
    with pypdfium2_lock:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            return []
        try:
            return _bookmarks(document)
        finally:
            document.close()


def _bookmarks(document: pdfium.PdfDocument) -> list[Bookmark]:
    found: list[Bookmark] = []
    heights: dict[int, float] = {}
    for entry in document.get_toc(max_depth=MAX_LEVEL * 2):
        if len(found) >= MAX_BOOKMARKS:
            break
        dest = entry.get_dest()
        title = " ".join(clean_text(entry.get_title() or "").split())
        index = dest.get_index() if dest is not None else None
        if not title or index is None or not 0 <= index < len(document):
            continue
        top = None
        _, view = dest.get_view()
        if len(view) >= 2 and view[1]:  # XYZ / FitH: (left, top) in PDF points, from the bottom
            if index not in heights:
                heights[index] = document.get_page_size(index)[1]
            top = heights[index] - float(view[1])
        found.append(Bookmark(title=title, level=min(entry.level + 1, MAX_LEVEL), page=index + 1, top=top))
    return found


def _key(text: str) -> str:
    """Letters and digits only, accents and case dropped: how a title and its printed line are compared."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed.casefold() if c.isalnum())


def _matches(printed: str, title: str) -> bool:
    if not printed or not title:
        return False
    if printed == title:
        return True
    if printed.endswith(title) and len(printed) - len(title) <= MAX_LABEL_CHARS:
        return bool(_LABEL.match(printed[: len(printed) - len(title)]))
    if title.endswith(printed) and len(title) - len(printed) <= MAX_LABEL_CHARS and len(printed) >= 3:
        return bool(_LABEL.match(title[: len(title) - len(printed)]))
    return False


def _slack(line: Line) -> float:
    """How far above a printed line a bookmark may point and still mean it (it points at or a little above)."""
    return 2 * max(line.height, 8.0)


def _find(lines: list[Line], candidates: list[int], bookmark: Bookmark, taken: set[int]) -> list[int] | None:
    """Indices of the consecutive lines (from ``candidates``) that print the bookmark's title, or None."""
    title = _key(bookmark.title)
    matches: list[list[int]] = []
    for position, first in enumerate(candidates):
        if first in taken:
            continue
        joined = ""
        for count in range(MAX_TITLE_LINES):
            if position + count >= len(candidates) or candidates[position + count] in taken:
                break
            joined += _key(lines[candidates[position + count]].text)
            if _matches(joined, title):
                matches.append(_own_lines(lines, candidates[position : position + count + 1], title))
                break
            if len(joined) > len(title) + MAX_LABEL_CHARS:
                break
    if not matches:
        return None
    if bookmark.top is None:
        return matches[0]
    # The one nearest below where the bookmark points (it points at or a little above the heading).
    slack = _slack(lines[matches[0][0]])
    below = [m for m in matches if lines[m[0]].top >= bookmark.top - slack]
    return below[0] if below else matches[-1]


def _own_lines(lines: list[Line], found: list[int], title: str) -> list[int]:
    """The title's lines without a line before them that the title also matches without: the end of the text
    above ("K 0.7651" closing a table, "{#1}}" a code line, "§ 3.13.6." a reference) read as a label would
    begin the heading; a label line of its own ("Chapter 3" over the title) stays."""
    while len(found) > 1 and not LABEL_LINE.match(lines[found[0]].text.strip()):
        rest = "".join(_key(lines[index].text) for index in found[1:])
        if not _matches(rest, title):
            break
        found = found[1:]
    return found


def _run_in(lines: list[Line], candidates: list[int], bookmark: Bookmark, taken: set[int]) -> tuple[int, int] | None:
    """(line index, characters) of a run-in heading: a line that starts with the title and goes on with the
    section's text ("Column The column(x) function may be used ..."), or with its number and the title ("2.4.1.1
    Das xref-Feld Zusätzlich zum crossref-Feld ..."), nearest below where the bookmark points."""
    title = _key(bookmark.title)
    found: list[tuple[int, int]] = []
    for index in candidates:
        text = lines[index].text
        if index in taken or title not in _key(text)[: len(title) + MAX_LABEL_CHARS]:
            continue
        for end in (m.start() for m in re.finditer(r"\s|$", text)):
            head = _key(text[:end])
            if text[end:].strip() and _matches(head, title):
                found.append((index, end))
                break
            if len(head) >= len(title) + MAX_LABEL_CHARS:
                break
    if not found or bookmark.top is None:
        return found[0] if found else None
    below = [f for f in found if lines[f[0]].top >= bookmark.top - _slack(lines[f[0]])]
    return below[0] if below else found[-1]


def _split(line: Line, at: int) -> tuple[Line, Line]:
    """A line cut in two at character ``at`` (the box divided in proportion to the characters)."""
    cut = line.left + (line.right - line.left) * at / max(len(line.text), 1)
    head, tail = (
        replace(line, text=line.text[:at].rstrip(), right=cut, words=()),
        replace(line, text=line.text[at:].lstrip(), left=cut, words=()),
    )
    return head, tail


def mark_bookmarks(lines: list[Line], bookmarks: list[Bookmark]) -> tuple[list[Line], int]:
    """``lines`` with the lines of each bookmark's title marked as a heading of its level (found on its page, or
    the next: a bookmark may point at the bottom of the page before; else a heading of its own where it points),
    and how many bookmarks became headings."""
    by_page: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        by_page.setdefault(line.page, []).append(index)
    marked = list(lines)
    runs: dict[int, Line] = {}  # the rest of a line whose start is a run-in heading
    taken: set[int] = set()
    found = 0
    unprinted: list[tuple[int, Bookmark]] = []  # bookmarks whose title no line of their page prints
    for number, bookmark in enumerate(bookmarks):
        hit = _find(marked, by_page.get(bookmark.page, []), bookmark, taken)
        if hit is None:
            hit = _find(marked, by_page.get(bookmark.page + 1, []), replace(bookmark, top=None), taken)
        if hit is None and (run_in := _run_in(marked, by_page.get(bookmark.page, []), bookmark, taken)) is not None:
            head, rest = _split(marked[run_in[0]], run_in[1])
            runs[run_in[0]] = rest
            marked[run_in[0]] = head
            hit = [run_in[0]]
        if hit is None:
            unprinted.append((number, bookmark))
            continue
        found += 1
        for index in hit:
            taken.add(index)
            marked[index] = replace(marked[index], heading=bookmark.level, heading_id=number)
    out: list[Line] = []
    for index, line in enumerate(marked):  # a run-in heading's line goes on after its title
        out.append(line)
        if index in runs:
            out.append(runs[index])
    return _with_unprinted(out, unprinted), found + len(unprinted)


def _with_unprinted(lines: list[Line], unprinted: list[tuple[int, Bookmark]]) -> list[Line]:
    """The document's own outline holds these sections though their pages do not print the title as it is
    bookmarked (a Beamer deck's subsection points at a slide titled otherwise; a title page's bookmark names the
    book): each is a heading of its level where the bookmark points (its page's top when it does not say), so
    the outline keeps every bookmark at its level and page. It has no printed text, so no box of its own.
    ``lines`` are in page order; bookmarks at one place keep their own order."""
    by_page: dict[int, list[int]] = {}
    for index, line in enumerate(lines):
        by_page.setdefault(line.page, []).append(index)
    pages = [line.page for line in lines]
    placed: list[tuple[int, int, Line]] = []  # (index in ``lines`` it goes before, bookmark number, the line)
    for number, bookmark in unprinted:
        here = by_page.get(bookmark.page, [])
        below = (i for i in here if bookmark.top is None or lines[i].top >= bookmark.top - _slack(lines[i]))
        at = next(below, here[-1] + 1 if here else bisect_left(pages, bookmark.page))
        near = lines[at] if at < len(lines) and lines[at].page == bookmark.page else None
        top = near.top if near is not None else (bookmark.top or 0.0)
        left = near.left if near is not None else 0.0
        heading = Line(text=bookmark.title, page=bookmark.page, left=left, top=top, right=left, bottom=top,
                       heading=bookmark.level, heading_id=number, printed=False)  # fmt: skip
        placed.append((at, number, heading))
    out: list[Line] = []
    taken = 0
    for at, _, line in sorted(placed, key=lambda entry: entry[:2]):
        out.extend(lines[taken:at])
        out.append(line)
        taken = at
    out.extend(lines[taken:])
    return out
