"""Measure what the flush policy costs on Milvus Lite.

1. Upsert cost: the same documents written through the gateway's real write path
   (DocumentWriter: insert + registry commit + old-version delete + flush) with a flush after
   every document vs one flush per batch vs no flush.
2. Search latency over unflushed rows vs the same rows after one flush (hybrid, dense, BM25).

Vectors come from a deterministic hash embedder, not the model: embedding costs the same under
every flush policy, and leaving it out keeps the run to a minute on a small machine.

    python services/vector_gateway/scripts/flush_bench.py --docs 300 --chunks 10 --batch 50
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from ingestion_contracts.gateway import ChunkIn, UpsertDocumentRequest
from vector_gateway.fusion import Fusion
from vector_gateway.milvus import MilvusStore
from vector_gateway.search import Query, search
from vector_gateway.upsert import DocumentWriter, plan


def vocabulary(size: int = 5000, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(size)]


WORDS = vocabulary()
# Zipf-like word frequencies, as in real text: a few words everywhere, most words rare.
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(WORDS))]


class HashEmbedder:
    dimension, model_name, device = 384, "hash-384", "cpu"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        rng = random.Random(hashlib.sha256(text.encode()).digest())
        vector = [rng.gauss(0, 1) for _ in range(self.dimension)]
        norm = sum(v * v for v in vector) ** 0.5
        return [v / norm for v in vector]


def make_documents(count: int, chunks: int, seed: int = 7) -> list[UpsertDocumentRequest]:
    rng = random.Random(seed)
    documents = []
    for d in range(count):
        texts = [" ".join(rng.choices(WORDS, WEIGHTS, k=150)) for _ in range(chunks)]
        documents.append(
            UpsertDocumentRequest(
                source=f"bench/{d}.md",
                title=f"Document {d}",
                content_hash=hashlib.sha256("".join(texts).encode()).hexdigest(),
                chunks=[ChunkIn(index=i, text=t, token_count=150) for i, t in enumerate(texts)],
            )
        )
    return documents


def write(
    db: Path, name: str, documents: list[UpsertDocumentRequest], batch: int, flush: bool
) -> tuple[float, MilvusStore]:
    store = MilvusStore(str(db), flush=flush)
    store.create_collection(name, HashEmbedder.dimension, HashEmbedder.model_name)
    writer = DocumentWriter(store, HashEmbedder(), lambda _stage, _seconds: None)
    started = time.perf_counter()
    for first in range(0, len(documents), batch):
        writer.write(name, plan(name, documents[first : first + batch]))
    return time.perf_counter() - started, store


def search_latency(store: MilvusStore, name: str, queries: list[str]) -> dict[str, float]:
    embedder, result = HashEmbedder(), {}
    for mode in ("hybrid", "semantic", "keyword"):
        timings = []
        for query in queries:
            vector = embedder.embed_query(query) if mode != "keyword" else None
            started = time.perf_counter()
            search(store, [name], Query(mode, vector, query, 10, None), fusion=Fusion(), candidates=20)
            timings.append((time.perf_counter() - started) * 1000)
        result[f"{mode}_p50_ms"] = round(statistics.median(timings), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=10, help="chunks per document")
    parser.add_argument("--batch", type=int, default=50, help="documents per batch upsert")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    documents = make_documents(args.docs, args.chunks)
    rng = random.Random(1)
    queries = [" ".join(rng.choices(WORDS, WEIGHTS, k=4)) for _ in range(args.queries)]
    report: dict[str, object] = {"chunks": args.docs * args.chunks, "documents": args.docs}
    with tempfile.TemporaryDirectory() as tmp:
        for label, batch, flush in [
            ("flush_per_document", 1, True),
            (f"flush_per_batch_of_{args.batch}", args.batch, True),
            ("no_flush_per_document", 1, False),
        ]:
            seconds, store = write(Path(tmp) / f"{label}.db", "bench", documents, batch, flush)
            report[f"upsert_{label}_s"] = round(seconds, 2)
            if not flush:
                report["search_unflushed"] = search_latency(store, "bench", queries)
                started = time.perf_counter()
                store.client.flush("bench")
                report["flush_once_s"] = round(time.perf_counter() - started, 2)
                report["search_flushed"] = search_latency(store, "bench", queries)
            store.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
