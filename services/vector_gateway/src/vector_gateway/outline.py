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

from .boxes import content_regions
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


def _sections(runs: list[list[SearchHit]], laid: Layout, pages: list[PageStart]) -> list[OutlineSection]:
    heads = _heads(runs, laid)
    ends = [*(h.start for h in heads[1:]), len(laid.text)]
    offsets = [p.offset for p in pages]

    def _page_at(offset: int) -> int | None:
        return pages[max(bisect_right(offsets, offset) - 1, 0)].page if pages else None

    sections: list[OutlineSection] = []
    for position, (head, end) in enumerate(zip(heads, ends, strict=True)):
        chunks = head.run or next(h.run for h in heads[position:] if h.run)[:1]
        sections.append(OutlineSection(
            position=position, heading_path=head.path, heading_levels=head.levels, start=head.start,
            end=max(head.start, end), page=_page_at(head.start), page_end=_page_at(max(head.start, end - 1)),
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
    )
