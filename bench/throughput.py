"""Ingest throughput: chunks/s through the pipeline against the raw model's encode() on the same passages.

Both run in this process, on the same machine: the pipeline (chunker -> gateway: embed + store, batched
across documents), and ``SentenceTransformer.encode`` alone on exactly the passages the gateway embeds
(title + heading path + chunk text), with the same model, device and batch size.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from ingestion_mcp.errors import ToolFailure, UpstreamError
from ingestion_mcp.pipeline import BatchItem, Converted, Ingestor
from vector_gateway.embedder import Embedder, create_embedder
from vector_gateway.passages import passage_text
from vector_gateway.settings import GatewaySettings

from .data import Doc
from .pipeline import Stack, ingest

THROUGHPUT_COLLECTION, FILES_COLLECTION = "bench_throughput", "bench_files"


async def passages_of(stack: Stack, docs: list[Doc], chunking: str) -> list[str]:
    """The texts the gateway embeds for ``docs`` (asked of the same chunker the pipeline uses)."""
    texts: list[str] = []
    for first in range(0, len(docs), 256):
        batch = docs[first : first + 256]
        # The very requests the pipeline sends for these texts (ingest_many's text path).
        requests = [Ingestor.chunk_request(Converted(markdown=d.text, title=d.title, file_type="md"), chunking)
                    for d in batch]  # fmt: skip
        chunked = await stack.backend.chunk_batch(requests)
        for doc, result in zip(batch, chunked.results, strict=True):
            texts += [passage_text(doc.title, c.heading_path, c.text) for c in result.chunks]
    return texts


def encode_device() -> str:
    """Where the embedder runs (the gateway picks CUDA when torch sees a GPU)."""
    from vector_gateway.embedder import resolve_device

    return resolve_device(GatewaySettings().embedding_device)


def encode_seconds(embedder: Embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return time.perf_counter() - started


def write_markdown_files(docs: list[Doc], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in docs:
        path = folder / f"{doc.doc_id}.md"
        path.write_text(f"# {doc.title}\n\n{doc.text}\n", encoding="utf-8")
        paths.append(path)
    return paths


async def ingest_files(stack: Stack, paths: list[Path], *, chunking: str) -> dict[str, float]:
    """The same documents as Markdown files: docling converts each, then chunker and gateway in one batch."""
    started = time.perf_counter()
    outcomes = await stack.ingestor.ingest_many(
        [BatchItem(file_path=str(p)) for p in paths], collection=FILES_COLLECTION, chunking=chunking
    )
    seconds = time.perf_counter() - started
    failed = [o for o in outcomes if isinstance(o, ToolFailure)]
    if failed:
        raise RuntimeError(f"{len(failed)} files failed to ingest; first: {failed[0].message}")
    chunks = sum(o.chunks for o in outcomes if not isinstance(o, ToolFailure))
    return {"chunks": chunks, "seconds": round(seconds, 2), "chunks_per_s": round(chunks / seconds, 2)}


async def measure(
    stack: Stack, docs: list[Doc], warmup: list[Doc], *, chunking: str, files_dir: Path
) -> dict[str, object]:
    """Raw encode runs before and after the pipeline, and their mean is the baseline: a change of load
    on the machine during the run then weighs on both sides alike."""
    for name in (THROUGHPUT_COLLECTION, FILES_COLLECTION):  # a kept index would skip every document by hash
        with contextlib.suppress(UpstreamError):
            await stack.backend.delete_collection(name)
    embedder = create_embedder(GatewaySettings())
    texts = await passages_of(stack, docs, chunking)
    embedder.embed_documents(texts[:8])  # first-call allocations are not throughput
    raw_before = encode_seconds(embedder, texts)
    # The collection exists before the timed run (creating one takes a second that no later ingest pays).
    await ingest(stack, warmup, collection=THROUGHPUT_COLLECTION, chunking=chunking)
    pipeline = await ingest(stack, docs, collection=THROUGHPUT_COLLECTION, chunking=chunking)
    pipeline["chunks_per_s"] = round(pipeline["chunks"] / pipeline["seconds"], 2)
    raw_after = encode_seconds(embedder, texts)
    seconds = (raw_before + raw_after) / 2
    raw = {"chunks": len(texts), "seconds_before": round(raw_before, 2), "seconds_after": round(raw_after, 2),
           "chunks_per_s": round(len(texts) / seconds, 2), "device": embedder.device}  # fmt: skip
    await ingest_files(stack, write_markdown_files(warmup, files_dir / "warmup"), chunking=chunking)
    files = await ingest_files(stack, write_markdown_files(docs, files_dir), chunking=chunking)
    files["ratio"] = round(files["chunks_per_s"] / raw["chunks_per_s"], 3)
    return {
        "documents": len(docs),
        "chunking": chunking,
        "pipeline": pipeline,
        "raw_encode": raw,
        "ratio": round(pipeline["chunks_per_s"] / raw["chunks_per_s"], 3),
        "files": files,
    }
