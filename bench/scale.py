"""How search latency and memory grow: 10k and 100k chunks behind a real vector-gateway process.

Chunks are SciFact's own (text, title, vector) replicated with a little noise on the vector, written with
the gateway's DocumentWriter and precomputed vectors (embedding 100k chunks on a laptop CPU would take
hours and measures nothing new). Then the gateway, docling and chunker run as real processes, queries go
over loopback HTTP, and psutil reads each process's resident memory.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest
from vector_gateway.milvus import MilvusStore
from vector_gateway.upsert import DocumentWriter, plan

from scripts.service_stack import ServiceProcess

from .latency import TOP_K, summary

COLLECTION = "scale"
SOURCE_FIELDS = ["doc_id", "chunk_index", "text", "title", "heading_path", "vector", "token_count"]


class Precomputed:
    """The Embedder interface over vectors computed earlier (handed out in order)."""

    def __init__(self, vectors: list[list[float]], dimension: int) -> None:
        self.vectors, self.dimension, self.model_name, self.device = vectors, dimension, "precomputed", "none"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out, self.vectors = self.vectors[: len(texts)], self.vectors[len(texts) :]
        return out

    def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError


def source_documents(milvus_uri: str, collection: str) -> list[list[dict[str, Any]]]:
    """Every document of the quality run as its list of chunk rows (with vectors)."""
    from pymilvus import MilvusClient

    client = MilvusClient(milvus_uri)
    client.load_collection(collection)  # a reopened database serves nothing until loaded
    docs: dict[str, list[dict[str, Any]]] = {}
    iterator = client.query_iterator(collection, batch_size=4096, filter="", output_fields=SOURCE_FIELDS)
    while batch := iterator.next():
        for row in batch:
            docs.setdefault(row["doc_id"], []).append(row)
    iterator.close()
    return [sorted(rows, key=lambda r: r["chunk_index"]) for rows in docs.values()]


def _request(rows: list[dict[str, Any]], replica: int) -> UpsertDocumentRequest:
    chunks = [ChunkIn(index=i, text=r["text"], token_count=r["token_count"], heading_path=list(r["heading_path"]))
              for i, r in enumerate(rows)]  # fmt: skip
    return UpsertDocumentRequest(source=f"scale:{replica}:{rows[0]['doc_id']}", title=rows[0]["title"],
                                 content_hash=f"{replica:064x}", chunks=chunks)  # fmt: skip


def fill(store: MilvusStore, docs: list[list[dict[str, Any]]], target_chunks: int, start_replica: int) -> int:
    """Add replicas of the documents until the collection holds ``target_chunks``; returns the next replica."""
    rng = np.random.default_rng(start_replica)
    dimension = len(docs[0][0]["vector"])
    if not store.has_collection(COLLECTION):
        store.create_collection(COLLECTION, dimension, "precomputed")
    replica, have = start_replica, store.count(COLLECTION)
    while have < target_chunks:
        batch, vectors = [], []
        for rows in docs:
            batch.append(_request(rows, replica))
            for row in rows:
                noisy = np.asarray(row["vector"]) + rng.normal(0, 0.01, dimension)
                vectors.append((noisy / np.linalg.norm(noisy)).tolist())
            if have + len(vectors) >= target_chunks:
                break
        writer = DocumentWriter(store, Precomputed(vectors, dimension), lambda *_: None)
        writer.write(COLLECTION, plan(COLLECTION, batch))
        have += sum(len(r.chunks) for r in batch)
        replica += 1
    return replica


PREFIXES = {"vector-gateway": "VECTOR_GATEWAY_", "docling-service": "DOCLING_", "chunker-service": "CHUNKER_"}


@contextlib.contextmanager
def running(command: str, env: dict[str, str], log_dir: Path) -> Iterator[ServiceProcess]:
    """One service as a real process on a loopback port (the e2e tests' ServiceProcess), ready, then stopped."""
    service = ServiceProcess(command, command, PREFIXES[command], {**os.environ, **env}, log_dir / f"{command}.log")
    service.start()
    try:
        service.wait_ready(timeout_s=180)
        yield service
    finally:
        service.stop()


def rss_mb(service: ServiceProcess) -> float:
    assert service.process is not None
    return round(psutil.Process(service.process.pid).memory_info().rss / 1048576, 1)


def measure_gateway(db: str, queries: list[str]) -> dict[str, Any]:
    env = {"VECTOR_GATEWAY_MILVUS_URI": db, "VECTOR_GATEWAY_LOG_LEVEL": "WARNING"}
    with (
        running("vector-gateway", env, Path(db).parent) as gateway,
        httpx.Client(base_url=gateway.url, timeout=60) as client,
    ):
        body = {"collections": [COLLECTION], "top_k": TOP_K}
        for query in queries[:5]:
            client.post("/v1/search", json={**body, "query": query}).raise_for_status()
        samples = []
        for query in queries:
            started = time.perf_counter()
            client.post("/v1/search", json={**body, "query": query}).raise_for_status()
            samples.append((time.perf_counter() - started) * 1000)
        chunks = client.get(f"/v1/collections/{COLLECTION}").json()["chunk_count"]
        return {"chunks": chunks, "search": summary(samples), "gateway_rss_mb": rss_mb(gateway)}


def idle_services_rss(log_dir: Path) -> dict[str, float]:
    """docling and chunker after one real request each (their memory does not grow with the index)."""
    out = {}
    for command, path, kwargs in (
        ("chunker-service", "/v1/chunk", {"json": {"text": "Warm-up text for the chunker. " * 40}}),
        ("docling-service", "/v1/convert", {"files": {"file": ("w.md", b"# Warm\n\nup text.\n", "text/markdown")}}),
    ):
        with running(command, {}, log_dir) as service:
            httpx.post(f"{service.url}{path}", timeout=120, **kwargs).raise_for_status()
            out[f"{command.removesuffix('-service')}_rss_mb"] = rss_mb(service)
    return out


def _fill_in_child(db: str, source: Path, size: int, replica: int) -> int:
    """Milvus Lite lets one process own a database: fill it in a child that exits before the gateway starts."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", db, str(source), str(size), str(replica)],
        capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"filling {db} failed: {done.stderr[-2000:]}")
    return int(done.stdout.strip().splitlines()[-1])


def measure(work_dir: Path, source_uri: str, source_collection: str, queries: list[str],
            sizes: tuple[int, ...] = (10_000, 100_000)) -> dict[str, Any]:  # fmt: skip
    docs = source_documents(source_uri, source_collection)
    random.Random(7).shuffle(docs)
    folder = work_dir / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "source.pkl"
    source.write_bytes(pickle.dumps(docs))
    db = str(folder / "milvus.db")
    results: dict[str, Any] = {"sizes": {}, **idle_services_rss(folder)}
    replica = 0
    for size in sizes:
        started = time.perf_counter()
        replica = _fill_in_child(db, source, size, replica)
        fill_s = time.perf_counter() - started
        results["sizes"][str(size)] = {**measure_gateway(db, queries), "fill_seconds": round(fill_s, 1)}
    return results


if __name__ == "__main__":
    db_path, source_path, target, first = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    print(fill(MilvusStore(db_path), pickle.loads(source_path.read_bytes()), target, first))
