"""A converted manual's outline as get_document_outline gives it, and what get_document_section reads by it.

The outline is built by the project's own code, without embedding the text (the outline does not depend on the
vectors): the chunker service's chunking of the converter's Markdown (the "default" preset, as an ingest runs
it), the chunks as the gateway stores them (page starts; heading levels only where the document declares them,
as the pipeline keeps them), the gateway's ``document_structure`` (what get_document_outline lists) and the MCP
tool's ``find_section`` and ``section_end`` (what get_document_section reads). Used by bench.manuals and by
services/ingestion_mcp/tests/test_manual_paths.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ingestion_contracts.chunker import ChunkRequest
from ingestion_contracts.docling import ConvertResponse
from ingestion_contracts.gateway import DocumentInfo, DocumentStructure, OutlineSection, SearchHit


@cache
def _chunking() -> Any:
    from chunker_service.main import _load
    from chunker_service.settings import ChunkerSettings

    return _load(ChunkerSettings())


def structure(converted: ConvertResponse, name: str) -> DocumentStructure:
    """The document's map as the gateway builds it from the chunks an ingest stores."""
    from vector_gateway.citations import with_page_starts
    from vector_gateway.outline import document_structure
    from vector_gateway.upsert import stored_metadata

    request = ChunkRequest(text=converted.markdown, preset="default", page_spans=converted.page_spans,
                           regions=converted.regions, units=converted.units)  # fmt: skip
    chunks = _chunking().chunk_sync(request).chunks
    hits = [
        SearchHit(
            chunk_id=f"{name}-{c.index}", doc_id=name, collection="manuals", source=name, key=name,
            title=converted.title, file_type=converted.file_type, page=c.page, page_end=c.page_end,
            heading_path=c.heading_path,
            heading_levels=(c.heading_levels or None) if converted.levels_known else None,
            chunk_index=c.index, text=c.text, start=c.start, end=c.end, token_count=c.token_count, score=0.0,
            tags=[], metadata={}, last_modified="",
        )
        for c in chunks
    ]  # fmt: skip
    rows = [{"chunk_index": c.index,
             "metadata": with_page_starts(stored_metadata({}, key=name), [(s.offset, s.page) for s in c.page_starts])}
            for c in chunks]  # fmt: skip
    info = DocumentInfo(doc_id=name, collection="manuals", source=name, title=converted.title,
                        file_type=converted.file_type, content_hash=converted.content_hash,
                        chunk_count=len(chunks), token_count=sum(c.token_count for c in chunks), created_at="",
                        updated_at="", last_modified="", tags=[], metadata={})  # fmt: skip
    return document_structure(info, hits, rows)


def read_by_path(doc: DocumentStructure, path: list[str]) -> OutlineSection | str:
    """The section get_document_section(heading=path) reads, or the error it answers."""
    from ingestion_mcp.errors import ToolFailure
    from ingestion_mcp.profiles.ingestion.navigation import find_section

    try:
        return find_section(doc, path, None)
    except ToolFailure as failure:
        return failure.message


def chapter_text(doc: DocumentStructure, section: OutlineSection) -> str:
    """What get_document_section(heading=..., subsections=true) returns for ``section`` (all of it)."""
    from ingestion_mcp.profiles.ingestion.navigation import section_end

    return doc.content[section.start : section_end(doc, section, True).end]


@dataclass
class PathFigures:
    sections: int  # outline entries with a heading
    duplicate_paths: int  # entries whose heading path an earlier entry has too
    readable: int  # entries that get_document_section(heading=their path) reads
    unreadable: list[tuple[list[str], str]]  # a few of the others: (path, what the tool answered)


def path_figures(doc: DocumentStructure, keep: int = 5) -> PathFigures:
    seen: set[tuple[str, ...]] = set()
    duplicates = readable = 0
    unreadable: list[tuple[list[str], str]] = []
    headed = [s for s in doc.sections if s.heading_path]
    for section in headed:
        key = tuple(section.heading_path)
        duplicates += key in seen
        seen.add(key)
        found = read_by_path(doc, section.heading_path)
        if isinstance(found, OutlineSection) and found.position == section.position:
            readable += 1
        elif len(unreadable) < keep:
            unreadable.append((section.heading_path, found if isinstance(found, str) else f"position {found.position}"))
    return PathFigures(len(headed), duplicates, readable, unreadable)


@dataclass
class Entry:
    """A heading of the manual's own outline: a PDF bookmark (with its page), an HTML page's h1-h6 (no page)."""

    title: str
    level: int
    page: int | None = None


@dataclass
class Tally:
    """What one document (or an HTML manual's pages, added up) scored against its own outline."""

    reference: int = 0
    found: int = 0
    level_right: int = 0
    page_right: int = 0
    at_level_and_page: int = 0
    headings: int = 0
    false_headings: int = 0
    sections: int = 0
    duplicate_paths: int = 0
    readable: int = 0
    chapters: int = 0
    chapters_whole: int = 0
    samples: dict[str, list[Any]] | None = None

    def add(self, other: Tally, keep: int = 5) -> None:
        for name, value in vars(other).items():
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        mine = self.samples = self.samples or {}
        for name, values in (other.samples or {}).items():
            mine[name] = (mine.get(name, []) + values)[:keep]


HEADINGS = ("title", "heading")  # a page's title is its outline's first heading too


def _key(text: str) -> str:
    from docling_service.pdf_outline import _key as key

    return key(text)


def match(blocks: list[Any], entries: list[Entry]) -> dict[int, int]:
    """Entry -> heading block: a PDF's on the bookmark's page or the next (as printed, or with its label), an HTML
    page's the next heading of the same text in reading order."""
    from docling_service.pdf_outline import _matches

    headings = [i for i, b in enumerate(blocks) if b.kind in HEADINGS]
    matched: dict[int, int] = {}
    used: set[int] = set()
    after = -1  # HTML: the last heading matched
    for index, entry in enumerate(entries):
        title = _key(entry.title)
        if entry.page is not None:
            near = [i for i in headings if i not in used and blocks[i].page in (entry.page, entry.page + 1)]
        else:
            near = [i for i in headings if i > after]
        same = [i for i in near if _key(blocks[i].text) == title]
        found = next(iter(same or [i for i in near if _matches(_key(blocks[i].text), title)]), None)
        if found is not None:
            used.add(found)
            matched[index] = after = found
    return matched


def _chapter_level(entries: list[Entry]) -> int | None:
    """The level of the chapters: the top one, or the one below where a single heading tops the document."""
    levels = sorted({e.level for e in entries})
    if not levels:
        return None
    top = [e for e in entries if e.level == levels[0]]
    return levels[1] if len(top) == 1 and len(levels) > 1 else levels[0]


def _sections_of(doc: DocumentStructure, blocks: list[Any], matched: dict[int, int]) -> dict[int, int]:
    """Entry -> outline position: the matched heading blocks' sections, in order."""
    at, out = 0, {}
    for entry, block in sorted(matched.items(), key=lambda item: item[1]):
        title = _key(blocks[block].text)
        found = next((s for s in doc.sections[at:] if s.heading_path and _key(s.heading_path[-1]) == title), None)
        if found is not None:
            out[entry] = found.position
            at = found.position + 1
    return out


def chapter_reads(doc: DocumentStructure, blocks: list[Any], entries: list[Entry], matched: dict[int, int]
                  ) -> tuple[int, int, list[str]]:  # fmt: skip
    """(chapters, read whole, a few that were not): a chapter read by its outline path holds the outline
    sections of every heading found under it, and not the next chapter's."""
    from ingestion_mcp.profiles.ingestion.navigation import section_end

    level = _chapter_level(entries)
    positions = _sections_of(doc, blocks, matched)
    chapters = [i for i, e in enumerate(entries) if e.level == level and i in positions]
    whole, broken = 0, []
    for index in chapters:
        section = doc.sections[positions[index]]
        later = range(index + 1, len(entries))
        stop = next((j for j in later if entries[j].level <= entries[index].level), len(entries))
        inside = {positions[j] for j in range(index + 1, stop) if j in positions}
        read = read_by_path(doc, section.heading_path)
        if isinstance(read, OutlineSection) and read.position == section.position:
            last = section_end(doc, read, True).position
            beyond = positions.get(stop)
            if all(section.position < p <= last for p in inside) and (beyond is None or beyond > last):
                whole += 1
                continue
        broken.append(entries[index].title)
    return len(chapters), whole, broken[:5]


def tally(converted: ConvertResponse, entries: list[Entry], name: str) -> Tally:
    blocks = converted.blocks
    matched = match(blocks, entries)
    headings = sum(b.kind in HEADINGS for b in blocks)
    doc = structure(converted, name)
    paths = path_figures(doc)
    chapters, whole, broken = chapter_reads(doc, blocks, entries, matched)
    # An HTML page's levels are its nesting: h2 under h1 as 2 under 1, wherever the page starts (docling's levels
    # begin at 1); a PDF's bookmark levels are absolute.
    shift = 0
    if matched and all(e.page is None for e in entries):
        shift = min(blocks[b].level or 1 for b in matched.values()) - min(entries[i].level for i in matched)
    level_ok = [i for i, b in matched.items() if blocks[b].level == entries[i].level + shift]
    return Tally(
        reference=len(entries), found=len(matched), level_right=len(level_ok),
        page_right=sum(blocks[b].page == entries[i].page for i, b in matched.items() if entries[i].page),
        at_level_and_page=len(level_ok), headings=headings, false_headings=headings - len(matched),
        sections=paths.sections, duplicate_paths=paths.duplicate_paths, readable=paths.readable,
        chapters=chapters, chapters_whole=whole,
        samples={
            "missed": [e.title for i, e in enumerate(entries) if i not in matched][:5],
            "level_wrong": [(entries[i].title, entries[i].level, blocks[b].level) for i, b in matched.items()
                            if i not in level_ok][:5],
            "false": [b.text for i, b in enumerate(blocks) if b.kind in HEADINGS and i not in matched.values()][:5],
            "unreadable": paths.unreadable, "chapters_not_whole": broken,
        },
    )  # fmt: skip
