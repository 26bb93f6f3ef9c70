"""A PDF's page furniture (running heads, feet, page numbers: kept out of its Markdown by the converter) handed to
the chunks that hold its pages, so that the gateway keeps it with them and shows it with the page's text."""

from __future__ import annotations

from collections.abc import Sequence

from ingestion_contracts.chunker import Chunk
from ingestion_contracts.gateway import MAX_CHUNK_FURNITURE
from ingestion_contracts.regions import Furniture


def furniture_by_chunk(chunks: Sequence[Chunk], furniture: Sequence[Furniture]) -> dict[int, list[Furniture]]:
    """Each furniture line on the first chunk whose pages hold its page, else (a page with nothing but furniture)
    on the last chunk before it, else on the first chunk; at most ``MAX_CHUNK_FURNITURE`` a chunk."""
    paged = [chunk for chunk in chunks if chunk.page is not None]
    out: dict[int, list[Furniture]] = {}
    if not paged:
        return out
    for line in furniture:
        holder = next((c for c in paged if c.page is not None and c.page <= line.page <= (c.page_end or c.page)), None)
        if holder is None:
            before = [c for c in paged if c.page is not None and c.page <= line.page]
            holder = before[-1] if before else paged[0]
        kept = out.setdefault(holder.index, [])
        if len(kept) < MAX_CHUNK_FURNITURE:
            kept.append(line)
    return out
