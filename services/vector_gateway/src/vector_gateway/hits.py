"""A stored chunk row as a search hit (or a chunk listing's row): its fields, the page it cites, its score's parts."""

from __future__ import annotations

from typing import Any

from ingestion_contracts.gateway import SearchHit

from .boxes import stored_boxes, stored_sizes, stored_units
from .citations import cited_page, stored_page_starts
from .cited import cited_sentences
from .fusion import Fused
from .heading_levels import stored_heading_levels
from .upsert import split_metadata

SCORE_DIGITS = 6  # a hit's score and its parts are rounded to this many decimals


def hit_from_entity(collection: str, entity: dict[str, Any], fused: Fused, query: str = "") -> SearchHit:
    """A row as a hit; ``query`` (none for a chunk listing) picks the page it cites (citations.py)."""
    metadata, ingest = split_metadata(entity.get("metadata"), entity["source"])  # identity kept apart (upsert.py)
    starts = stored_page_starts(entity.get("metadata"))
    return SearchHit(
        chunk_id=entity["chunk_id"],
        doc_id=entity["doc_id"],
        collection=collection,
        source=entity["source"],
        key=ingest["key"],
        title=entity["title"],
        file_type=entity["file_type"],
        page=entity["page"] or None,
        page_end=entity["page_end"] or None,
        cited_page=cited_page(entity["text"], starts, query, entity["page"] or None),
        heading_path=list(entity.get("heading_path") or []),
        heading_levels=stored_heading_levels(entity.get("metadata"), entity.get("heading_path") or []),
        chunk_index=entity["chunk_index"],
        text=entity["text"],
        start=entity["start"],
        end=entity["end"],
        token_count=entity["token_count"],
        score=round(min(max(fused.score, 0.0), 1.0), SCORE_DIGITS),
        dense_score=round(fused.dense, SCORE_DIGITS),
        keyword_score=round(fused.keyword, SCORE_DIGITS),
        phrase_score=round(fused.phrase, SCORE_DIGITS),
        dense_rank=fused.dense_rank,
        keyword_rank=fused.keyword_rank,
        tags=list(entity.get("tags") or []),
        metadata=metadata,
        last_modified=entity["last_modified"],
        boxes=stored_boxes(entity.get("metadata")),
        units=stored_units(entity.get("metadata")),
        page_sizes=stored_sizes(entity.get("metadata")),
        cited=cited_sentences(entity["text"], query) if query else None,
    )
