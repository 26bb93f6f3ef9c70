"""The engines bench.scale compares, each a store for the builder and an environment for the MCP server.

- ``milvus-lite``: the embedded default until issue 39, a Milvus Lite database in the server's data folder
  (data/milvus.db, VECTOR_GATEWAY_INDEX_ENGINE=milvus);
- ``milvus-server``: a ``milvus-lite server`` process (scripts/milvus_server.py) that the gateway reaches over
  gRPC (VECTOR_GATEWAY_MILVUS_URI=http://127.0.0.1:PORT), as several processes would share it;
- ``lance``: the embedded default, LanceDB tables in a folder (VECTOR_GATEWAY_INDEX_ENGINE=lance, _LANCE_URI).

Indexes are written by a child process (``python -m bench.scale_engines ENGINE URI ...``: Milvus Lite lets one
process open a database, and the builder's memory is not the server's) through the gateway's own
DocumentWriter with vectors computed earlier (bench.scale_corpus), so every engine gets the same rows.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from scripts.milvus_server import MilvusLiteServer

from .scale_corpus import Corpus, cached, mixed

ENGINES = ("milvus-lite", "milvus-server", "lance")
BASELINE = "milvus-lite"
SCALE_COLLECTION = "scale"
BATCH_DOCS = 1000  # documents per DocumentWriter.write (one registry write, one flush)
NOISE = 0.01  # a replica's vector: the source chunk's plus this much Gaussian noise, renormalised


class Precomputed:
    """The Embedder interface over vectors computed earlier (handed out in order)."""

    def __init__(self, vectors: list[list[float]], dimension: int) -> None:
        self.vectors, self.dimension, self.model_name, self.device = vectors, dimension, "precomputed", "none"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out, self.vectors = self.vectors[: len(texts)], self.vectors[len(texts) :]
        return out

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError


def unavailable(engine: str) -> str | None:
    """Why ``engine`` cannot run here, or None."""
    if engine not in ENGINES:
        return f"unknown engine {engine!r} (known: {', '.join(ENGINES)})"
    if engine != "lance":
        return None
    from vector_gateway.settings import GatewaySettings

    try:
        from vector_gateway.lance import LanceStore  # noqa: F401
    except ImportError as exc:
        return f"vector_gateway.lance.LanceStore cannot be imported ({exc}): the LanceDB engine is not merged yet"
    if "index_engine" not in GatewaySettings.model_fields:
        return "the gateway has no VECTOR_GATEWAY_INDEX_ENGINE setting yet: the server would not use Lance"
    return None


def open_store(engine: str, uri: str) -> Any:
    """The engine's DocumentIndex with the gateway's default settings (what main.create_app builds)."""
    from vector_gateway.settings import GatewaySettings

    settings = GatewaySettings()
    if engine == "lance":
        from vector_gateway.lance import LanceStore

        return LanceStore(uri, analysis=settings.bm25_analysis)
    from vector_gateway.milvus import MilvusStore

    flush = settings.model_copy(update={"milvus_uri": uri}).should_flush
    return MilvusStore(uri, dense_index=settings.dense_index, flush=flush,
                       stop_words=settings.bm25_stop_words, analysis=settings.bm25_analysis)  # fmt: skip


@dataclass
class Served:
    """Where an engine's index lives: the builder's URI, the MCP server's environment, the folder to size."""

    uri: str
    env: dict[str, str]
    disk: Path
    server: MilvusLiteServer | None = field(default=None, repr=False)


@contextlib.contextmanager
def serving(engine: str, folder: Path) -> Iterator[Served]:
    """The engine's index under ``folder``; for milvus-server, a fresh ``milvus-lite server`` meanwhile."""
    if engine == "milvus-lite":
        db = folder / "data" / "milvus.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        yield Served(str(db), {"VECTOR_GATEWAY_INDEX_ENGINE": "milvus"}, db)  # the data folder's milvus.db
    elif engine == "lance":
        lance = folder / "lance"
        env = {"VECTOR_GATEWAY_INDEX_ENGINE": "lance", "VECTOR_GATEWAY_LANCE_URI": str(lance)}
        yield Served(str(lance), env, lance)
    else:
        server = MilvusLiteServer(folder / "milvus-server")
        server.start()
        try:
            yield Served(server.uri, {"VECTOR_GATEWAY_MILVUS_URI": server.uri}, server.workdir / "data", server)
        finally:
            server.stop(signal.SIGTERM)


def disk_mb(path: Path) -> float:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path] if path.exists() else []
    return round(sum(p.stat().st_size for p in files) / 1048576, 1)


# -- the builder (a child process) ------------------------------------------------------------------
def _request(rows: list[dict[str, Any]], source: str, content_hash: str) -> Any:
    from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest

    chunks = [ChunkIn(index=i, text=r["text"], token_count=r["token_count"], heading_path=r["heading_path"])
              for i, r in enumerate(rows)]  # fmt: skip
    return UpsertDocumentRequest(source=source, title=rows[0]["title"], content_hash=content_hash, chunks=chunks)


def _write(store: Any, collection: str, corpus: Corpus, batches: Iterator[tuple[list[Any], np.ndarray]]) -> int:
    from vector_gateway.upsert import DocumentWriter, plan

    if not store.has_collection(collection):
        store.create_collection(collection, corpus.dimension, corpus.model_name)
    written = 0
    for requests, vectors in batches:
        embedder = Precomputed(vectors.tolist(), corpus.dimension)
        DocumentWriter(store, embedder, lambda *_: None).write(collection, plan(collection, requests))
        written += len(vectors)
    return written


def replicas(corpus: Corpus, target: int, have: int, used: list[int]) -> Iterator[tuple[list[Any], np.ndarray]]:
    """Replicas of the corpus (new sources, noisy vectors) in batches until ``target`` chunks are stored, from
    replica ``used[0]``; each one started is appended to ``used``."""
    replica = used[0]
    while have < target:
        used.append(replica)
        rng = np.random.default_rng(replica)
        requests, vectors = [], []
        for rows, matrix in zip(corpus.docs, corpus.vectors, strict=True):
            requests.append(_request(rows, f"scale:{replica}:{rows[0]['source']}", f"{replica:064x}"))
            noisy = matrix + rng.normal(0, NOISE, matrix.shape).astype(np.float32)
            vectors.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
            have += len(rows)
            if len(requests) == BATCH_DOCS or have >= target:
                yield requests, np.concatenate(vectors)
                requests, vectors = [], []
            if have >= target:
                return
        if requests:
            yield requests, np.concatenate(vectors)
        replica += 1


def originals(corpus: Corpus) -> Iterator[tuple[list[Any], np.ndarray]]:
    """The corpus as the pipeline stored it (its own sources: the metrics read corpus ids from them)."""
    for first in range(0, len(corpus.docs), BATCH_DOCS):
        docs = corpus.docs[first : first + BATCH_DOCS]
        requests = [_request(rows, rows[0]["source"], f"{0:064x}") for rows in docs]
        yield requests, np.concatenate(corpus.vectors[first : first + BATCH_DOCS])


def build(engine: str, uri: str, what: str, *args: str) -> dict[str, Any]:
    """``scale TARGET REPLICA [CORPUS]``: replicas of the corpus (mixed: SciFact + dbpedia-5k; or scifact) up to
    TARGET chunks; ``quality DATASET``: the set as is; ``reindex`` (Lance): the vector index the upkeep makes now."""
    started = time.perf_counter()
    if what == "reindex":  # Lance: the vector index the engine's upkeep makes now (an older kind is replaced)
        from vector_gateway.lance import LanceStore

        store = LanceStore(uri, maintain=False)  # no background upkeep racing this one
        before = [i.name for i in store._table(SCALE_COLLECTION).list_indices() if i.columns == ["vector"]]
        store.optimize(SCALE_COLLECTION, keep=timedelta(0))
        after = [i.name for i in store._table(SCALE_COLLECTION).list_indices() if i.columns == ["vector"]]
        store.close()
        return {"before": before, "after": after, "seconds": round(time.perf_counter() - started, 1)}
    store = open_store(engine, uri)
    if what == "scale":
        corpus = mixed() if (args[2] if len(args) > 2 else "scifact") == "mixed" else cached("scifact")
        target, used = int(args[0]), [int(args[1])]
        have = store.count(SCALE_COLLECTION) if store.has_collection(SCALE_COLLECTION) else 0
        written = _write(store, SCALE_COLLECTION, corpus, replicas(corpus, target, have, used))
        collection, next_replica = SCALE_COLLECTION, used[-1] + 1
    else:
        collection = args[0].replace("-", "_")
        written = _write(store, collection, (corpus := cached(args[0])), originals(corpus))
        next_replica = 0
    seconds = time.perf_counter() - started
    upkeep = time.perf_counter()
    if hasattr(store, "optimize"):  # Lance: the upkeep a running server does after writes, before measuring it
        from vector_gateway.records import REGISTRY

        # Old versions go at once (nothing reads the builder's folder): a server removes them a minute later.
        store.optimize(collection, keep=timedelta(0))
        store.optimize(REGISTRY, keep=timedelta(0))
    rows = store.count(collection)
    store.close()
    return {"rows": rows, "written": written, "seconds": round(seconds, 1),
            "rows_per_s": round(written / seconds, 1) if seconds else None, "next_replica": next_replica,
            "upkeep_s": round(time.perf_counter() - upkeep, 1)}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(build(*sys.argv[1:])))
