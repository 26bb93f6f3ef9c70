"""A benchmark's chunks and their vectors, embedded once and cached, for every engine of bench.scale to reuse.

The chunks come from the collection the real pipeline built for the quality runs (bench.rankings: chunker
preset ``default``, the bundled model, Milvus Lite in bench/results/tmp/<dataset>/; built there if absent),
read back once and kept as one .npz (vectors float32, the rest as a JSON string: no pickle) under
bench/results/tmp/cache/. Every engine is then written from the same chunks and vectors, so retrieval
differences are the engine's, and 2 cores do not embed a corpus once per engine.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .rankings import TMP, build, collection_name

CACHE = TMP / "cache"
FIELDS = ["doc_id", "source", "title", "chunk_index", "text", "token_count", "heading_path", "vector"]


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


def _fill_cache(dataset: str, path: Path) -> None:
    from pymilvus import MilvusClient

    name = collection_name(dataset)
    db = TMP / dataset / "milvus.db"
    if not (db / "collections" / name).is_dir():
        asyncio.run(build(dataset))  # the real pipeline, once (embeds the corpus: tens of minutes on 2 cores)
    client = MilvusClient(str(db))
    try:
        model = (client.describe_collection(name).get("properties") or {}).get("embedding_model", "")
        client.load_collection(name)
        grouped: dict[str, list[dict[str, Any]]] = {}
        iterator = client.query_iterator(name, batch_size=4096, filter="", output_fields=FIELDS)
        while batch := iterator.next():
            for row in batch:
                grouped.setdefault(row["doc_id"], []).append(row)
        iterator.close()
    finally:
        client.close()
    docs = [sorted(rows, key=lambda r: r["chunk_index"]) for _, rows in sorted(grouped.items())]
    vectors = np.asarray([row.pop("vector") for rows in docs for row in rows], dtype=np.float32)
    for rows in docs:
        for row in rows:
            row["heading_path"] = list(row["heading_path"] or [])
            row.pop("doc_id")
    meta = {"dataset": dataset, "model_name": model, "docs": docs}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors, meta=np.array(json.dumps(meta)))
