"""Milvus Lite's per-segment BM25 statistics, and what counting a term's documents through its API costs (issue 52,
point 3).

    python -m bench.rankings --dataset scifact            # the Lite index of the real pipeline (bench/results/tmp/)
    python -m bench.experiments.lite_bm25_stats           # -> bench/experiments/results/lite_bm25_stats.json

Milvus Lite (3.2.2, pure Python) scores BM25 in each segment with that segment's own document count, average length
and document frequencies (its engine/collection.py says so, "TODO: BM25 IDF accuracy"); a Milvus server merges them
across segments (the delegator's IDF oracle). The gateway could mend Lite's scores by scoring the candidates again
with the collection's statistics, if it could count, for each query term, the chunks that hold it. This measures,
on a copy of the SciFact index (13,195 chunks in the segments the bench wrote):

- how far Lite's scores are from BM25 with the collection's statistics (the same analyzer, k1 1.5, b 0.75, computed
  here from every row's BM25 text): the top hit's relative difference, and the queries whose first 10 differ;
- what a count of each query term costs through the public API, three ways: a search for the term alone, limit
  16,384 (the hits are the chunks that hold it); a `like` filter with `count(*)`; a `TEXT_MATCH` filter with
  `count(*)`. Against the keyword search itself (100 candidates);
- what the gateway's store pays: its keyword ranking with the statistics and with Lite's own scores, a delete of
  one document with the statistics kept (its rows read first and taken out) and without, and the memory the
  statistics hold.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from vector_gateway.milvus.schema import analyzer_params
from vector_gateway.milvus.store import milvus_name

from ..data import DATASETS, corpus_id, load
from ..metrics import evaluate, fold_to_documents
from ..rankings import TMP, collection_name

OUT = Path(__file__).resolve().parent / "results" / "lite_bm25_stats.json"
DELETES = 20  # documents deleted each way (_deletes)
K1, B = 1.5, 0.75  # Lite's defaults; the gateway's index sets none
SEARCH_LIMIT = 16_384


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def _figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 1), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}


class Collection:
    """Every row's BM25 tokens (Lite's own analyzer), and BM25 scored with the collection's statistics."""

    def __init__(self, client: Any, name: str) -> None:
        from milvus_lite.analyzer.factory import create_analyzer

        self.analyzer = create_analyzer(analyzer_params("english"))
        rows: list[dict[str, Any]] = []
        iterator = client.query_iterator(name, filter="", output_fields=["search_text"], batch_size=2000)
        while batch := iterator.next():
            rows.extend(batch)
        self.tokens = {row["chunk_id"]: Counter(self.analyzer.tokenize(row["search_text"])) for row in rows}
        self.df: Counter[str] = Counter()
        for counts in self.tokens.values():
            self.df.update(counts.keys())
        self.n = len(self.tokens)
        self.avgdl = sum(sum(c.values()) for c in self.tokens.values()) / self.n

    def score(self, query: str, chunk_id: str) -> float:
        counts, total = self.tokens[chunk_id], 0.0
        length = sum(counts.values())
        for term, weight in Counter(self.analyzer.tokenize(query)).items():
            if tf := counts.get(term, 0):
                idf = math.log((self.n - self.df[term] + 0.5) / (self.df[term] + 0.5) + 1.0)
                total += weight * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / self.avgdl))
        return total


def measure(dataset: str, queries: int, counted: int) -> dict[str, Any]:
    import pyarrow.parquet
    from pymilvus import MilvusClient
    from vector_gateway import lexical

    source = TMP / dataset / "milvus.db"
    if not source.is_dir():
        raise SystemExit(f"{source} is missing: run `python -m bench.rankings --dataset {dataset}` first.")
    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / "milvus.db"
        shutil.copytree(source, copy)
        files = copy.glob(f"collections/{collection_name(dataset)}/**/data/*.parquet")
        segments = sorted(pyarrow.parquet.ParquetFile(path).metadata.num_rows for path in files)
        client = MilvusClient(str(copy))
        name = milvus_name(collection_name(dataset))
        client.load_collection(name)
        started = time.perf_counter()
        collection = Collection(client, name)
        scan_s = time.perf_counter() - started
        data = load(DATASETS[dataset])
        qids = list(data.queries)[:queries]
        analysed = [lexical.analyze_query(data.queries[qid], "snowball_multi") for qid in qids]
        ranked: dict[str, dict[str, list[str]]] = {"lite": {}, "collection": {}}
        bm25 = {"metric_type": "BM25"}
        differ, first_gap = 0, []
        costs: dict[str, list[float]] = {"search": [], "count by search": [], "like": [], "text_match": []}
        for i, (qid, query) in enumerate(zip(qids, analysed, strict=True)):
            started = time.perf_counter()
            hits = client.search(
                name, data=[query], anns_field="sparse", search_params=bm25, limit=100, output_fields=["source"]
            )[0]
            costs["search"].append(_ms(started))
            doc = {h["chunk_id"]: corpus_id(h["entity"]["source"]) for h in hits}
            lite = [(abs(h["distance"]), h["chunk_id"]) for h in hits]
            exact = sorted(((collection.score(query, h["chunk_id"]), h["chunk_id"]) for h in hits), reverse=True)
            differ += [c for _, c in lite[:10]] != [c for _, c in exact[:10]]
            ranked["lite"][qid] = fold_to_documents(doc[c] for _, c in lite)
            ranked["collection"][qid] = fold_to_documents(doc[c] for _, c in exact)
            if lite:
                first_gap.append(abs(lite[0][0] - collection.score(query, lite[0][1])) / max(lite[0][0], 1e-9))
            if i >= counted:
                continue
            terms = [t for t in dict.fromkeys(collection.analyzer.tokenize(query)) if collection.df[t]]
            started = time.perf_counter()
            found = client.search(name, data=terms, anns_field="sparse", search_params=bm25, limit=SEARCH_LIMIT)
            costs["count by search"].append(_ms(started))
            assert [len(f) for f in found] == [min(collection.df[t], SEARCH_LIMIT) for t in terms]
            for kind, expr in (("like", 'search_text like "%{}%"'), ("text_match", "TEXT_MATCH(search_text, '{}')")):
                started = time.perf_counter()
                for term in terms:
                    client.query(name, filter=expr.format(term), output_fields=["count(*)"])
                costs[kind].append(_ms(started))
        client.close()
        store_costs = _through_the_store(copy, collection_name(dataset), analysed)
    return {
        "dataset": dataset,
        "chunks": collection.n,
        "rows per segment": segments,
        "scan of every row's BM25 text, s": round(scan_s, 2),
        "queries": len(analysed),
        "queries whose first 10 differ from the collection's BM25": differ,
        "keyword nDCG@10, the same 100 candidates": {
            "Lite's scores": evaluate(ranked["lite"], {q: data.qrels[q] for q in qids if q in data.qrels}),
            "the collection's statistics": evaluate(
                ranked["collection"], {q: data.qrels[q] for q in qids if q in data.qrels}
            ),
        },
        "top hit's relative score difference": _figures([100 * g for g in first_gap]) | {"unit": "%"},
        "cost per query, ms": {kind: _figures(values) | {"queries": len(values)} for kind, values in costs.items()},
        "the gateway's keyword ranking (MilvusStore.search, 100 candidates), ms": store_costs,
    }


def _through_the_store(path: Path, name: str, queries: list[str]) -> dict[str, Any]:
    """What scoring Lite's candidates again costs the gateway: its first keyword search (which reads the statistics)
    and each search after, against Lite's own scores (the same store without the statistics), in alternation."""
    from vector_gateway.milvus import MilvusStore

    store = MilvusStore(str(path))
    try:
        kept = store.client and store.lite_bm25
        started = time.perf_counter()
        store.search(name, mode="keyword", vector=None, text=queries[0], limit=100, where=None)
        first = _ms(started)
        times: dict[str, list[float]] = {"collection statistics": [], "Lite's own": []}
        for query in queries:
            for kind, statistics_ in (("collection statistics", kept), ("Lite's own", None)):
                store.lite_bm25 = statistics_
                started = time.perf_counter()
                store.search(name, mode="keyword", vector=None, text=query, limit=100, where=None)
                times[kind].append(_ms(started))
        store.lite_bm25 = kept
        deletes = _deletes(store, name, DELETES) | _held_in_memory(kept, name)
    finally:
        store.close()
    return {"first search": round(first, 1)} | {kind: _figures(values) for kind, values in times.items()} | deletes


def _held_in_memory(kept: Any, name: str) -> dict[str, Any]:
    """What a collection's statistics hold in memory (tracemalloc, the rows read before it starts)."""
    import tracemalloc

    from vector_gateway.milvus import lite_bm25

    rows = [row.get(lite_bm25.SEARCH_TEXT) or "" for row in kept._scan(name)]
    tracemalloc.start()
    try:
        table = lite_bm25.Statistics(0)
        table.add(kept._counts(name, text) for text in rows)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return {"statistics in memory": {"rows": table.rows, "terms": len(table.df), "MB": round(held / 2**20, 1)}}


def _deletes(store: Any, name: str, documents: int) -> dict[str, Any]:
    """What a delete costs when the statistics are kept (its rows read first, then taken out) against a delete
    alone, one document at a time (a SciFact abstract: one to three chunks): ``documents`` of each, the kept ones
    first; and whether the statistics kept through them equal a scan's."""
    from vector_gateway.milvus import lite_bm25
    from vector_gateway.where import Eq

    kept = store.lite_bm25
    rows = store.query(name, None, ["source"], limit=8 * documents)
    sources = list(dict.fromkeys(row["source"] for row in rows))[: 2 * documents]
    times: dict[str, list[float]] = {"delete, statistics kept": [], "delete alone": []}
    for i, source in enumerate(sources):
        kind = "delete, statistics kept" if i < documents else "delete alone"
        if i == documents:  # the statistics kept through the deletes, against a scan of what is left
            table = kept._tables[name]
            scanned = lite_bm25.Statistics(0)
            scanned.add(kept._counts(name, row.get(lite_bm25.SEARCH_TEXT) or "") for row in kept._scan(name))
            same = (table.rows, table.length, +table.df) == (scanned.rows, scanned.length, +scanned.df)
            store.lite_bm25 = None
        started = time.perf_counter()
        store.delete(name, Eq("source", source))
        times[kind].append(_ms(started))
    store.lite_bm25 = kept
    kept.changed(name)  # deletes it did not see
    return {
        "delete of one document, ms": {kind: _figures(values) for kind, values in times.items()},
        "statistics kept through the deletes equal a scan's": same,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.lite_bm25_stats", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    parser.add_argument("--queries", type=int, default=300, help="queries compared (the test split's first N)")
    parser.add_argument("--counted", type=int, default=20, help="of those, the queries whose terms are counted")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    report = measure(args.dataset, args.queries, args.counted)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
