"""Search one or more collections; only chunks of a document's live version come back.

Scores are 0..1, higher is better:
- semantic: cosine similarity of the query and passage embeddings (negative values clamp to 0);
- hybrid: the fused score (fusion.py): by default 0.5 x min-max(cosine) + 0.5 x min-max(BM25) over the
  candidates of both lists, so 1.0 = best in both;
- keyword: BM25 score divided by the best BM25 score among this search's hits (the best hit
  scores 1.0). BM25 scores have no fixed scale, so keyword scores rank hits within one search
  and are not comparable across queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingestion_contracts.gateway import SearchHit

from . import lexical
from .fusion import Fusion
from .schema import REGISTRY
from .store import MAX_TOPK, MilvusStore
from .upsert import registry_key

GROWTH = 4  # how much wider a re-query looks when stale versions crowded the first answer
CANDIDATE_FIELDS = ["doc_id", "version"]  # all that fusion and the liveness check read


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
    # Only what liveness needs: every search pays for this lookup.
    rows = store.registry_get([registry_key(collection, d) for d in sorted(doc_ids)], ["key", "doc_id", "version"])
    return {row["doc_id"]: row["version"] for row in rows.values()}


def _ranked(
    store: MilvusStore,
    collection: str,
    *,
    mode: str,
    vector: list[float] | None,
    text: str,
    limit: int,
    expr: str,
    fusion: Fusion,
) -> tuple[list[ScoredHit], bool]:
    """One collection's ranking as Milvus has it (versions not yet checked), and whether it is complete.

    Hybrid: the dense and the BM25 ranking, ``limit`` deep with only the fields fusion and liveness read,
    fused. Complete: every ranking came back shorter than ``limit``, so a wider one would find nothing more."""
    if mode != "hybrid":
        hits = store.search(collection, mode=mode, vector=vector, text=text, limit=limit, expr=expr)
        return [ScoredHit(s, collection, e) for s, e in hits], len(hits) < limit
    dense, sparse = (
        store.search(collection, mode=m, vector=vector, text=text, limit=limit, expr=expr, fields=CANDIDATE_FIELDS)
        for m in ("semantic", "keyword")
    )
    entities = {e["chunk_id"]: e for _, e in (*dense, *sparse)}
    fused = fusion.fuse([(e["chunk_id"], s) for s, e in dense], [(e["chunk_id"], s) for s, e in sparse])
    return [ScoredHit(score, collection, entities[key]) for key, score in fused], max(len(dense), len(sparse)) < limit


def _live_top(
    store: MilvusStore, collection: str, ranked: list[ScoredHit], top_k: int, *, fetch: bool
) -> list[ScoredHit]:
    """The first ``top_k`` hits of ``ranked`` whose version the registry names (with all their fields if ``fetch``).

    The registry is asked about the documents of the first ``top_k`` hits only, the rest of the ranking
    only when some of those were stale: a search pays for a lookup of the hits it returns, not of every
    candidate. Chunks deleted since the ranking (a replace that just finished) are skipped too."""
    kept: list[ScoredHit] = []
    live: dict[str, str | None] = {}
    position = 0
    while len(kept) < top_k and position < len(ranked):
        window = ranked[position : position + top_k] if position == 0 else ranked[position:]
        position += len(window)
        unknown = {h.entity["doc_id"] for h in window} - live.keys()
        live.update(dict.fromkeys(unknown, None) | live_versions(store, collection, unknown))
        fresh = [h for h in window if live[h.entity["doc_id"]] == h.entity["version"]][: top_k - len(kept)]
        kept += _with_fields(store, collection, fresh) if fetch else fresh
    return kept


def _with_fields(store: MilvusStore, collection: str, hits: list[ScoredHit]) -> list[ScoredHit]:
    rows = store.fetch(collection, [h.entity["chunk_id"] for h in hits])
    return [ScoredHit(h.raw, collection, rows[h.entity["chunk_id"]]) for h in hits if h.entity["chunk_id"] in rows]


def search_collection(
    store: MilvusStore,
    collection: str,
    *,
    mode: str,
    vector: list[float] | None,
    text: str,
    top_k: int,
    expr: str,
    fusion: Fusion,
    candidates: int,
) -> list[ScoredHit]:
    """Top ``top_k`` live hits of one collection (re-queries wider when stale versions crowded the ranking).

    Hybrid fuses the rankings as Milvus returns them, ``candidates`` deep, then keeps the best hits whose
    version is committed and fetches their full fields in one query."""
    text = lexical.analyze(text, store.analysis_of(collection)) or text
    limit = max(top_k, candidates) if mode == "hybrid" else top_k
    while True:
        ranked, complete = _ranked(
            store, collection, mode=mode, vector=vector, text=text, limit=limit, expr=expr, fusion=fusion
        )
        kept = _live_top(store, collection, ranked, top_k, fetch=mode == "hybrid")
        if len(kept) >= top_k or complete or limit >= MAX_TOPK:
            return kept
        limit = min(limit * GROWTH, MAX_TOPK)


def normalize(mode: str, hits: list[ScoredHit]) -> list[float]:
    if mode in ("semantic", "hybrid"):  # cosine, or already fused to 0..1
        return [h.raw for h in hits]
    top = max((h.raw for h in hits), default=0.0)
    return [h.raw / top if top > 0 else 0.0 for h in hits]


def merge(mode: str, per_collection: list[list[ScoredHit]], *, top_k: int, min_score: float | None) -> list[SearchHit]:
    hits = [h for group in per_collection for h in group]
    scores = normalize(mode, hits)
    ranked = sorted(zip(scores, hits, strict=True), key=lambda pair: pair[0], reverse=True)
    threshold = min_score if min_score is not None else float("-inf")
    return [hit_from_entity(h.collection, h.entity, s) for s, h in ranked if s >= threshold][:top_k]


def chunk_total(store: MilvusStore, collections: list[str]) -> int:
    return sum(store.count(name) for name in collections if name != REGISTRY)
