"""Ingest a benchmark once and keep each query's dense and BM25 candidate lists (raw scores), for offline sweeps.

    python -m bench.rankings --dataset scifact       # -> bench/results/tmp/lists-scifact.json
    python -m bench.rankings --dataset dbpedia-5k

The corpus goes through the real pipeline (chunker preset ``default``, the bundled model, the embedded index) into
bench/results/tmp/<dataset>/ (reused when it is there). Each query's lists hold (corpus id, chunk id,
raw score) 100 deep: cosine for dense, Milvus BM25 for keyword. bench.sweep scores fusion variants on them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from .data import DATASETS, corpus_id, load

TMP = Path(__file__).resolve().parent / "results" / "tmp"
DEPTH = 100


def collection_name(dataset: str) -> str:
    return dataset.replace("-", "_")


def ranked_lists(store: Any, embedder: Any, collection: str, queries: dict[str, str]) -> dict[str, Any]:
    from vector_gateway import lexical

    analysis = store.analysis_of(collection)
    out = {}
    for qid, query in queries.items():
        vector = embedder.embed_query(query)
        dense = store.search(collection, mode="semantic", vector=vector, text="", limit=DEPTH, where=None)
        text = lexical.analyze_query(query, analysis) or query
        sparse = store.search(collection, mode="keyword", vector=None, text=text, limit=DEPTH, where=None)
        out[qid] = {
            name: [(corpus_id(e["source"]), e["chunk_id"], score) for score, e in hits]
            for name, hits in (("dense", dense), ("bm25", sparse))
        }
    return out


async def build(dataset: str) -> Path:
    from .pipeline import ingest, open_stack

    data = load(DATASETS[dataset])
    work = TMP / dataset
    async with open_stack(work) as stack:
        names = {c.name for c in (await stack.backend.list_collections()).collections}
        if collection_name(dataset) not in names:
            progress = lambda done, total: print(done, total, flush=True)  # noqa: E731
            corpus = await ingest(stack, data.docs, collection=collection_name(dataset), on_batch=progress)
            print({k: v for k, v in corpus.items() if k != "skipped"}, len(corpus["skipped"]), "skipped", flush=True)
    return work


def open_index(work: Path) -> Any:
    """The index the embedded server keeps in ``work`` (its data folder), opened as the server opens it: Lance,
    or the Milvus Lite index an earlier version wrote there (vector_gateway.engines)."""
    from vector_gateway.main import open_store
    from vector_gateway.settings import GatewaySettings

    return open_store(GatewaySettings(milvus_uri=str(work / "milvus.db"), lance_uri=str(work / "lance")))


def dump(dataset: str, queries: dict[str, str] | None = None, out: Path | None = None) -> Path:
    from vector_gateway.embedder import create_embedder
    from vector_gateway.settings import GatewaySettings

    from .pipeline import environment

    work = asyncio.run(build(dataset))
    data = load(DATASETS[dataset])
    store = open_index(work)
    # The queries at the index's precision (bench.pipeline pins fp32): the default (int8 on a CPU that runs it well)
    # would put int8 query vectors against fp32 passages and move every cosine a little.
    with environment(VECTOR_GATEWAY_EMBEDDING_PRECISION="fp32"):
        embedder = create_embedder(GatewaySettings())
    lists = ranked_lists(store, embedder, collection_name(dataset), queries or data.queries)
    path = out or TMP / f"lists-{dataset}.json"
    path.write_text(json.dumps(lists))
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.rankings", description=__doc__)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(dump(args.dataset))


if __name__ == "__main__":
    main()
