"""The inputs bench.tune scores every variant on, computed once: each chunk's parts and vector, each query's vector.

    python -m bench.rankings --dataset scifact      # builds the index once (real pipeline; ~35 min on 2 cores)
    python -m bench.tune_cache --dataset scifact    # -> bench/results/tmp/tune-scifact.npz (+ .json)

Reads the index bench.rankings built in bench/results/tmp/<dataset>/ (chunker preset ``default``, the bundled
all-MiniLM-L6-v2 in fp32, Milvus Lite) and writes every chunk's id, document, title, heading path, text, stored BM25
text and vector, and the vector of every query of every split (SciFact: test and train; dbpedia-5k: its 40 judged
ones) and of bench.offtopic's off-topic queries, embedded by the gateway's own embedder. With them a variant's
dense ranking is an exact scan (a matrix product) and its BM25 ranking is computed in bench.tune_bm25 with any k1,
b or field weights: seconds per variant, no re-ingest, no re-embedding.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .data import DATASETS, corpus_id, load
from .rankings import TMP, collection_name, open_index

FIELDS = ["chunk_id", "source", "title", "heading_path", "text", "search_text", "vector"]
SPLITS = {"scifact": ("test", "train"), "dbpedia-5k": ("test",)}


def cache_paths(dataset: str, root: Path | None = None) -> tuple[Path, Path]:
    """Where the cache of ``dataset`` is: bench/results/tmp/, or ``root`` (another checkout's, bench.tune_chunking)."""
    folder = root or TMP
    return folder / f"tune-{dataset}.npz", folder / f"tune-{dataset}.json"


def chunk_rows(dataset: str) -> list[dict[str, Any]]:
    work = TMP / dataset
    if not (work / "milvus.db").exists():
        raise SystemExit(f"No index in {work}: run `python -m bench.rankings --dataset {dataset}` first.")
    store = open_index(work)
    rows = store.query(collection_name(dataset), None, FIELDS, None)
    return sorted(rows, key=lambda row: row["chunk_id"])


def queries_of(dataset: str) -> dict[str, dict[str, str]]:
    """split -> {query id: text}, every split the set has, and the off-topic queries of bench.offtopic_sets:
    "offtopic" its tuning half (bench.offtopic's list), "offtopic_test" its test half, written apart from it;
    "nonsense" and "nonsense_test" its made-up words, the same halves."""
    from .offtopic_sets import offtopic_sets

    splits = {split: load(DATASETS[dataset], split).queries for split in SPLITS[dataset]}
    halves = {"offtopic": "tune", "offtopic_test": "test"}
    off = {name: offtopic_sets(part)["everyday"] for name, part in halves.items()}
    off |= {
        f"nonsense{name.removeprefix('offtopic')}": offtopic_sets(part)["nonsense"] for name, part in halves.items()
    }
    return splits | {name: {f"{name}{i}": text for i, text in enumerate(texts)} for name, texts in off.items()}


def export(dataset: str) -> Path:
    from vector_gateway.embedder import create_embedder
    from vector_gateway.settings import GatewaySettings

    from .pipeline import environment

    rows = chunk_rows(dataset)
    splits = queries_of(dataset)
    texts = sorted({text for queries in splits.values() for text in queries.values()})
    # The precision the index was built with (bench.pipeline pins fp32): int8 query vectors would move the cosines.
    with environment(VECTOR_GATEWAY_EMBEDDING_PRECISION="fp32"):
        embedder = create_embedder(GatewaySettings())
        vectors = np.array([embedder.embed_query(text) for text in texts], dtype=np.float32)
    arrays, meta = cache_paths(dataset)
    np.savez(arrays, chunks=np.array([row["vector"] for row in rows], dtype=np.float32), queries=vectors)
    parts = ("chunk_id", "title", "heading_path", "text", "search_text")
    meta.write_text(json.dumps({
        "chunks": {part: [row[part] for row in rows] for part in parts}
        | {"doc": [corpus_id(row["source"]) for row in rows]},
        "query_texts": texts, "splits": splits,
    }))  # fmt: skip
    return arrays


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.tune_cache", description=__doc__)
    parser.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="default: both")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for dataset in args.dataset or sorted(DATASETS, reverse=True):
        print(export(dataset))


if __name__ == "__main__":
    main()
