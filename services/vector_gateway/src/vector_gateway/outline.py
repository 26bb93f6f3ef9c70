"""A document's map: its sections in order (heading path and levels, pages, where each lies in the
Markdown) and where each page begins, from the same chunks and the same layout as its Markdown
(passages.layout), so a section or a page range is a slice of what get_document returns.

A chunk never spans two sections (the chunker splits at headings first), so a section is a run of chunks
with one heading path. Two sections in a row with the same path (two "## Notes" under one parent) read as
one: their text is the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ingestion_contracts.chunker import PageStart
from ingestion_contracts.gateway import DocumentContent, DocumentStructure, OutlineSection, SearchHit

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


def _sections(runs: list[list[SearchHit]], laid: Layout) -> list[OutlineSection]:
    starts: list[int] = []
    for run in runs:  # where a run begins: its first chunk that adds text (one inside text written adds none)
        begun = [laid.starts[h.chunk_index] for h in run if h.chunk_index in laid.starts]
        starts.append(begun[0] if begun else (starts[-1] if starts else 0))
    if starts:
        starts[0] = 0
    ends = [*starts[1:], len(laid.text)]
    sections: list[OutlineSection] = []
    for position, (run, start, end) in enumerate(zip(runs, starts, ends, strict=True)):
        pages = [h.page for h in run if h.page] + [h.page_end for h in run if h.page_end]
        sections.append(OutlineSection(
            position=position, heading_path=run[0].heading_path, heading_levels=run[0].heading_levels,
            start=start, end=max(start, end), page=min(pages) if pages else None,
            page_end=max(pages) if pages else None, chunk_start=run[0].chunk_index, chunk_end=run[-1].chunk_index,
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
    content: DocumentContent, hits: Sequence[SearchHit], rows: Sequence[dict[str, Any]]
) -> DocumentStructure:
    """The map of a document read as ``hits`` (its chunks, as a chunk listing shows them) and ``rows`` (the
    same chunks as stored: the page starts are kept apart from the metadata a hit shows)."""
    ordered = sorted(hits, key=lambda h: h.chunk_index)
    laid = layout([_span(h) for h in ordered])
    by_index = {row["chunk_index"]: row for row in rows}
    sections = _sections(_runs(ordered), laid)
    return DocumentStructure(
        **{**content.model_dump(), "content": laid.text},
        sections=sections,
        page_starts=_page_starts(ordered, by_index, laid),
        levels_known=all(s.heading_levels is not None or not s.heading_path for s in sections),
    )
