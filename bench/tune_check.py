"""Does bench.tune rank as the gateway does? Its offline default against the engine's own lists (bench.rankings).

For each set's test queries: nDCG@10 of the default variant computed offline (exact dense scan, BM25 in numpy)
and of the gateway's Fusion over the lists Milvus returned; how far the offline BM25 score of each chunk the engine
listed is from the engine's own; and how many of each dense top 10 the exact scan finds too.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from .data import DATASETS, load
from .metrics import evaluate
from .sweep import load_lists, query_variants
from .tune_rank import Cached, Variant


def check(datasets: tuple[str, ...] = ("scifact", "dbpedia-5k")) -> dict[str, Any]:
    out = {}
    for dataset in datasets:
        data, cached = load(DATASETS[dataset]), Cached(dataset)
        lists = load_lists(dataset)
        gateway = query_variants()["default (the gateway's Fusion().for_query)"]
        engine = evaluate({q: gateway(lists[q], data.queries[q]) for q in lists}, data.qrels)
        offline = evaluate(cached.run(Variant(), "test").ranked, data.qrels)
        out[dataset] = {"engine lists + Fusion": engine, "offline": offline, **_agreement(cached, data.queries, lists)}
    return out


def _agreement(cached: Cached, queries: dict[str, str], lists: dict[str, Any]) -> dict[str, float]:
    position = {chunk: i for i, chunk in enumerate(cached.chunks["chunk_id"])}
    bm25 = cached.bm25(Variant())
    ratios, overlaps = [], []
    for qid, per_query in lists.items():
        row = cached.row[queries[qid]]
        for _, chunk, raw in per_query["bm25"][:10]:
            if raw > 0 and chunk in position:
                ratios.append(float(bm25[row, position[chunk]]) / raw)
        top = {cached.chunks["chunk_id"][i] for i in np.argsort(-cached.cosines[row])[:10]}
        overlaps.append(len(top & {chunk for _, chunk, _ in per_query["dense"][:10]}) / 10)
    return {
        "bm25 offline / engine, median": round(statistics.median(ratios), 4),
        "bm25 offline / engine, p5-p95": [round(float(np.percentile(ratios, p)), 4) for p in (5, 95)],
        "dense top-10 overlap, exact scan vs engine": round(statistics.mean(overlaps), 4),
    }
