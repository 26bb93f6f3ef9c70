"""Search latency: the MCP `search` tool, the gateway's /v1/search, and the raw path, on one collection.

The raw path is what a hand-written client would do: embed the query with the same model in
sentence-transformers (torch), then one pymilvus ``hybrid_search`` (dense + BM25, RRF k=60) on the same Milvus
Lite collection. One query embedded alone is timed on both engines too (the gateway's, ONNX Runtime on a CPU,
and torch). All are interleaved query by query, so load on the machine hits them alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ingestion_contracts.gateway import SearchRequest
from ingestion_mcp.server import build_server
from ingestion_mcp.state import AppState
from mcp import Client
from vector_gateway import lexical
from vector_gateway.embedder import Embedder, create_embedder
from vector_gateway.settings import GatewaySettings

from .pipeline import Stack

TOP_K = 10
OUTPUT_FIELDS = ["chunk_id", "doc_id", "text", "source", "title", "page", "heading_path"]


def summary(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2),
            "mean_ms": round(statistics.fmean(ordered), 2), "n": len(ordered)}  # fmt: skip


class RawPath:
    """Embed + one pymilvus hybrid_search, with no gateway in between."""

    def __init__(self, milvus_uri: str, collection: str, embedder: Embedder) -> None:
        from pymilvus import MilvusClient

        self.client = MilvusClient(milvus_uri)
        self.collection = collection
        self.embedder = embedder
        self.client.load_collection(collection)
        # The BM25 field holds the text as the collection recorded it (stems, or raw words): ask in kind.
        properties = self.client.describe_collection(collection).get("properties") or {}
        self.analysis: lexical.Analysis = lexical.known_analysis(properties.get(lexical.PROPERTY))

    def search(self, query: str) -> list[Any]:
        vector = self.embedder.embed_query(query)
        return self.hybrid(vector, lexical.analyze_query(query, self.analysis) or query)

    def hybrid(self, vector: list[float], text: str) -> list[Any]:
        from pymilvus import AnnSearchRequest, RRFRanker

        dense = AnnSearchRequest([vector], "vector", {"metric_type": "COSINE", "params": {"ef": 64}}, TOP_K)
        sparse = AnnSearchRequest([text], "sparse", {"metric_type": "BM25", "params": {}}, TOP_K)
        return self.client.hybrid_search(self.collection, [dense, sparse], RRFRanker(60), limit=TOP_K,
                                         output_fields=OUTPUT_FIELDS)[0]  # fmt: skip


async def _timed(fn: Callable[[str], Awaitable[Any]], query: str) -> float:
    started = time.perf_counter()
    await fn(query)
    return (time.perf_counter() - started) * 1000


async def measure(stack: Stack, milvus_uri: str, collection: str, queries: list[str]) -> dict[str, Any]:
    torch_embedder, engine = (
        create_embedder(GatewaySettings(embedding_engine="torch")),
        create_embedder(GatewaySettings()),
    )
    raw = RawPath(milvus_uri, collection, torch_embedder)
    state = AppState.create(stack.settings, stack.backend)
    samples: dict[str, list[float]] = {"mcp": [], "gateway_api": [], "raw": [], "embed_engine": [], "embed_torch": []}
    stages: dict[str, list[float]] = {"embedding": [], "search": []}  # as the gateway reports them
    async with Client(build_server(state)) as client:

        async def via_mcp(query: str) -> None:
            answer = await client.call_tool("search", {"query": query, "collection": collection, "top_k": TOP_K})
            if answer.is_error:
                raise RuntimeError(f"MCP search failed: {answer.structured_content}")

        async def via_gateway(query: str) -> None:
            found = await stack.backend.search(SearchRequest(query=query, collections=[collection], top_k=TOP_K))
            stages["embedding"].append(found.embedding_ms)
            stages["search"].append(found.search_ms)

        async def via_raw(query: str) -> None:
            raw.search(query)

        async def embed_engine(query: str) -> None:
            engine.embed_query(query)

        async def embed_torch(query: str) -> None:
            torch_embedder.embed_query(query)

        paths = {"mcp": via_mcp, "gateway_api": via_gateway, "raw": via_raw, "embed_engine": embed_engine,
                 "embed_torch": embed_torch}  # fmt: skip
        for query in queries[:5]:  # warm-up, not measured
            for fn in paths.values():
                await fn(query)
        for query in queries:
            for name, fn in paths.items():
                samples[name].append(await _timed(fn, query))
    summaries = {name: summary(values) for name, values in samples.items() if not name.startswith("embed_")}
    results: dict[str, object] = dict(summaries)
    results["query_embedding"] = {"engine": getattr(engine, "engine", "custom"),
                                  "gateway_engine": summary(samples["embed_engine"]),
                                  "torch": summary(samples["embed_torch"])}  # fmt: skip
    results["mcp_over_raw_p50"] = round(summaries["mcp"]["p50_ms"] / summaries["raw"]["p50_ms"], 3)
    results["gateway_over_raw_p50"] = round(summaries["gateway_api"]["p50_ms"] / summaries["raw"]["p50_ms"], 3)
    # Warm-up answers are not timed: keep the stages of the timed calls only.
    results["gateway_stages_p50_ms"] = {
        name: round(statistics.median(v[-len(queries) :]), 2) for name, v in stages.items()
    }
    results["top_k"] = TOP_K
    results["chunks"] = raw.client.query(collection, filter="", output_fields=["count(*)"])[0]["count(*)"]
    return results
