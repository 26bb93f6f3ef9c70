"""Ingest throughput: chunks/s through the pipeline against the raw model's encode() on the same passages.

Both run in this process, on the same machine: the pipeline (chunker -> gateway: embed + store, batched
across documents), and ``SentenceTransformer.encode`` alone (torch, the baseline) on exactly the passages the
gateway embeds (title + heading path + chunk text), with the same model, device and batch size. The gateway's
own engine (ONNX Runtime on a CPU) is timed alone on the same passages too, beside torch.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from ingestion_mcp.errors import ToolFailure, UpstreamError
from ingestion_mcp.ingest.pipeline import BatchItem, Ingestor
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
        requests = [Ingestor.chunk_request(d.text, chunking) for d in batch]
        chunked = await stack.backend.chunk_batch(requests)
        for doc, result in zip(batch, chunked.results, strict=True):
            texts += [passage_text(doc.title, c.heading_path, c.text) for c in result.chunks]
    return texts


def encode_device() -> str:
    """Where the embedder runs (the gateway picks CUDA when torch sees a GPU)."""
    from vector_gateway.embedder import resolve_device

    return resolve_device(GatewaySettings().embedding_device)


def engine_report(embedder: Embedder) -> dict[str, object]:
    """The engine the gateway embeds with, its ONNX Runtime settings, and the CPU (as lscpu names it)."""
    out: dict[str, object] = {"engine": getattr(embedder, "engine", "custom"), "device": embedder.device}
    out.update(getattr(embedder, "session_settings", {}))
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=True).stdout
        fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
        flags = set(fields.get("Flags", "").split())
        cpu: dict[str, str] = {
            key: fields[key].strip() for key in ("Model name", "CPU(s)", "Thread(s) per core") if key in fields
        }
        cpu["simd"] = " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_bf16") if f in flags)
        out["cpu"] = cpu
    return out


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
    # The baseline is sentence-transformers' torch encode(); the gateway's engine (GatewaySettings(): ONNX Runtime
    # on a CPU) is timed alone beside it, each before and after the pipeline.
    embedders = {"raw_encode": create_embedder(GatewaySettings(embedding_engine="torch")),
                 "raw_engine": create_embedder(GatewaySettings())}  # fmt: skip
    texts = await passages_of(stack, docs, chunking)
    for embedder in embedders.values():
        embedder.embed_documents(texts[:8])  # first-call allocations are not throughput
    before = {name: encode_seconds(embedder, texts) for name, embedder in embedders.items()}
    # The collection exists before the timed run (creating one takes a second that no later ingest pays).
    await ingest(stack, warmup, collection=THROUGHPUT_COLLECTION, chunking=chunking)
    pipeline = await ingest(stack, docs, collection=THROUGHPUT_COLLECTION, chunking=chunking)
    pipeline["chunks_per_s"] = round(pipeline["chunks"] / pipeline["seconds"], 2)
    after = {name: encode_seconds(embedder, texts) for name, embedder in embedders.items()}
    rates = {name: round(len(texts) / ((before[name] + after[name]) / 2), 2) for name in embedders}
    raws = {name: {"chunks": len(texts), "seconds_before": round(before[name], 2),
                   "seconds_after": round(after[name], 2), "device": embedder.device,
                   "engine": getattr(embedder, "engine", "custom"), "chunks_per_s": rates[name]}
            for name, embedder in embedders.items()}  # fmt: skip
    raw = rates["raw_encode"]
    await ingest_files(stack, write_markdown_files(warmup, files_dir / "warmup"), chunking=chunking)
    files = await ingest_files(stack, write_markdown_files(docs, files_dir), chunking=chunking)
    files["ratio"] = round(files["chunks_per_s"] / raw, 3)
    return {
        "documents": len(docs),
        "chunking": chunking,
        "pipeline": pipeline,
        "raw_encode": raws["raw_encode"],
        "raw_engine": raws["raw_engine"],
        "engine": engine_report(embedders["raw_engine"]),
        "ratio": round(pipeline["chunks_per_s"] / raw, 3),
        "engine_over_torch": round(rates["raw_engine"] / raw, 3),
        "files": files,
    }
