"""Search one or more collections as one: candidates from every collection are fused once, on one scale.

Scores are in [0, 1], higher is better, and mean the same for every query and every collection
(calibration.py; fitted once with the bundled model, bench/TUNING.md):
- semantic: the calibrated cosine of query and passage;
- keyword: the calibrated BM25 score (saturating: bm25 / (bm25 + 40));
- hybrid: alpha x semantic + (1 - alpha) x keyword (fusion.py): alpha 0.3 (tuned without the test queries:
  bench.tune).
min_score applies to that score; calibration.RELEVANT is the documented threshold for "relevant".
Only chunks of a document's live (committed) version come back.

Exact phrases (every mode): a query of 4+ words (lexical.phrase) is also looked for word for word among the
PHRASE_DEPTH best BM25 candidates (a passage that holds all its words in order ranks high there). A passage that
holds it is raised to EXACT_PHRASE_SCORE or more (Fusion.exact), so a sentence copied from a document finds its
passage first and scores "relevant" in every mode; it joins the answer even where its meaning alone (semantic
mode) did not rank it among the candidates.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

from ingestion_contracts.gateway import SearchHit

from . import lexical
from .calibration import dense_score, keyword_scale
from .fusion import Fused, Fusion
from .grouping import GROUP_DEPTH, document, grouped
from .hits import SCORE_DIGITS, hit_from_entity
from .index import MAX_TOPK, DocumentIndex
from .records import REGISTRY
from .upsert import registry_key
from .where import And, In, Where

GROWTH = 4  # how much wider a re-query looks when stale versions crowded the first answer
CANDIDATE_FIELDS = ["doc_id", "version"]  # all that fusion and the liveness check read
PHRASE_DEPTH = 50  # BM25 candidates read for an exact phrase (the text of each: a few ms)
PHRASE_FIELDS = [*CANDIDATE_FIELDS, "text", "title", "heading_path"]


@dataclass
class ScoredHit:
    fused: Fused
    collection: str
    entity: dict[str, Any]


@dataclass(frozen=True)
class Query:
    mode: str
    vector: list[float] | None
    text: str
    top_k: int
    where: Where | None
    min_score: float | None = None
    exact_phrase: bool = True  # look for the query word for word (SearchRequest.exact_phrase)
    group_by_document: bool = False  # top_k counts documents (SearchRequest.group_by_document)
    per_document: int = 1


def relevant(fused: Fused) -> bool:
    """Whether a hit scores above 0 in some part, as its answer shows the parts (SCORE_DIGITS)."""
    return any(round(part, SCORE_DIGITS) > 0 for part in (fused.dense, fused.keyword, fused.phrase))


def live_versions(store: DocumentIndex, collection: str, doc_ids: set[str]) -> dict[str, str]:
    # Only what liveness needs: every search pays for this lookup.
    rows = store.registry_get([registry_key(collection, d) for d in sorted(doc_ids)], ["key", "doc_id", "version"])
    return {row["doc_id"]: row["version"] for row in rows.values()}


T = TypeVar("T")
Candidates = list[tuple[float, str, dict[str, Any]]]  # (raw score, collection, entity), best first
_PARALLEL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="search")  # a BM25 ranking, an early fetch


def _in_parallel(function: Callable[..., T], *args: Any) -> Future[T]:
    """``function(*args)`` on the search pool, in this call's context (its request id reaches the logs)."""
    return _PARALLEL.submit(contextvars.copy_context().run, function, *args)


def _candidates(
    store: DocumentIndex,
    names: list[str],
    query: Query,
    kind: str,
    limit: int,
    fields: list[str] | None,
    counts: Callable[[str], int] | None = None,
) -> tuple[Candidates, bool]:
    """One ranking (dense or BM25) over every collection, merged by raw score and cut at ``limit``, as one
    collection holding all the chunks would return it; complete: no collection had more to give."""
    merged: Candidates = []
    complete = True
    for name in names:
        text = lexical.analyze_query(query.text, store.analysis_of(name)) or query.text
        hits = store.search(
            name, mode=kind, vector=query.vector, text=text, limit=limit, where=query.where, fields=fields
        )
        # BM25 in a small collection: its IDF is brought to what it is in a larger one (calibration.keyword_scale).
        scale = keyword_scale((counts or store.count)(name)) if kind == "keyword" and hits else 1.0
        merged += [(score * scale, name, entity) for score, entity in hits]
        complete = complete and len(hits) < limit
    merged.sort(key=lambda item: item[0], reverse=True)
    return merged[:limit], complete


def _cut(ranking: tuple[Candidates, bool], limit: int) -> tuple[Candidates, bool]:
    """The first ``limit`` of a deeper ranking, as ``_candidates`` would have returned them."""
    candidates, complete = ranking
    return candidates[:limit], complete and len(candidates) <= limit


def _ranked(
    store: DocumentIndex,
    names: list[str],
    query: Query,
    fusion: Fusion,
    limit: int,
    counts: Callable[[str], int] | None = None,
) -> tuple[list[ScoredHit], bool, bool]:
    """The fused ranking over every collection (versions not yet checked), whether it is complete (a wider one
    could add nothing: every list ran out, or nothing deeper can reach ``min_score``), and whether it holds hits
    with only the fields an exact-phrase lookup read (to fetch before answering)."""
    kinds = {"hybrid": ("semantic", "keyword"), "semantic": ("semantic",), "keyword": ("keyword",)}[query.mode]
    fields = CANDIDATE_FIELDS if query.mode == "hybrid" else None
    exact = fusion.phrase_floor > 0 and query.exact_phrase
    phrase = lexical.phrase(query.text) if exact else None
    words = lexical.exact_words(query.text) if exact and "keyword" in kinds else None
    # An exact phrase (or a short query's words as written) is looked for in a deeper BM25 ranking, with each chunk's
    # text; where the mode ranks by BM25, its first `limit` are that mode's keyword list (one query, not two; keyword
    # mode then fetches the fields of the hits it answers with, as hybrid does).
    looking = phrase is not None or words is not None
    depth, reused = max(limit, PHRASE_DEPTH), looking and "keyword" in kinds
    look = _in_parallel(_candidates, store, names, query, "keyword", depth, PHRASE_FIELDS, counts) if looking else None
    lists: dict[str, tuple[Candidates, bool]] = {}
    if len(kinds) == 2 and not reused:  # both rankings at once (an engine that releases the GIL runs them alike)
        keyword = _in_parallel(_candidates, store, names, query, "keyword", limit, fields, counts)
        lists = {"semantic": _candidates(store, names, query, "semantic", limit, fields), "keyword": keyword.result()}
    else:
        lists = {kind: _candidates(store, names, query, kind, limit, fields, counts) for kind in kinds if not reused
                 or kind != "keyword"}  # fmt: skip
    lookup = look.result() if look is not None else ([], True)
    if reused:
        lists["keyword"] = _cut(lookup, limit)
    entities: dict[Hashable, tuple[str, dict[str, Any]]] = {}
    keyed: dict[str, list[tuple[Hashable, float]]] = {}
    for kind, (candidates, _) in lists.items():
        keyed[kind] = [((name, e["chunk_id"]), raw) for raw, name, e in candidates]
        entities.update({(name, e["chunk_id"]): (name, e) for _, name, e in candidates})
    if query.mode == "hybrid":
        fused = fusion.fuse(keyed["semantic"], keyed["keyword"])
    else:
        fused = fusion.single(keyed[query.mode], "dense" if query.mode == "semantic" else "keyword")
    partial = reused  # the keyword list came with the lookup's fields only
    if looking:
        fused, joined = _exact(store, query, fusion, fused, entities, lookup[0], phrase, words)
        partial = partial or joined
    # A hit scored 0 in every part (a dense candidate below the calibration's floor, in no keyword list) is no
    # result: it says nothing and costs the caller tokens. Nothing deeper can score more than `deeper`.
    ranked = [ScoredHit(f, *entities[key]) for key, f in fused if relevant(f)]
    complete = all(done for _, done in lists.values())
    lowest = {kind: (c[-1][0] if c else None) for kind, (c, _) in lists.items()}
    deeper = fusion.ceiling(lowest.get("semantic"), lowest.get("keyword"))
    if query.min_score is not None:
        ranked = [h for h in ranked if h.fused.score >= query.min_score]
        complete = complete or deeper < query.min_score
    return ranked, complete or round(deeper, SCORE_DIGITS) <= 0, partial


def _exact(
    store: DocumentIndex,
    query: Query,
    fusion: Fusion,
    fused: list[tuple[Hashable, Fused]],
    entities: dict[Hashable, tuple[str, dict[str, Any]]],
    lookup: Candidates,
    phrase: str | None,
    words: frozenset[str] | None = None,
) -> tuple[list[tuple[Hashable, Fused]], bool]:
    """``fused`` with every passage that holds ``phrase``, or each of ``words`` as written (a BM25 candidate: its
    title, headings or text), raised (Fusion.exact) and ranked again. Such a passage
    missing from a list the mode ranks by gets its part from its own score: BM25 from the deeper lookup, the
    cosine from a dense search of those passages alone; one found by the lookup alone joins the ranking. Also:
    whether one joined with the lookup's fields only."""
    found: dict[Hashable, tuple[int, float, str, dict[str, Any]]] = {
        (name, e["chunk_id"]): (rank, raw, name, e) for rank, (raw, name, e) in enumerate(lookup, 1)
    }
    texts = {key: e["text"] for key, (_, _, _, e) in found.items()}
    texts.update({key: e["text"] for key, (_, e) in entities.items() if "text" in e})
    holding = {key for key, text in texts.items() if phrase is not None and phrase in lexical.phrase_text(text)}
    if words is not None:
        holding |= {key for key, (_, _, _, e) in found.items()
                    if lexical.holds_words(words, e["title"], *(e.get("heading_path") or []), e["text"])}  # fmt: skip
    if not holding:
        return fused, False
    parts = dict(fused)
    joined = holding - parts.keys()
    for key in sorted(joined, key=lambda k: found[k][0]):
        parts[key] = Fused(0.0, 0.0)
        entities[key] = found[key][2:]
    hybrid = query.mode == "hybrid"
    unranked = [key for key in holding if parts[key].dense_rank is None] if query.mode != "keyword" else []
    cosines = _cosines(store, query, unranked)
    for key in holding:
        hit = parts[key]
        if key in cosines:
            hit = replace(hit, dense=fusion.part("dense", cosines[key], hybrid))
        if query.mode != "semantic" and hit.keyword_rank is None and key in found:
            rank, raw, _, _ = found[key]
            hit = replace(hit, keyword=fusion.part("keyword", raw, hybrid), keyword_rank=rank)
        parts[key] = fusion.exact(hit)
    # A tie (scores clipped at 1) goes to the passage that holds the phrase.
    ranking = sorted(parts.items(), key=lambda item: (min(item[1].score, 1.0), item[0] in holding), reverse=True)
    return ranking, bool(joined)


def _cosines(store: DocumentIndex, query: Query, keys: list[Hashable]) -> dict[Hashable, float]:
    """The query's cosine with each of these chunks ((collection, chunk id)): a dense search of them alone."""
    by_name: dict[str, list[str]] = {}
    for key in keys:
        name, chunk_id = cast(tuple[str, str], key)  # a ranking's keys are (collection, chunk id)
        by_name.setdefault(name, []).append(chunk_id)
    out: dict[Hashable, float] = {}
    for name, ids in by_name.items():
        only: Where = In("chunk_id", tuple(ids))
        where = only if query.where is None else And((query.where, only))
        hits = store.search(name, mode="semantic", vector=query.vector, text="", limit=len(ids), where=where,
                            fields=CANDIDATE_FIELDS)  # fmt: skip
        out.update({(name, entity["chunk_id"]): raw for raw, entity in hits})
    return out


def meanings(store: DocumentIndex, hits: list[SearchHit], vector: list[float], where: Where | None) -> list[float]:
    """The calibrated cosine of each of ``hits``' chunks with ``vector`` (a dense search of those chunks alone; 0 for
    a chunk gone meanwhile): what semantic mode would score them. relevance.off_topic judges a keyword or hybrid answer
    by it, with the query's vector or one of its words'."""
    keys: list[Hashable] = [(hit.collection, hit.chunk_id) for hit in hits]
    cosines = _cosines(store, Query("semantic", vector, "", len(keys), where), keys)
    return [dense_score(cosines[key]) if key in cosines else 0.0 for key in keys]


def _live_top(store: DocumentIndex, ranked: list[ScoredHit], top_k: int, *, fetch: bool) -> list[ScoredHit]:
    """The first ``top_k`` hits of ``ranked`` whose version the registry names (with all their fields if ``fetch``).

    The registry is asked about the documents of the first ``top_k`` hits only, the rest of the ranking
    only when some of those were stale: a search pays for a lookup of the hits it returns, not of every
    candidate. Chunks deleted since the ranking (a replace that just finished) are skipped too."""
    kept: list[ScoredHit] = []
    live: dict[tuple[str, str], str | None] = {}

    def is_live(h: ScoredHit) -> bool:
        return live[(h.collection, h.entity["doc_id"])] == h.entity["version"]

    position = 0
    while len(kept) < top_k and position < len(ranked):
        window = ranked[position : position + top_k] if position == 0 else ranked[position:]
        position += len(window)
        # The first window's fields are fetched while its versions are checked (almost always all live).
        early = _in_parallel(_with_fields, store, window) if fetch and position == len(window) else None
        for collection in dict.fromkeys(h.collection for h in window):
            unknown = {h.entity["doc_id"] for h in window if h.collection == collection} - {
                d for c, d in live if c == collection
            }
            found = live_versions(store, collection, unknown)
            live.update({(collection, d): found.get(d) for d in unknown})
        if early is not None:
            fresh = [h for h in early.result() if is_live(h)][: top_k - len(kept)]
            kept += fresh
            continue
        fresh = [h for h in window if is_live(h)][: top_k - len(kept)]
        kept += _with_fields(store, fresh) if fetch else fresh
    return kept


def _with_fields(store: DocumentIndex, hits: list[ScoredHit]) -> list[ScoredHit]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for collection in dict.fromkeys(h.collection for h in hits):
        fetched = store.fetch(collection, [h.entity["chunk_id"] for h in hits if h.collection == collection])
        rows.update({(collection, key): row for key, row in fetched.items()})
    return [ScoredHit(h.fused, h.collection, rows[(h.collection, h.entity["chunk_id"])]) for h in hits
            if (h.collection, h.entity["chunk_id"]) in rows]  # fmt: skip


def search(
    store: DocumentIndex,
    names: list[str],
    query: Query,
    *,
    fusion: Fusion,
    candidates: int,
    counts: Callable[[str], int] | None = None,
) -> list[SearchHit]:
    """Top ``top_k`` live hits over ``names`` (re-queries wider when stale versions crowded the ranking).

    Hybrid fuses the rankings as Milvus returns them, ``candidates`` deep, then keeps the best hits whose
    version is committed and fetches their full fields in one query per collection. Grouped by document, top_k
    counts documents, ranked by their best passage, from GROUP_DEPTH candidates per document asked for."""
    limit = max(query.top_k, candidates) if query.mode == "hybrid" else query.top_k
    if query.group_by_document:
        limit = max(limit, query.top_k * GROUP_DEPTH)
    fusion = fusion.for_query(query.text)
    while True:
        ranked, complete, partial = _ranked(store, names, query, fusion, limit, counts)
        more: dict[Hashable, int] = {}
        wanted = query.top_k
        if query.group_by_document:
            ranked, more = grouped(ranked, query.top_k, query.per_document, _document)
            wanted = len(ranked)
        kept = _live_top(store, ranked, wanted, fetch=query.mode == "hybrid" or partial)
        found = len({_document(h) for h in kept}) if query.group_by_document else len(kept)
        if found >= query.top_k or complete or limit >= MAX_TOPK:
            hits = [hit_from_entity(h.collection, h.entity, h.fused, query.text) for h in kept]
            if query.group_by_document:
                hits = [h.model_copy(update={"more_in_document": more[(h.collection, h.doc_id)]}) for h in hits]
            return hits
        limit = min(limit * GROWTH, MAX_TOPK)


def _document(hit: ScoredHit) -> tuple[str, str]:
    return document(hit.collection, hit.entity)


def chunk_total(store: DocumentIndex, collections: list[str]) -> int:
    return sum(store.count(name) for name in collections if name != REGISTRY)
