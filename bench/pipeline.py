"""The real services on the embedded default (in-process, Milvus Lite in a data folder, the bundled model)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion_contracts.gateway import SearchMode, SearchRequest
from ingestion_mcp.backend import Backend
from ingestion_mcp.embedded.services import embedded_backend
from ingestion_mcp.errors import ToolFailure, UpstreamError
from ingestion_mcp.ingest.pipeline import BatchItem, Ingestor
from ingestion_mcp.settings import McpSettings
from servicekit import configure_logging
from servicekit.logging import QUIET_LIBRARIES

from .data import Doc, corpus_id
from .metrics import fold_to_documents

SEARCH_DEPTH = 100  # chunks per query (the gateway's top_k ceiling); folded to documents for the metrics


@dataclass
class Stack:
    settings: McpSettings
    backend: Backend
    ingestor: Ingestor


@contextlib.asynccontextmanager
async def open_stack(data_dir: Path) -> AsyncIterator[Stack]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name in ("DOCLING_SERVICE_URL", "CHUNKER_SERVICE_URL", "VECTOR_GATEWAY_URL", "VECTOR_GATEWAY_MILVUS_URI"):
        os.environ.pop(name, None)
    settings = McpSettings(data_dir=data_dir, allowed_roots=[data_dir], request_timeout_s=3600)
    data_dir.mkdir(parents=True, exist_ok=True)
    # The retrieval benchmarks stay where their figures since issue 1 were taken: Milvus Lite (raw pymilvus is the
    # latency baseline) and fp32 vectors. VECTOR_GATEWAY_INDEX_ENGINE=lance / EMBEDDING_PRECISION=auto run them on
    # the defaults (bench.run then skips the raw path); bench.scale --quality compares the engines and
    # bench.experiments.int8 the precisions. Set for this stack only: a test that runs a benchmark in process must
    # not move the processes it starts later off the defaults.
    pinned = {
        "VECTOR_GATEWAY_INDEX_ENGINE": os.environ.get("VECTOR_GATEWAY_INDEX_ENGINE") or "milvus",
        "VECTOR_GATEWAY_EMBEDDING_PRECISION": os.environ.get("VECTOR_GATEWAY_EMBEDDING_PRECISION") or "fp32",
    }
    with environment(**pinned), service_logs(data_dir / "services.log", settings.log_level):
        async with embedded_backend(settings) as backend:
            await model_loaded(backend)
            yield Stack(settings, backend, Ingestor(backend, settings))


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """These variables set while the block runs, then as they were (unset where they were unset)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def model_loaded(backend: Backend, timeout_s: float = 600) -> None:
    """Wait for the embedding model, which loads in the background while the services start."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await backend.embed(["ready?"])
            return
        except UpstreamError as exc:
            if "loading" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


@contextlib.contextmanager
def service_logs(path: Path, level: str) -> Iterator[None]:
    """The services log as their entry points configure them (JSON, ``level``), into ``path``.

    So the figures include what logging costs in a deployment, and the terminal keeps the benchmark's
    progress. Without it the MCP SDK would install its own Rich console handler, which no deployment runs."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, {name: logging.getLogger(name).level for name in QUIET_LIBRARIES}
    with path.open("a", encoding="utf-8") as stream:
        root.handlers = [h for h in root.handlers if not getattr(h, "_servicekit", False)]
        configure_logging(level, stream=stream)
        try:
            yield
        finally:
            root.handlers, root.level = saved[0], saved[1]
            for name, library_level in saved[2].items():
                logging.getLogger(name).setLevel(library_level)


def batch_items(docs: list[Doc]) -> list[BatchItem]:
    return [BatchItem(text=doc.text, name=doc.title, source=doc.source, key=doc.source) for doc in docs]


async def ingest(
    stack: Stack,
    docs: list[Doc],
    *,
    collection: str,
    chunking: str = "default",
    batch_size: int = 256,
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Ingest ``docs`` through chunker and gateway in batches (one chunker call and one upsert each).

    A document the pipeline refuses (e.g. text under the 50 characters ``ingest_text`` asks for) is
    skipped and reported under ``skipped`` with the reason; the run goes on with the others."""
    chunks, skipped = 0, []
    started = time.perf_counter()
    for first in range(0, len(docs), batch_size):
        batch = docs[first : first + batch_size]
        outcomes = await stack.ingestor.ingest_many(batch_items(batch), collection=collection, chunking=chunking)
        for doc, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, ToolFailure):
                skipped.append({"id": doc.doc_id, "reason": outcome.message})
            else:
                chunks += outcome.chunks
        if on_batch:
            on_batch(min(first + batch_size, len(docs)), len(docs))
    if len(skipped) == len(docs) and docs:
        raise RuntimeError(f"every document failed to ingest; first: {skipped[0]['reason']}")
    seconds = time.perf_counter() - started
    return {"documents": len(docs) - len(skipped), "chunks": chunks, "seconds": round(seconds, 2),
            "skipped": skipped}  # fmt: skip


async def ranked_documents(
    stack: Stack, query: str, *, collection: str | list[str], mode: SearchMode, depth: int = SEARCH_DEPTH
) -> list[str]:
    """Corpus ids ranked by their best chunk, through the gateway's search API (one or several collections)."""
    names = [collection] if isinstance(collection, str) else collection
    found = await stack.backend.search(SearchRequest(query=query, collections=names, mode=mode, top_k=depth))
    return fold_to_documents(corpus_id(hit.source) for hit in found.hits)
