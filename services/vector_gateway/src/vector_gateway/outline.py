"""A document's map: its sections in order (heading path and levels, pages, where each lies in the
Markdown) and where each page begins, from the same chunks and the same layout as its Markdown
(passages.layout), so a section or a page range is a slice of what get_document returns.

A chunk never spans two sections (the chunker splits at headings first) but one: a heading with no text of
its own travels with the chunk after it (_heads). So a section is a run of chunks with one heading path.
Two sections in a row with the same path (two "## Notes" under one parent) read as one: their text is the
same either way. A page is the one where the section's first and last characters lie.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ingestion_contracts.chunker import PageStart
from ingestion_contracts.gateway import DocumentInfo, DocumentStructure, OutlineSection, SearchHit
from ingestion_contracts.regions import Furniture

from .boxes import content_regions, stored_furniture
from .citations import stored_page_starts
from .passages import ChunkSpan, Layout, layout


def _span(hit: SearchHit) -> ChunkSpan:
    return ChunkSpan(hit.chunk_index, hit.text, hit.start, hit.end)


def _runs(hits: Sequence[SearchHit]) -> list[list[SearchHit]]:
    """Consecutive chunks with the same heading path."""
    runs: list[list[SearchHit]] = []
    for hit in hits:
        if runs and runs[-1][0].heading_path == hit.heading_path:
            runs[-1].append(hit)
        else:
            runs.append([hit])
    return runs


@dataclass(frozen=True)
class _Head:
    path: list[str]
    levels: list[int] | None
    start: int
    run: list[SearchHit]


def _heading_line(text: str, title: str, start: int, end: int) -> int | None:
    """Where the ATX heading line of ``title`` begins in text[start:end], if it is there."""
    pattern = re.compile(rf"^ {{0,3}}#{{1,6}}[ \t]+{re.escape(title.rstrip('…'))}", re.MULTILINE)
    found = pattern.search(text, start, end)
    return found.start() if found else None


def _heads(runs: list[list[SearchHit]], laid: Layout) -> list[_Head]:
    """Where each section begins. A heading with no text of its own before its first subsection ("## Costs"
    then "### Travel") has no chunk of its own: the chunker joins it to the chunk after it (headings.py), so
    the run of "Travel" opens two headings at once; "Costs" is a section from its heading line to Travel's."""
    heads: list[_Head] = []
    for run in runs:  # where a run begins: its first chunk that adds text (one inside text written adds none)
        begun = [laid.starts[h.chunk_index] for h in run if h.chunk_index in laid.starts]
        start = 0 if not heads else begun[0] if begun else heads[-1].start
        path, levels = run[0].heading_path, run[0].heading_levels
        previous = heads[-1].path if heads else []
        shared = next((k for k, (a, b) in enumerate(zip(previous, path, strict=False)) if a != b), None)
        shared = min(len(previous), len(path)) if shared is None else shared
        for depth in range(shared + 1, len(path)):  # headings opened before this run's own, without text
            heads.append(_Head(path[:depth], levels[:depth] if levels else None, start, []))
        if heads and len(path) > shared + 1:
            line = _heading_line(laid.text, path[-1], start, start + len(run[0].text))
            start = line if line is not None and line >= start else start
        heads.append(_Head(path, levels, start, run))
    return heads


_ATX_OR_FENCE = re.compile(
    r"^ {0,3}(?:(?P<hashes>#{1,6})(?=[ \t]|$)(?P<title>[^\n]*)|(?P<fence>`{3,}|~{3,})[^\n]*)", re.M
)
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
RUNNING_HEAD = 24  # characters (spaces aside) of a page number and running head, at most
MAX_TITLE_CHARS = 200  # as the chunker cuts a heading path's titles (chunker_service/markdown.py)


def _heading_lines(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """(offset, level, title) of the ATX headings in text[start:end] outside fenced code, as the chunker reads
    them (a section holds whole code blocks: it never starts inside one)."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for match in _ATX_OR_FENCE.finditer(text, start, end):
        if match.group("fence"):
            marker = match.group("fence")
            if fence is None and not (marker[0] == "`" and "`" in text[match.end("fence") : match.end()]):
                fence = marker
            elif fence is not None and marker[0] == fence[0] and len(marker) >= len(fence) and not text[
                match.end("fence") : match.end()].strip():  # fmt: skip
                fence = None
        elif fence is None:
            title = _CLOSING.sub("", match.group("title").strip()).strip()
            title = title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"
            if title:
                found.append((match.start(), len(match.group("hashes")), title))
    return found


def _nested(path: list[str], levels: list[int] | None, title: str, level: int) -> tuple[list[str], list[int] | None]:
    """The path of a heading of ``level`` that follows a section with ``path``: it closes the sections at its
    level and below (without levels: a sibling of the last)."""
    if levels is None:
        return [*path[:-1], title], None
    keep = next((k for k in range(len(levels) - 1, -1, -1) if levels[k] < level), -1) + 1
    return [*path[:keep], title], [*levels[:keep], level]


def _before_own(out: list[_Head], head: _Head, lines: list[tuple[int, int, str]]) -> list[_Head]:
    """The heads of the heading lines before ``head``'s own line in its range (its earlier siblings or parents,
    without text of their own), each at its line. The heads opened above for the same headings, with no line of
    their own in their range (a part, then its first chapter, then that chapter's first section, all in one
    chunk: "## User", "## Installation", "### 3. Installation"), leave ``out``: one section each, in the order
    of their lines (live-manual.en.epub had "Installation" twice, one on each side of "User")."""
    if not lines:
        return []
    found: list[_Head] = []
    path, levels = head.path[:-1], head.levels[:-1] if head.levels is not None else None
    for offset, level, title in lines:
        path, levels = _nested(path, levels, title, level)
        found.append(_Head(path, levels, offset, []))
    paths = [h.path for h in found]
    tail = len(out)
    while tail and not out[tail - 1].run and out[tail - 1].start <= found[0].start:
        tail -= 1
    kept = [h for h in out[tail:] if h.path not in paths]
    if found and kept != out[tail:]:
        first = min(h.start for h in out[tail:] if h.path in paths)
        found[0] = _Head(found[0].path, found[0].levels, min(first, found[0].start), [])
    out[tail:] = kept
    return found


def _unlisted(heads: list[_Head], laid: Layout) -> list[_Head]:
    """``heads`` with a head for every heading line that has none: a heading with no text of its own whose line
    the chunker joined to the chunk after it (a part title straight before its first chapter's, at one level)
    or to the chunk before it. Each heading line is one section, from its line to the next heading line."""
    out: list[_Head] = []
    # Read once from the top: a head can begin inside a code block (a chunk cut in a long example), whose "# ..."
    # comment lines are no headings (install.de.pdf's preseed example read as 27 sections).
    every = _heading_lines(laid.text, 0, len(laid.text))
    for index, head in enumerate(heads):
        end = heads[index + 1].start if index + 1 < len(heads) else len(laid.text)
        lines = [line for line in every if head.start <= line[0] < end]
        own = next((k for k, (_, _, title) in enumerate(lines) if head.path and title == head.path[-1]), None)
        if own is None:
            out.append(head)
            own = -1
        else:  # the lines before the head's own: its earlier siblings or parents, with no text of their own
            out.extend(_before_own(out, head, lines[:own]))
            out.append(_Head(head.path, head.levels, lines[own][0], head.run))
        path, levels = list(head.path), list(head.levels) if head.levels is not None else None
        for offset, level, title in lines[own + 1 :]:
            path, levels = _nested(path, levels, title, level)
            out.append(_Head(path, levels, offset, []))
    return out


def _sections(runs: list[list[SearchHit]], laid: Layout, pages: list[PageStart]) -> list[OutlineSection]:
    heads = _unlisted(_heads(runs, laid), laid)
    ends = [*(h.start for h in heads[1:]), len(laid.text)]
    offsets = [p.offset for p in pages]

    def _page_at(offset: int) -> int | None:
        return pages[max(bisect_right(offsets, offset) - 1, 0)].page if pages else None

    def _bare(text: str) -> str:
        """Text as a running head repeats it from page to page: no spaces, no digits (the page number)."""
        return re.sub(r"[\s\d]+", "", text)

    openings = [_bare(laid.text[p.offset : p.offset + 4 * RUNNING_HEAD]) for p in pages]

    def _running_head(tail: str) -> bool:
        """A page number alone, or a short text that opens at least three other pages too ("gnuplot 5.4 87")."""
        bare = _bare(tail)
        if len("".join(tail.split())) > RUNNING_HEAD:
            return False
        return not bare or sum(o.startswith(bare) for o in openings) > 3

    def _last_page(start: int, end: int) -> int | None:
        """The page of a section's last character, but the page before when all the section holds of its last
        page is a running head ("87", "gnuplot 5.4") printed before the next section's title."""
        index = bisect_right(offsets, max(start, end - 1)) - 1
        if index > 0 and offsets[index] > start and _running_head(laid.text[offsets[index] : end]):
            return pages[index - 1].page
        return _page_at(max(start, end - 1))

    sections: list[OutlineSection] = []
    for position, (head, end) in enumerate(zip(heads, ends, strict=True)):
        later = next((h.run[:1] for h in heads[position:] if h.run), None)
        chunks = head.run or later or next(h.run[-1:] for h in reversed(heads[:position]) if h.run)
        sections.append(OutlineSection(
            position=position, heading_path=head.path, heading_levels=head.levels, start=head.start,
            end=max(head.start, end), page=_page_at(head.start), page_end=_last_page(head.start, end),
            chunk_start=chunks[0].chunk_index, chunk_end=chunks[-1].chunk_index,
        ))  # fmt: skip
    return sections


def _page_starts(hits: Sequence[SearchHit], rows: dict[int, dict[str, Any]], laid: Layout) -> list[PageStart]:
    """Where each page begins in the text: each chunk begins on its first page, and a chunk across a page
    break says where in its text each later page begins (citations.py)."""
    marks: list[tuple[int, int]] = []
    for hit in hits:
        if hit.page is None:
            continue
        span = _span(hit)
        marks.append((laid.position(span, 0), hit.page))
        marks += [(laid.position(span, offset), page) for offset, page in stored_page_starts(
            rows[hit.chunk_index].get("metadata"))]  # fmt: skip
    marks.sort()
    starts: list[PageStart] = []
    for offset, page in marks:
        if starts and page <= starts[-1].page:
            continue  # the same page again (an overlap, a chunk after one on the same page)
        starts.append(PageStart(offset=min(offset, len(laid.text)), page=page))
    return starts


def document_structure(
    info: DocumentInfo, hits: Sequence[SearchHit], rows: Sequence[dict[str, Any]]
) -> DocumentStructure:
    """The map of a document read as ``hits`` (its chunks, as a chunk listing shows them) and ``rows`` (the
    same chunks as stored: the page starts are kept apart from the metadata a hit shows)."""
    ordered = sorted(hits, key=lambda h: h.chunk_index)
    laid = layout([_span(h) for h in ordered])
    by_index = {row["chunk_index"]: row for row in rows}
    pages = _page_starts(ordered, by_index, laid)
    sections = _sections(_runs(ordered), laid, pages)
    located = content_regions(ordered, laid)
    return DocumentStructure(
        **info.model_dump(),
        content=laid.text,
        sections=sections,
        page_starts=pages,
        levels_known=all(s.heading_levels is not None or not s.heading_path for s in sections),
        regions=located[0] if located else None,
        units=located[1] if located else None,
        page_sizes=located[2] if located else None,
        furniture=_furniture(rows) if located else None,
    )


def _furniture(rows: Sequence[dict[str, Any]]) -> list[Furniture]:
    """The furniture every chunk kept, once each (a page's is kept by the chunks that hold the page), page by page."""
    found = {(f.page, f.place, f.text, f.box): f for row in rows for f in stored_furniture(row.get("metadata"))}
    return sorted(found.values(), key=lambda f: (f.page, f.place != "header", f.box[1], f.box[0]))
