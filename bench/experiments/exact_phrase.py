"""The exact-phrase lift on the benchmark sets: nDCG@10 and the "relevant" thresholds per mode, with and without it.

    python -m bench.experiments.exact_phrase --dataset scifact --dataset dbpedia-5k \
        --out bench/experiments/results/exact_phrase.json

Runs the gateway's own search (vector_gateway.search.search: candidates, fusion, the exact-phrase lookup) over a
set already built by bench.experiments.bm25_languages (bench/results/tmp/<set>/milvus.db, collection
<set>_snowball_multi),
each query once with the lift (Fusion's default phrase_floor, EXACT_PHRASE_SCORE) and once without it
(phrase_floor 0: the ranking before issue 38 point 6), in every mode:

- nDCG@10 of top_k=100 folded to documents (as bench.experiments.bm25_languages reports it);
- for each threshold, bench.offtopic's two shares on what a top_k=10 search shows: the off-topic queries whose
  best hit scores below it (they answer nothing) and the relevant documents among the hits that score at or above
  it (kept);
- how many queries had a passage raised as an exact phrase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchHit

from ..data import DATASETS, corpus_id, load, per_dataset_main
from ..metrics import evaluate, fold_to_documents
from ..offtopic import OFF_TOPIC
from ..rankings import TMP, collection_name

MODES = ("hybrid", "semantic", "keyword")
THRESHOLDS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
Search = Callable[[str, str, int, bool], list[SearchHit]]


def _registered(store: Any, copy: str) -> None:
    """bench.experiments.bm25_languages copies a set's chunks into ``copy`` without registry rows, so the search's
    liveness
    check would see none of them live: the original collection's rows are written for the copy (once)."""
    from vector_gateway import names
    from vector_gateway.records import REGISTRY, REGISTRY_FIELDS
    from vector_gateway.where import Eq

    if store.registry_count(Eq("collection", names.collection(copy))):
        return
    original = copy.removesuffix("_snowball_multi")
    rows = store.registry_query(Eq("collection", names.collection(original)), REGISTRY_FIELDS)
    key = lambda row: f"{names.collection(copy)}/{row['doc_id']}"  # noqa: E731 - upsert.registry_key
    store.registry_upsert([{**row, "key": key(row), "collection": names.collection(copy)} for row in rows])
    store.flush(REGISTRY)


def gateway_search(db: Path, collections: list[str]) -> tuple[Search, Callable[[], None]]:
    """search(query, mode, top_k, lifted) through the gateway's search code on a Milvus Lite file, as the service
    runs it (its settings' fusion and candidates), with the exact-phrase lift or without; and a close()."""
    from vector_gateway.embedder import create_embedder
    from vector_gateway.milvus import MilvusStore
    from vector_gateway.search import Query, search
    from vector_gateway.settings import GatewaySettings

    settings = GatewaySettings()
    store, embedder = MilvusStore(str(db)), create_embedder(settings)
    for name in collections:
        store.ensure_loaded(name)
        if name.endswith("_snowball_multi"):
            _registered(store, name)
    fusions = {True: settings.hybrid_fusion, False: replace(settings.hybrid_fusion, phrase_floor=0.0)}
    vectors: dict[str, list[float]] = {}

    def run(query: str, mode: str, top_k: int, lifted: bool) -> list[SearchHit]:
        vector = None
        if mode != "keyword":
            vector = vectors.get(query) or vectors.setdefault(query, embedder.embed_query(query))
        request = Query(mode, vector, query, top_k, None)
        return search(store, collections, request, fusion=fusions[lifted], candidates=settings.fusion_candidates)

    return run, store.close


def _measure(dataset: str) -> dict[str, Any]:
    data = load(DATASETS[dataset])
    collection = f"{collection_name(dataset)}_snowball_multi"
    run, close = gateway_search(TMP / dataset / "milvus.db", [collection])
    report: dict[str, Any] = {"dataset": dataset, "queries": len(data.queries), "collection": collection}
    try:
        for mode in MODES:
            for lifted in (False, True):
                deep = {qid: run(query, mode, 100, lifted) for qid, query in data.queries.items()}
                top = {qid: run(query, mode, 10, lifted) for qid, query in data.queries.items()}
                off = [run(query, mode, 10, lifted) for query in OFF_TOPIC]
                runs = {qid: fold_to_documents(corpus_id(h.source) for h in hits) for qid, hits in deep.items()}
                row: dict[str, Any] = {"ndcg@10": evaluate(runs, data.qrels)["ndcg@10"]}
                row["raised_queries"] = sum(any(h.phrase_score > 0 for h in hits) for hits in deep.values())
                row["raised_off_topic"] = sum(any(h.phrase_score > 0 for h in hits) for hits in off)
                row["thresholds"] = {str(t): _rates(t, top, off, data.qrels) for t in THRESHOLDS}
                report[f"{mode}{'' if lifted else '_before'}"] = row
                print(dataset, mode, "lifted" if lifted else "before", row["ndcg@10"], row["raised_queries"],
                      flush=True)  # fmt: skip
    finally:
        close()
    return report


def _rates(threshold: float, top: dict[str, list[SearchHit]], off: list[list[SearchHit]], qrels: dict) -> dict:
    silent = sum((hits[0].score if hits else 0.0) < threshold for hits in off)
    kept = found = 0
    for qid, hits in top.items():
        best: dict[str, float] = {}
        for hit in hits:
            best.setdefault(corpus_id(hit.source), hit.score)
        for doc, score in best.items():
            if doc in qrels.get(qid, {}):
                found, kept = found + 1, kept + (score >= threshold)
    return {"off_topic_silent": round(silent / len(off), 3), "relevant_kept": round(kept / max(found, 1), 3)}


def main(argv: list[str] | None = None) -> None:
    per_dataset_main("bench.experiments.exact_phrase", __doc__, _measure, argv)


if __name__ == "__main__":
    main()
