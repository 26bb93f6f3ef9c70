"""A benchmark's chunks and their vectors, embedded once and cached, for every engine of bench.scale to reuse.

The chunks come from the collection the real pipeline built for the quality runs (bench.rankings: chunker
preset ``default``, the bundled model, the embedded index in bench/results/tmp/<dataset>/; built there if absent),
read back once and kept as one .npz (vectors float32, the rest as a JSON string: no pickle) under
bench/results/tmp/cache/. Every engine is then written from the same chunks and vectors, so retrieval
differences are the engine's, and 2 cores do not embed a corpus once per engine.

``mixed()`` is both sets as one corpus (SciFact's 13,660 chunks and dbpedia-5k's 5,012): what bench.scale
replicates up to a million chunks, real embeddings with the structure of two unrelated subjects. ``query_vectors``
embeds each set's test queries once with the gateway's own embedder (kept beside), for recall against an exact scan.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .rankings import TMP, build, collection_name, open_index

CACHE = TMP / "cache"
FIELDS = ["doc_id", "source", "title", "chunk_index", "text", "token_count", "heading_path", "vector"]
SETS = ("scifact", "dbpedia-5k")


@dataclass
class Corpus:
    """Chunk rows grouped by document (chunk order kept), their vectors row-aligned, and the model's name."""

    docs: list[list[dict[str, Any]]]
    vectors: list[np.ndarray]  # one (chunks, dimension) matrix per document
    model_name: str

    @property
    def dimension(self) -> int:
        return int(self.vectors[0].shape[1])

    @property
    def chunks(self) -> int:
        return sum(len(rows) for rows in self.docs)


def cached(dataset: str) -> Corpus:
    """The dataset's chunks and vectors, from the cache; filled from the pipeline's collection when missing."""
    path = CACHE / f"{dataset}.npz"
    if not path.is_file():
        _fill_cache(dataset, path)
    with np.load(path) as stored:
        meta = json.loads(str(stored["meta"]))
        vectors = stored["vectors"]
    docs, mats, at = [], [], 0
    for rows in meta["docs"]:
        docs.append(rows)
        mats.append(vectors[at : at + len(rows)])
        at += len(rows)
    return Corpus(docs, mats, meta["model_name"])


def mixed() -> Corpus:
    """SciFact and dbpedia-5k as one corpus (each document keeps its source: "<set>:<corpus id>")."""
    parts = [cached(name) for name in SETS]
    if len({part.model_name for part in parts}) != 1:
        raise SystemExit(f"the cached sets were embedded by different models: {[p.model_name for p in parts]}")
    return Corpus([d for p in parts for d in p.docs], [v for p in parts for v in p.vectors], parts[0].model_name)


def query_vectors(dataset: str) -> tuple[list[str], np.ndarray]:
    """The set's test queries (text) and their vectors from the gateway's embedder (the corpus's precision), cached."""
    from .data import DATASETS, load

    path = CACHE / f"{dataset}-queries.npz"
    texts = list(load(DATASETS[dataset]).queries.values())
    if path.is_file():
        with np.load(path) as stored:
            if json.loads(str(stored["texts"])) == texts:
                return texts, stored["vectors"]
    from vector_gateway.embedder import create_embedder
    from vector_gateway.int8 import precision_of
    from vector_gateway.settings import GatewaySettings

    model = cached(dataset).model_name  # the queries as the corpus was embedded (fp32, or which int8 scheme)
    settings = GatewaySettings(milvus_uri="unused.db", embedding_precision=precision_of(model))
    embedder = create_embedder(settings, stored=[model])
    vectors = np.asarray([embedder.embed_query(text) for text in texts], dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors, texts=np.array(json.dumps(texts)), model=np.array(embedder.model_name))
    return texts, vectors


def _fill_cache(dataset: str, path: Path) -> None:
    name = collection_name(dataset)
    work = TMP / dataset
    asyncio.run(build(dataset))  # the real pipeline, once (embeds the corpus: minutes to tens of minutes on 2 cores)
    store = open_index(work)
    try:
        model = store.describe(name)[1]
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in store.query(name, None, FIELDS):
            grouped.setdefault(row["doc_id"], []).append(row)
    finally:
        store.close()
    docs = [sorted(rows, key=lambda r: r["chunk_index"]) for _, rows in sorted(grouped.items())]
    vectors = np.asarray([row.pop("vector") for rows in docs for row in rows], dtype=np.float32)
    for rows in docs:
        for row in rows:
            row["heading_path"] = list(row["heading_path"] or [])
            row.pop("doc_id")
    meta = {"dataset": dataset, "model_name": model, "docs": docs}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors, meta=np.array(json.dumps(meta)))
