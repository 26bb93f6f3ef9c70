"""What each Milvus call of a hybrid search costs, on the collection a `make bench` run left in its work folder.

    python -m bench.search_costs [--work-dir bench/results/tmp/run] [--queries 100]

Times the calls the gateway makes for one search (the two rankings at several depths, the registry lookup for
the returned documents or for every candidate, the fetch of the winners' fields) beside the raw path's single
``hybrid_search``, interleaved query by query so load on the machine hits them alike; then what embedding one
query costs on each engine (the gateway's, ONNX Runtime on a CPU, and sentence-transformers' torch, which the
raw path of bench/latency.py uses). The figures behind the latency section of bench/TUNING.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vector_gateway import lexical
from vector_gateway.embedder import create_embedder
from vector_gateway.fusion import Fusion
from vector_gateway.milvus import MilvusStore
from vector_gateway.search import CANDIDATE_FIELDS, live_versions
from vector_gateway.settings import GatewaySettings

from .data import load
from .latency import TOP_K, RawPath
from .run import QUALITY_COLLECTION

Call = Callable[[int], Any]


def calls(store: MilvusStore, raw: RawPath, vectors: list[list[float]], texts: list[str]) -> dict[str, Call]:
    name = QUALITY_COLLECTION

    def ranking(mode: str, depth: int) -> Call:
        return lambda i: store.search(name, mode=mode, vector=vectors[i], text=texts[i], limit=depth, where=None,
                                      fields=CANDIDATE_FIELDS)  # fmt: skip

    rankings = [(ranking("semantic", 20)(i), ranking("keyword", 20)(i)) for i in range(len(texts))]
    candidates = [dense + sparse for dense, sparse in rankings]
    winners = [fused_top(dense, sparse) for dense, sparse in rankings]
    out: dict[str, Call] = {f"{mode} ranking, {depth} deep": ranking(mode, depth)
                            for mode in ("semantic", "keyword") for depth in (10, 20, 30)}  # fmt: skip
    out["registry: the 10 returned hits' documents"] = lambda i: live_versions(
        store, name, {e["doc_id"] for e in winners[i]}
    )
    out["registry: every candidate's document"] = lambda i: live_versions(
        store, name, {e["doc_id"] for _, e in candidates[i]}
    )
    out["fetch the 10 winners' fields"] = lambda i: store.fetch(name, [e["chunk_id"] for e in winners[i]])
    out["a bare Milvus call (list_collections)"] = lambda i: store.client.list_collections()
    out["raw: one hybrid_search, 10 deep (no embedding)"] = lambda i: raw.hybrid(vectors[i], texts[i])
    return out


def fused_top(dense: list[tuple[float, dict[str, Any]]], sparse: list[tuple[float, dict[str, Any]]]) -> list[dict]:
    """The entities a top_k hybrid search returns (before the liveness check), as the gateway fuses them."""
    entities = {e["chunk_id"]: e for _, e in (*dense, *sparse)}
    fused = Fusion().fuse([(e["chunk_id"], s) for s, e in dense], [(e["chunk_id"], s) for s, e in sparse])
    return [entities[key] for key, _ in fused[:TOP_K]]


def measure(work_dir: Path, queries: int) -> dict[str, float]:
    store = MilvusStore(str(work_dir / "milvus.db"))
    store.ensure_loaded(QUALITY_COLLECTION)
    embedder = create_embedder(GatewaySettings())
    # The same Lite database from the same process: both clients reach the one server it runs.
    raw = RawPath(str(work_dir / "milvus.db"), QUALITY_COLLECTION, embedder)
    texts = list(load().queries.values())[:queries]
    vectors = [embedder.embed_query(text) for text in texts]
    analysed = [lexical.analyze_query(text, store.analysis_of(QUALITY_COLLECTION)) or text for text in texts]
    timed = calls(store, raw, vectors, analysed)
    samples: dict[str, list[float]] = {label: [] for label in timed}
    for i in range(len(texts)):
        for label, call in timed.items():
            started = time.perf_counter()
            call(i)
            samples[label].append((time.perf_counter() - started) * 1000)
    return {label: round(statistics.median(values), 2) for label, values in samples.items()}


def embedding_costs(queries: int) -> dict[str, float]:
    """p50 ms of one query embedded, per engine, interleaved."""
    gateway, torch = create_embedder(GatewaySettings()), create_embedder(GatewaySettings(embedding_engine="torch"))
    engines = {f"embed one query: the gateway's engine ({getattr(gateway, 'engine', 'custom')})": gateway,
               "embed one query: sentence-transformers (torch)": torch}  # fmt: skip
    texts = list(load().queries.values())[:queries]
    samples: dict[str, list[float]] = {label: [] for label in engines}
    for text in [*texts[:3], *texts]:  # the first three warm up
        for label, embedder in engines.items():
            started = time.perf_counter()
            embedder.embed_query(text)
            samples[label].append((time.perf_counter() - started) * 1000)
    return {label: round(statistics.median(values[3:]), 2) for label, values in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.search_costs", description=__doc__)
    parser.add_argument("--work-dir", type=Path, default=Path(__file__).resolve().parent / "results" / "tmp" / "run")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print("| call | p50 ms |\n|---|---|")
    for label, p50 in {**measure(args.work_dir, args.queries), **embedding_costs(args.queries)}.items():
        print(f"| {label} | {p50:.2f} |")


if __name__ == "__main__":
    main()
