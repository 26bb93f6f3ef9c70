"""Search one or more collections; only chunks of a document's live version come back.

Scores are 0..1, higher is better:
- semantic: cosine similarity of the query and passage embeddings (negative values clamp to 0);
- hybrid: Milvus RRF score divided by its maximum 2 / (k + 1), so 1.0 = first in both rankings;
- keyword: BM25 score divided by the best BM25 score among this search's hits (the best hit
  scores 1.0). BM25 scores have no fixed scale, so keyword scores rank hits within one search
  and are not comparable across queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingestion_contracts.gateway import SearchHit

from .schema import REGISTRY
from .store import MAX_TOPK, MilvusStore
from .upsert import registry_key

GROWTH = 4  # how much wider a re-query looks when stale versions crowded the first answer


@dataclass
class ScoredHit:
    raw: float
    collection: str
    entity: dict[str, Any]


def hit_from_entity(collection: str, entity: dict[str, Any], score: float) -> SearchHit:
    return SearchHit(
        chunk_id=entity["chunk_id"],
        doc_id=entity["doc_id"],
        collection=collection,
        source=entity["source"],
        title=entity["title"],
        file_type=entity["file_type"],
        page=entity["page"] or None,
        page_end=entity["page_end"] or None,
        heading_path=list(entity.get("heading_path") or []),
        chunk_index=entity["chunk_index"],
        text=entity["text"],
        start=entity["start"],
        end=entity["end"],
        token_count=entity["token_count"],
        score=round(min(max(score, 0.0), 1.0), 6),
        tags=list(entity.get("tags") or []),
        metadata=dict(entity.get("metadata") or {}),
        last_modified=entity["last_modified"],
    )


def live_versions(store: MilvusStore, collection: str, doc_ids: set[str]) -> dict[str, str]:
    rows = store.registry_get([registry_key(collection, d) for d in sorted(doc_ids)])
    return {row["doc_id"]: row["version"] for row in rows.values()}


def search_collection(
    store: MilvusStore,
    collection: str,
    *,
    mode: str,
    vector: list[float] | None,
    text: str,
    top_k: int,
    expr: str,
    rrf_k: int,
) -> list[ScoredHit]:
    """Top ``top_k`` live hits of one collection (re-queries wider when stale rows were dropped)."""
    limit = top_k
    while True:
        raw = store.search(collection, mode=mode, vector=vector, text=text, limit=limit, expr=expr, rrf_k=rrf_k)
        live = live_versions(store, collection, {entity["doc_id"] for _, entity in raw})
        kept = [ScoredHit(s, collection, e) for s, e in raw if live.get(e["doc_id"]) == e["version"]]
        if len(kept) >= top_k or len(raw) < limit or limit >= MAX_TOPK:
            return kept[:top_k]
        limit = min(limit * GROWTH, MAX_TOPK)


def normalize(mode: str, hits: list[ScoredHit], rrf_k: int) -> list[float]:
    if mode == "semantic":
        return [h.raw for h in hits]
    if mode == "hybrid":
        best = 2.0 / (rrf_k + 1)
        return [h.raw / best for h in hits]
    top = max((h.raw for h in hits), default=0.0)
    return [h.raw / top if top > 0 else 0.0 for h in hits]


def merge(
    mode: str, per_collection: list[list[ScoredHit]], *, top_k: int, rrf_k: int, min_score: float | None
) -> list[SearchHit]:
    hits = [h for group in per_collection for h in group]
    scores = normalize(mode, hits, rrf_k)
    ranked = sorted(zip(scores, hits, strict=True), key=lambda pair: pair[0], reverse=True)
    threshold = min_score if min_score is not None else float("-inf")
    return [hit_from_entity(h.collection, h.entity, s) for s, h in ranked if s >= threshold][:top_k]


def chunk_total(store: MilvusStore, collections: list[str]) -> int:
    return sum(store.count(name) for name in collections if name != REGISTRY)
